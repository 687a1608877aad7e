"""`mcp-pd serve --oauth-issuer`: an OAuth 2.1 resource server in front of a real OpenID provider (oidc-provider,
tests/oauth/idp.mjs). Tokens come from real grants (client credentials; authorization code with PKCE, driven
here; the official `mcp` client's own OAuth flow); the forged and unfit ones are refused with the right status
and challenge, and the principals they name keep their grants apart."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth.idptest import GATEWAY_CLIENT, REDIRECT, IdP, running_idp
from pdtest import free_port, http_command

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
TOOL = "list_projects"
SCOPE = "mcp:tools"
SERVE = [sys.executable, "-m", "mcp_pd", "serve", "--transport", "http", "--no-watch"]


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdP]:
    provider = IdP(tmp_path_factory.mktemp("idp"))
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture(scope="module")
def server(idp: IdP) -> Iterator[str]:
    """The reference server behind the IdP: scope mcp:tools required, 1 s of clock leeway."""
    argv = [*SERVE, "--oauth-issuer", idp.issuer, "--oauth-scope", SCOPE, "--oauth-leeway", "1", "--port"]
    with http_command(argv) as url:
        yield url


@asynccontextmanager
async def client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as session,  # type: ignore[arg-type]
    ):
        yield session


def code(result: Any) -> str | None:
    return str(result.structured_content["error"]["code"]) if result.is_error else None


async def initialize(url: str, token: str | None, **headers: str) -> httpx2.Response:
    """A raw `initialize` POST, as any client's first request."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers=sent)


def challenge(answer: httpx2.Response) -> dict[str, str]:
    """The attributes of a `WWW-Authenticate: Bearer ...` challenge."""
    header = answer.headers.get("www-authenticate", "")
    assert header.startswith("Bearer "), header
    return {k: v for k, v in (part.strip().split("=", 1) for part in header[7:].split('",')) for v in [v.strip('"')]}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims: dict[str, Any], **header: Any) -> str:
    head = _b64(json.dumps({"typ": "at+jwt", **header}).encode())
    return f"{head}.{_b64(json.dumps(claims).encode())}."


def hs256_with_public_key(claims: dict[str, Any], idp: IdP) -> str:
    """The key-confusion attack: HS256, keyed with the issuer's public key (which anyone can fetch)."""
    public = RSAAlgorithm.from_jwk(json.dumps(idp.public_jwk()))
    assert isinstance(public, rsa.RSAPublicKey)
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    head = _b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": idp.keys[0]["kid"]}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


@pytest.mark.req("PDX-OAUTH-01", "PDX-OAUTH-07")
async def test_tokens_from_real_grants_are_accepted_and_each_person_keeps_their_own_grants(
    idp: IdP, server: str
) -> None:
    alice = await idp.authorization_code("alice", resource=server, scope=SCOPE)
    bob = await idp.authorization_code("bob", resource=server, scope=SCOPE)
    service = await idp.client_credentials(resource=server, scope=SCOPE)
    async with client(server, alice) as session:
        assert session.protocol_version == "2026-07-28"  # an identity: no need to steer it to the handshake
        assert code(await session.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
        await session.read_resource(f"{URI}?tools={TOOL}")
        assert not (await session.call_tool(TOOL, {})).is_error
    async with client(server, alice, mode="legacy") as again:  # another connection, the same person
        assert not (await again.call_tool(TOOL, {})).is_error
    for other in (bob, service):  # another person of the same client, and another client
        async with client(server, other) as session:
            assert code(await session.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PDX-OAUTH-02")
async def test_the_protected_resource_metadata_and_the_challenge_point_to_the_issuer(idp: IdP, server: str) -> None:
    answer = await initialize(server, None)
    assert answer.status_code == 401
    said = challenge(answer)
    assert "error" not in said  # no token was sent: nothing to call invalid (RFC 6750 3.1)
    assert said["scope"] == SCOPE
    metadata_url = said["resource_metadata"]
    assert metadata_url == server.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    async with httpx2.AsyncClient(timeout=30) as http:
        metadata = (await http.get(metadata_url)).json()
    assert metadata["resource"] == server
    assert metadata["authorization_servers"] == [idp.issuer]
    assert metadata["scopes_supported"] == [SCOPE]


@pytest.mark.req("PDX-OAUTH-03", "PDX-OAUTH-04")
async def test_unfit_and_forged_tokens_are_refused_with_the_reason(idp: IdP, server: str) -> None:
    good = await idp.client_credentials(resource=server, scope=SCOPE)
    claims = jwt.decode(good, options={"verify_signature": False})
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cases = {
        "another audience": (await idp.client_credentials(resource="http://127.0.0.1:9/mcp", scope=SCOPE), "audience"),
        "alg none": (unsigned(claims, alg="none", kid=idp.keys[0]["kid"]), "alg 'none'"),
        "HS256 keyed with the public key": (hs256_with_public_key(claims, idp), "alg 'HS256'"),
        "signed by another key under the issuer's kid": (
            jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": idp.keys[0]["kid"], "typ": "at+jwt"}),
            "verifies the token's signature",
        ),
        "another issuer's claims": (
            jwt.encode({**claims, "iss": "http://127.0.0.1:9"}, attacker, algorithm="RS256", headers={"kid": "x"}),
            "unknown signing key",
        ),
        "not a token": ("not-a-jwt-and-no-introspection", "not a JWT"),
    }
    for what, (token, reason) in cases.items():
        answer = await initialize(server, token)
        assert answer.status_code == 401, what
        said = challenge(answer)
        assert said["error"] == "invalid_token", what
        assert reason in said["error_description"], (what, said)
        assert said["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
        assert token not in answer.text and token not in answer.headers["www-authenticate"]
    short = await idp.client_credentials(resource=server, scope=f"{SCOPE} mcp:short")  # lives 1 s
    assert (await initialize(server, short)).status_code == 200  # fine while it lives
    await anyio.sleep(1 + 1 + 1.5)  # its 1 s of life, the server's 1 s of leeway, and a margin
    answer = await initialize(server, short)
    assert answer.status_code == 401 and challenge(answer)["error_description"] == "the token has expired"
    answer = await initialize(server, None, Authorization=f"Basic {good}")
    assert answer.status_code == 401 and "Bearer" in challenge(answer)["error_description"]


@pytest.mark.req("PDX-OAUTH-05")
async def test_a_token_without_the_required_scope_gets_403_naming_it(idp: IdP, server: str) -> None:
    token = await idp.client_credentials(resource=server, scope="mcp:admin")
    answer = await initialize(server, token)
    assert answer.status_code == 403
    said = challenge(answer)
    assert said["error"] == "insufficient_scope" and said["scope"] == SCOPE
    assert SCOPE in said["error_description"]


@pytest.mark.req("PDX-OAUTH-06")
async def test_keys_rotated_at_the_issuer_are_picked_up_without_a_restart(tmp_path: Path) -> None:
    async with running_idp(tmp_path) as idp:
        argv = [*SERVE, "--oauth-issuer", idp.issuer, "--port"]
        with http_command(argv) as url:
            before = await idp.client_credentials(resource=url)
            assert (await initialize(url, before)).status_code == 200
            idp.rotate(keep_old=False)  # a new key signs; the old one is withdrawn
            after = await idp.client_credentials(resource=url)
            assert jwt.get_unverified_header(after)["kid"] != jwt.get_unverified_header(before)["kid"]
            assert (await initialize(url, after)).status_code == 200  # unknown kid: the keys are fetched again
            answer = await initialize(url, before)  # signed by the withdrawn key: refused now
            assert answer.status_code == 401 and "unknown signing key" in challenge(answer)["error_description"]


@pytest.mark.req("PDX-OAUTH-06")
async def test_forged_key_ids_cost_the_issuer_one_fetch_per_interval(idp: IdP) -> None:
    from mcp_pd._oauth import OAuthSettings, OAuthVerifier, discover_issuer

    resource = "http://127.0.0.1:9/mcp"
    settings = OAuthSettings(issuer=idp.issuer, resource=resource, refresh_interval=2)
    verifier = OAuthVerifier(settings, await discover_issuer(idp.issuer))
    good = await idp.client_credentials(resource=resource)
    assert isinstance(await verifier.check(good), AccessToken)
    fetched = verifier.key_fetches
    claims = jwt.decode(good, options={"verify_signature": False})
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    verdicts: list[object] = []

    async def forge(n: int) -> None:  # each names a kid the issuer never had
        forged = jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": f"forged-{n}"})
        verdicts.append(await verifier.check(forged))

    async with anyio.create_task_group() as tg:
        for n in range(200):
            tg.start_soon(forge, n)
    assert len(verdicts) == 200 and not any(isinstance(v, AccessToken) for v in verdicts)
    assert verifier.key_fetches - fetched <= 2, verifier.key_fetches - fetched  # not 200
    assert isinstance(await verifier.check(good), AccessToken)  # a known kid never waits for a fetch
    await verifier.aclose()


@pytest.mark.req("PDX-OAUTH-08")
async def test_opaque_tokens_are_introspected(tmp_path: Path) -> None:
    async with running_idp(tmp_path, opaque=True) as idp:
        secret = tmp_path / "secret"
        secret.write_text(GATEWAY_CLIENT[1] + "\n")
        argv = [*SERVE, "--oauth-issuer", idp.issuer, "--oauth-scope", SCOPE, "--oauth-client-id", GATEWAY_CLIENT[0]]
        with http_command([*argv, "--oauth-client-secret-file", str(secret), "--port"]) as url:
            token = await idp.client_credentials(resource=url, scope=SCOPE)
            assert token.count(".") != 2  # opaque indeed
            async with client(url, token) as session:
                await session.read_resource(f"{URI}?tools={TOOL}")
                assert not (await session.call_tool(TOOL, {})).is_error
            elsewhere = await idp.client_credentials(resource="http://127.0.0.1:9/mcp", scope=SCOPE)
            answer = await initialize(url, elsewhere)
            assert answer.status_code == 401 and "audience" in challenge(answer)["error_description"]
            answer = await initialize(url, "made-up-opaque-token-0123456789")
            assert answer.status_code == 401 and "not active" in challenge(answer)["error_description"]


class _Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.req("PDX-OAUTH-02", "PDX-OAUTH-07")
async def test_the_official_clients_oauth_flow_discovers_the_issuer_and_gets_in(idp: IdP, server: str) -> None:
    back: dict[str, str] = {}

    async def browser(authorization_url: str) -> None:  # the user's browser: alice logs in and consents
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as http:
            back.update(await idp.login(http, authorization_url, "alice"))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

    storage = _Memory()
    auth = OAuthClientProvider(
        server_url=server,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            client_name="mcp-pd test client",
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(server, http_client=http), cache=None) as session,  # type: ignore[arg-type]
    ):
        await session.read_resource(f"{URI}?tools={TOOL}")
        assert not (await session.call_tool(TOOL, {})).is_error
    assert storage.tokens is not None and storage.client is not None  # registered itself (RFC 7591), got a token
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["sub"] == "alice" and claims["aud"] == server and SCOPE in claims["scope"].split()


@pytest.mark.req("PDX-OAUTH-09")
@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--oauth-algorithm", "HS256"], "HS* and none"),
        (["--oauth-issuer", "http://127.0.0.1:9"], "no authorization server metadata found"),
        (["--oauth-scope", SCOPE], "--oauth-scope needs --oauth-issuer"),
        (["--host", "0.0.0.0", "--allowed-host", "mcp.example.com"], "give --oauth-resource"),
        (["--oauth-client-id", "mcp-gateway"], "go together"),
    ],
)
def test_bad_oauth_settings_stop_the_start_with_the_reason(idp: IdP, extra: list[str], says: str) -> None:
    issuer = [] if "--oauth-scope" in extra else ["--oauth-issuer", idp.issuer]
    command = [*SERVE, *issuer, *extra, "--port", str(free_port())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert says in done.stderr, done.stderr


@pytest.mark.req("PDX-OAUTH-09")
def test_an_issuer_named_differently_by_its_metadata_is_refused(idp: IdP) -> None:
    command = [*SERVE, "--oauth-issuer", idp.issuer + "/", "--port", str(free_port())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "give exactly that value" in done.stderr, done.stderr


@pytest.mark.req("PDX-OAUTH-03")
async def test_a_token_from_the_issuer_does_not_open_the_operator_endpoints(idp: IdP, server: str) -> None:
    token = await idp.client_credentials(resource=server, scope=SCOPE)
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(server.replace("/mcp", "/metrics"), headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403 and "their tokens do not open it" in answer.text
