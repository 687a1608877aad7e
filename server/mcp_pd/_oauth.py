"""An OAuth 2.1 resource server's token checks (`--oauth-issuer`): the issuer's metadata discovered (RFC 8414, else
OpenID Connect discovery), JWT access tokens validated against its JWKS with PyJWT, opaque ones through RFC 7662
introspection when a client for it is configured.

PyJWT does every JOSE check (signature, `alg` against our allow-list, `iss`, `aud`, `exp`/`nbf` with leeway);
nothing here parses or verifies a signature by hand. What is ours is the policy around it: only asymmetric
algorithms, a key's declared `alg` must match the token's, `aud` must name this server's resource URL (RFC 8707;
RFC 9068 for JWT access tokens), keys refetched when a token names an unknown `kid` (at most once per
`refresh_interval`, so a stream of forged `kid`s cannot hammer the issuer), and every refusal carries a reason the
client can act on (never the token itself). The result is the SDK's `AccessToken`: its (client id, issuer,
subject) is the principal grants are kept under (`_sessions.principal_key`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

from ._auth import TokenRefusal

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULT_ALGORITHMS",
    "IssuerMetadata",
    "OAuthSettings",
    "OAuthVerifier",
    "discover_issuer",
    "scopes_named",
]

logger = logging.getLogger("mcp_pd.oauth")

# What a resource server may accept: signatures made with the issuer's private key. HS* would let anyone holding
# the (public) verification key sign, and `none` signs nothing.
ASYMMETRIC_ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
DEFAULT_ALGORITHMS: Final = ("RS256", "PS256", "ES256", "EdDSA")
_MAX_DOCUMENT: Final = 1024 * 1024  # metadata, JWKS and introspection answers: larger ones are refused
_MAX_KEYS: Final = 100  # a JWKS holding more is cut here (real ones hold a handful)


@dataclass(frozen=True)
class OAuthSettings:
    """How tokens are judged. `resource`: this server's URL as clients reach it (the `aud` tokens must carry);
    `scopes`: the ones every request needs; `leeway`: seconds of clock skew allowed on `exp`/`nbf`;
    `introspection_client`: (client id, secret) for RFC 7662, needed only for opaque tokens."""

    issuer: str
    resource: str
    scopes: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway: float = 30.0
    introspection_client: tuple[str, str] | None = None
    refresh_interval: float = 5.0
    max_key_age: float = 3600.0
    timeout: float = 10.0

    def __post_init__(self) -> None:
        for name, url in (("--oauth-issuer", self.issuer), ("--oauth-resource", self.resource)):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
                raise ValueError(f"{name} {url!r} is not an http(s) URL without a fragment")
            if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
                raise ValueError(f"{name} {url!r}: OAuth 2.1 needs https beyond loopback")
        bad = [a for a in self.algorithms if a not in ASYMMETRIC_ALGORITHMS]
        if bad or not self.algorithms:
            raise ValueError(
                f"--oauth-algorithm {', '.join(bad) or '(none)'}: accepted are the asymmetric algorithms "
                f"{', '.join(sorted(ASYMMETRIC_ALGORITHMS))}; HS* and none would let others mint tokens"
            )
        if not 0 <= self.leeway <= 300:
            raise ValueError(f"--oauth-leeway {self.leeway:g}: give 0 to 300 seconds (clock skew, not a grace period)")
        bad_scopes = [s for s in self.scopes if not s or any(c.isspace() or c in '"\\' for c in s)]
        if bad_scopes:
            raise ValueError(f"--oauth-scope {bad_scopes[0]!r}: a scope is one token without spaces or quotes")

    @property
    def audiences(self) -> list[str]:
        """The `aud` values naming this server: the resource URL, with or without a trailing slash."""
        base = self.resource.removesuffix("/") if urlsplit(self.resource).path not in ("", "/") else self.resource
        return list(dict.fromkeys([self.resource, base, base + "/"]))


@dataclass(frozen=True)
class IssuerMetadata:
    """What the issuer's discovery document says (only what a resource server uses)."""

    issuer: str
    jwks_uri: str | None
    introspection_endpoint: str | None
    scopes_supported: tuple[str, ...] = ()
    source: str = ""


def _well_known(issuer: str) -> list[str]:
    """Where the issuer's metadata may live: RFC 8414 (path inserted after the host), then OpenID Connect
    Discovery (path appended), then the OIDC document with the path inserted (as the MCP spec lists them)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(p: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, p, "", ""))

    return list(
        dict.fromkeys(
            [
                at(f"/.well-known/oauth-authorization-server{path}"),
                at(f"{path}/.well-known/openid-configuration"),
                at(f"/.well-known/openid-configuration{path}"),
            ]
        )
    )


async def _get_json(http: httpx2.AsyncClient, url: str, **kwargs: Any) -> tuple[int, Any]:
    """(status, parsed JSON or None), reading at most `_MAX_DOCUMENT` bytes; OSError-like failures raise."""
    method = "POST" if "data" in kwargs else "GET"
    async with http.stream(method, url, **kwargs) as response:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > _MAX_DOCUMENT:
                raise ValueError(f"{url} answered more than {_MAX_DOCUMENT} bytes")
            chunks.append(chunk)
    try:
        return response.status_code, json.loads(b"".join(chunks))
    except ValueError:
        return response.status_code, None


async def discover_issuer(issuer: str, *, timeout: float = 10.0) -> IssuerMetadata:
    """The issuer's metadata; ValueError saying where it looked and what was wrong."""
    problems: list[str] = []
    async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as http:
        for url in _well_known(issuer):
            try:
                status, doc = await _get_json(http, url, headers={"Accept": "application/json"})
            except (httpx2.HTTPError, ValueError) as exc:
                problems.append(f"{url}: {exc or type(exc).__name__}")
                continue
            if status != 200 or not isinstance(doc, dict):
                problems.append(f"{url}: HTTP {status}" + ("" if isinstance(doc, dict) else ", not a JSON object"))
                continue
            # RFC 8414 3.3 / OIDC Discovery 4.3: the document must name exactly the issuer asked for.
            if doc.get("issuer") != issuer:
                raise ValueError(
                    f"--oauth-issuer {issuer}: {url} names the issuer {doc.get('issuer')!r}; give exactly that "
                    "value (no trailing slash added or dropped)"
                )
            jwks, introspection = doc.get("jwks_uri"), doc.get("introspection_endpoint")
            scopes = doc.get("scopes_supported")
            return IssuerMetadata(
                issuer=issuer,
                jwks_uri=jwks if isinstance(jwks, str) else None,
                introspection_endpoint=introspection if isinstance(introspection, str) else None,
                scopes_supported=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
                source=url,
            )
    raise ValueError(f"--oauth-issuer {issuer}: no authorization server metadata found ({'; '.join(problems)})")


@dataclass
class _KeySet:
    """The issuer's signing keys by `kid`, fetched again when older than `max_age` or when a token names a `kid`
    it lacks. Fetches are at least `refresh_interval` apart: a request naming an unknown `kid` sooner waits for
    the next one (shared by every request waiting then), so a stream of forged `kid`s costs the issuer one fetch per
    interval, and a key rotated in at the issuer is picked up within one interval. A failed fetch keeps the keys
    it had."""

    uri: str
    refresh_interval: float
    max_age: float
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    fetched_at: float = float("-inf")
    failure: str | None = None
    fetches: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def lookup(self, http: httpx2.AsyncClient, kid: str | None) -> list[dict[str, Any]]:
        found = self._find(kid)
        if found and time.monotonic() - self.fetched_at <= self.max_age:
            return found
        asked = time.monotonic()
        async with self.lock:
            if self.fetched_at < asked:  # else a fetch began after this request asked: its answer counts
                wait = self.fetched_at + self.refresh_interval - time.monotonic()
                if wait > 0:
                    await anyio.sleep(wait)
                await self._fetch(http)
        return self._find(kid)

    def _find(self, kid: str | None) -> list[dict[str, Any]]:
        if kid is not None:
            key = self.keys.get(kid)
            return [key] if key is not None else []
        return list(self.keys.values())

    async def _fetch(self, http: httpx2.AsyncClient) -> None:
        self.fetched_at = time.monotonic()
        self.fetches += 1
        try:
            status, doc = await _get_json(http, self.uri, headers={"Accept": "application/json"})
        except (httpx2.HTTPError, ValueError) as exc:
            self.failure = f"the issuer's keys ({self.uri}) could not be fetched: {exc or type(exc).__name__}"
            logger.warning("%s; keeping the %d key(s) fetched before", self.failure, len(self.keys))
            return
        if status != 200 or not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
            self.failure = f"the issuer's keys ({self.uri}) answered HTTP {status} without a JWKS"
            logger.warning("%s; keeping the %d key(s) fetched before", self.failure, len(self.keys))
            return
        keys: dict[str, dict[str, Any]] = {}
        for index, jwk in enumerate(doc["keys"][:_MAX_KEYS]):
            # Only public signing keys: a symmetric (`oct`) key or an encryption key never verifies a token here.
            if (
                not isinstance(jwk, dict)
                or jwk.get("kty") not in ("RSA", "EC", "OKP")
                or jwk.get("use", "sig") != "sig"
            ):
                continue
            if any(name in jwk for name in ("d", "p", "q", "k")):
                continue  # a private key published by mistake is not used
            kid = jwk.get("kid")
            keys[kid if isinstance(kid, str) else f"(no kid #{index})"] = jwk
        self.keys, self.failure = keys, None
        logger.info("fetched %d signing key(s) from %s", len(keys), self.uri)


class OAuthVerifier:
    """The SDK's `TokenVerifier` for one issuer and one resource, with `check` giving the reason of a refusal."""

    def __init__(self, settings: OAuthSettings, metadata: IssuerMetadata) -> None:
        self.settings = settings
        self.metadata = metadata
        if metadata.jwks_uri is None and (metadata.introspection_endpoint is None or not settings.introspection_client):
            raise ValueError(
                f"--oauth-issuer {settings.issuer}: its metadata has no jwks_uri, so tokens can only be introspected: "
                "give --oauth-client-id (and its secret) for its introspection endpoint"
            )
        if settings.introspection_client and metadata.introspection_endpoint is None:
            raise ValueError(
                f"--oauth-client-id given, but {settings.issuer}'s metadata has no introspection_endpoint (RFC 7662)"
            )
        self._keys = (
            _KeySet(metadata.jwks_uri, settings.refresh_interval, settings.max_key_age) if metadata.jwks_uri else None
        )
        self._http: httpx2.AsyncClient | None = None

    def _client(self) -> httpx2.AsyncClient:
        # Made on first use: a client's connection pool belongs to the event loop that serves.
        if self._http is None:
            self._http = httpx2.AsyncClient(timeout=self.settings.timeout, follow_redirects=False)
        return self._http

    @property
    def key_fetches(self) -> int:
        """How often the issuer's keys were fetched (for the operator and the tests)."""
        return 0 if self._keys is None else self._keys.fetches

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def verify_token(self, token: str) -> AccessToken | None:
        verdict = await self.check(token)
        return verdict if isinstance(verdict, AccessToken) else None

    async def check(self, token: str) -> AccessToken | TokenRefusal:
        """The token's `AccessToken`, or why it is refused (words for the client; never the token)."""
        if token.count(".") == 2:
            return await self._check_jwt(token)
        if self.settings.introspection_client is not None:
            return await self._introspect(token)
        return TokenRefusal("the token is not a JWT, and this server has no introspection client for opaque tokens")

    async def _check_jwt(self, token: str) -> AccessToken | TokenRefusal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            return TokenRefusal(f"malformed token: {exc}")
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.settings.algorithms:
            return TokenRefusal(
                f"token signed with alg {alg!r}; this server accepts {', '.join(self.settings.algorithms)}"
            )
        if self._keys is None:
            return TokenRefusal("the issuer publishes no keys (jwks_uri); only introspected tokens are accepted")
        candidates = await self._keys.lookup(self._client(), kid if isinstance(kid, str) else None)
        if not candidates:
            why = self._keys.failure or f"no key with kid {kid!r} among the issuer's {len(self._keys.keys)}"
            return TokenRefusal(f"unknown signing key: {why}")
        last: TokenRefusal = TokenRefusal("no key of the issuer verifies the token's signature")
        for jwk in candidates:
            declared = jwk.get("alg")
            if isinstance(declared, str) and declared != alg:
                last = TokenRefusal(f"token alg {alg} does not match its key's alg {declared}")
                continue
            try:
                key = jwt.PyJWK(jwk, algorithm=alg)
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key=key,
                    algorithms=[alg],
                    audience=self.settings.audiences,
                    issuer=self.metadata.issuer,
                    leeway=self.settings.leeway,
                    options={"require": ["exp", "iss", "aud"]},
                )
            except jwt.InvalidSignatureError:
                continue
            except (jwt.PyJWTError, ValueError) as exc:
                return TokenRefusal(_jwt_reason(exc, self.settings))
            return self._access_token(token, claims)
        return last

    async def _introspect(self, token: str) -> AccessToken | TokenRefusal:
        assert self.settings.introspection_client is not None
        assert self.metadata.introspection_endpoint is not None
        client_id, secret = self.settings.introspection_client
        try:
            status, doc = await _get_json(
                self._client(),
                self.metadata.introspection_endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(client_id, secret),
                headers={"Accept": "application/json"},
            )
        except (httpx2.HTTPError, ValueError) as exc:
            logger.warning("token introspection failed: %s", exc or type(exc).__name__)
            return TokenRefusal("the issuer's introspection endpoint could not be reached; try again later")
        if status != 200 or not isinstance(doc, dict):
            logger.warning("token introspection answered HTTP %s (check --oauth-client-id and its secret)", status)
            return TokenRefusal("the issuer's introspection endpoint refused this server; try again later")
        if doc.get("active") is not True:
            return TokenRefusal("the token is not active (expired, revoked or unknown to the issuer)")
        if doc.get("token_type") not in (None, "Bearer", "bearer", "access_token"):
            return TokenRefusal(f"the token is a {doc.get('token_type')}, not an access token")
        if "iss" in doc and doc["iss"] != self.metadata.issuer:
            return TokenRefusal(f"the token was issued by {doc['iss']!r}, not {self.metadata.issuer}")
        audiences = doc.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences if isinstance(audiences, list) else []
        if not set(audiences) & set(self.settings.audiences):
            return TokenRefusal(_audience_reason(self.settings))
        now = time.time()
        if isinstance(doc.get("exp"), int | float) and doc["exp"] + self.settings.leeway < now:
            return TokenRefusal("the token has expired")
        if isinstance(doc.get("nbf"), int | float) and doc["nbf"] - self.settings.leeway > now:
            return TokenRefusal("the token is not valid yet (nbf)")
        return self._access_token(token, {"iss": self.metadata.issuer, **doc})

    def _access_token(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        audiences = claims.get("aud")
        named = [audiences] if isinstance(audiences, str) else list(audiences or [])
        resource = next((a for a in named if a in self.settings.audiences), self.settings.resource)
        client = claims.get("client_id") or claims.get("azp")
        subject = claims.get("sub")
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=client if isinstance(client, str) else "",
            scopes=_scopes(claims),
            # The SDK's bearer backend refuses a token past `expires_at`: the leeway is ours, so it is added here.
            expires_at=int(exp + self.settings.leeway) if isinstance(exp, int | float) else None,
            resource=resource,
            subject=subject if isinstance(subject, str) else None,
            claims=dict(claims),
        )

    def describe(self) -> str:
        """One start-up line."""
        s = self.settings
        ways = []
        if self._keys is not None:
            ways.append(f"JWTs ({', '.join(s.algorithms)}) against {self.metadata.jwks_uri}")
        if s.introspection_client is not None:
            ways.append(f"opaque tokens through {self.metadata.introspection_endpoint}")
        scopes = f"; every request needs scope {' '.join(s.scopes)}" if s.scopes else ""
        return (
            f"OAuth access tokens from {s.issuer} required, for the resource {s.resource} (aud): "
            f"{' and '.join(ways)}; leeway {s.leeway:g} s{scopes}; grants kept per principal"
        )


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    # `scope` is RFC 9068's space-separated string; some issuers send `scp` as a list instead.
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list):
            return [s for s in value if isinstance(s, str)]
    return []


def _audience_reason(settings: OAuthSettings) -> str:
    return (
        f"the token was not issued for this server: its audience (aud) must be {settings.resource}; ask the "
        f"authorization server for a token with resource={settings.resource} (RFC 8707)"
    )


def _jwt_reason(exc: Exception, settings: OAuthSettings) -> str:
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "the token has expired"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "the token is not valid yet (nbf or iat in the future)"
    if isinstance(exc, jwt.InvalidAudienceError):
        return _audience_reason(settings)
    if isinstance(exc, jwt.InvalidIssuerError):
        return f"the token was not issued by {settings.issuer}"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the token lacks the {exc.claim!r} claim"
    return f"invalid token: {exc}"


def scopes_named(values: Sequence[str]) -> tuple[str, ...]:
    """`--oauth-scope` values (each may hold several, space-separated) as one tuple without repeats."""
    return tuple(dict.fromkeys(s for value in values for s in value.split()))
