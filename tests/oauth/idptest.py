"""A real OpenID provider for the OAuth tests: the npm `oidc-provider` package (pinned, installed once into a cache
folder like the gateway's npm servers), started by `idp.mjs` on a free loopback port, and real grants against it.

Users, clients and scopes are listed in idp.mjs. Keys are generated here (RSA, per run), so a test can rotate
them: the provider restarts on the same port with a new signing key first and the old one still published.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from pdtest import _wait_for_port, free_port, stop_process

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "idp.mjs"
NPM_DIR = Path(os.environ.get("MCP_PD_OAUTH_NPM_CACHE") or HERE / ".npm")
PINNED = ("oidc-provider", "9.13.3")
REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: the tests read the code off the redirect
SERVICE = ("team-service", "team-service-secret-0123456789")  # the confidential client
PUBLIC_CLIENT = "team-cli"  # the public one (PKCE)
GATEWAY_CLIENT = ("mcp-gateway", "mcp-gateway-secret-0123456789")  # the resource server's, for introspection
USERS = {"alice": "alice-password", "bob": "bob-password"}


def _installed() -> bool:
    package, version = PINNED
    try:
        manifest = json.loads((NPM_DIR / "node_modules" / package / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("version") == version)


def node_modules() -> Path:
    """The folder holding the pinned oidc-provider, installed with npm first if needed."""
    if not _installed():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("the OAuth tests need node 20+ and npm on PATH (to install oidc-provider)")
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        with open(NPM_DIR / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test runs install once
            if not _installed():
                package, version = PINNED
                (NPM_DIR / "package.json").write_text(json.dumps({"private": True, "dependencies": {package: version}}))
                done = subprocess.run(
                    [npm, "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund", "--loglevel=error"],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"npm install of oidc-provider failed:\n{done.stderr[-3000:]}")
    return NPM_DIR / "node_modules"


def signing_key(kid: str) -> dict[str, Any]:
    """A fresh RSA private key as a JWK."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class IdP:
    """One oidc-provider process; `rotate()` restarts it on the same port with a new signing key in front."""

    def __init__(self, directory: Path, *, opaque: bool = False) -> None:
        self.directory = directory
        self.opaque = opaque
        self.port = free_port()
        self.keys = [signing_key("key-1")]
        self.log = directory / f"idp-{self.port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        keys = self.directory / f"idp-{self.port}-keys.json"
        keys.write_text(json.dumps({"keys": self.keys}))
        argv = ["node", str(SCRIPT), str(node_modules()), str(self.port), str(keys)]
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                [*argv, *(["--opaque"] if self.opaque else [])], stdout=log, stderr=subprocess.PIPE
            )
        _wait_for_port(self.port, self._proc, timeout=60)

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None

    def rotate(self, *, keep_old: bool = True) -> None:
        """A new signing key, published first (the provider signs with it); the old ones stay unless told."""
        self.stop()
        self.keys = [signing_key(f"key-{len(self.keys) + 1}"), *(self.keys if keep_old else [])]
        self.start()

    def public_jwk(self) -> dict[str, Any]:
        """The current signing key's public half, as the JWKS publishes it."""
        return {k: v for k, v in self.keys[0].items() if k not in ("d", "p", "q", "dp", "dq", "qi")}

    async def client_credentials(
        self, *, resource: str | None, scope: str = "mcp:tools", client: tuple[str, str] = SERVICE
    ) -> str:
        """An access token for the confidential client (RFC 6749 4.4), for `resource` (RFC 8707)."""
        form = {"grant_type": "client_credentials", "scope": scope}
        if resource is not None:
            form["resource"] = resource
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(f"{self.issuer}/token", data=form, auth=client)
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token

    async def login(self, http: httpx2.AsyncClient, authorization_url: str, user: str) -> dict[str, str]:
        """Drive a browser's part of the authorization code flow: log `user` in, consent, and return the query of
        the redirect back to the client (code and state)."""
        url = authorization_url
        for _ in range(12):
            answer = await http.get(url) if not url.startswith("POST ") else None
            assert answer is not None
            if answer.is_redirect:
                location = urljoin(url, answer.headers["location"])
                if location.startswith(REDIRECT):
                    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
                url = location
                continue
            assert answer.status_code == 200, f"{url}: {answer.status_code} {answer.text}"
            prompt = answer.json()["prompt"]
            if prompt == "login":
                posted = await http.post(f"{url}/login", data={"username": user, "password": USERS[user]})
            else:
                posted = await http.post(f"{url}/confirm")
            assert posted.is_redirect, f"{prompt}: {posted.status_code} {posted.text}"
            url = urljoin(url, posted.headers["location"])
        raise AssertionError(f"the authorization flow did not come back to {REDIRECT}")

    async def authorization_code(
        self, user: str, *, resource: str, scope: str = "mcp:tools", client_id: str = PUBLIC_CLIENT
    ) -> str:
        """An access token for `user` through the public client: authorization code with PKCE (RFC 7636)."""
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "scope": f"openid {scope}",
            "resource": resource,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as http:
            back = await self.login(http, f"{self.issuer}/auth?{urlencode(query)}", user)
            assert back.get("state") == state, back
            answer = await http.post(
                f"{self.issuer}/token",
                data={
                    "grant_type": "authorization_code",
                    "code": back["code"],
                    "redirect_uri": REDIRECT,
                    "code_verifier": verifier,
                    "client_id": client_id,
                    "resource": resource,
                },
            )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token


@asynccontextmanager
async def running_idp(directory: Path, *, opaque: bool = False) -> AsyncIterator[IdP]:
    idp = IdP(directory, opaque=opaque)
    idp.start()
    try:
        yield idp
    finally:
        idp.stop()
