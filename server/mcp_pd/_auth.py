"""Who may reach `/mcp`: bearer tokens on the `mcp` SDK's own auth middleware, in two kinds.

`--bearer-tokens FILE` is the small static variant for tests, demos and closed deployments: a JSON file maps each
token to its principal. `--oauth-issuer` makes the server an OAuth 2.1 resource server (`_oauth.py` judges the
tokens): `ClientAuth.oauth` adds the RFC 9728 protected-resource metadata (the SDK's route) and the challenges a
client's OAuth flow starts from (401 `invalid_token` with `resource_metadata`, 403 `insufficient_scope` naming the
scope). Either way the SDK puts the verified `AccessToken` on the request, and `_sessions.principal_key` keys
grants on it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, AuthenticationBackend
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ClientAuth", "ExplainingVerifier", "StaticTokenVerifier", "TokenRefusal", "require_bearer"]


class StaticTokenVerifier:
    """Tokens known in advance: `{"<token>": {"client_id": "...", "subject": "...", "scopes": [...]}}`.

    `client_id` is required; `subject` (the user) and `issuer` are optional, and grants are keyed on
    (client_id, issuer, subject): give each user a subject, or all users of one client share grants.
    """

    def __init__(self, tokens: dict[str, AccessToken]) -> None:
        self._tokens = tokens

    @classmethod
    def from_file(cls, path: Path) -> StaticTokenVerifier:
        """Read the JSON file; ValueError saying what is wrong with it."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read bearer tokens from {path}: {exc}") from None
        return cls.from_mapping(data, source=str(path))

    @classmethod
    def from_mapping(cls, data: object, *, source: str = "bearer tokens") -> StaticTokenVerifier:
        """`{token: {"client_id", "subject"?, "issuer"?, "scopes"?}}`; ValueError saying what is wrong."""
        if not isinstance(data, dict) or not data:
            raise ValueError(f"{source}: expected a JSON object mapping tokens to {{'client_id': ..., 'subject': ...}}")
        tokens: dict[str, AccessToken] = {}
        for token, principal in data.items():
            if not isinstance(principal, dict) or not isinstance(principal.get("client_id"), str):
                raise ValueError(f"{source}: token {token[:4]}...: expected an object with a string 'client_id'")
            if len(token) < 16:
                raise ValueError(f"{source}: token {token[:4]}... is shorter than 16 characters: too easy to guess")
            claims: dict[str, Any] = {"iss": principal["issuer"]} if isinstance(principal.get("issuer"), str) else {}
            tokens[token] = AccessToken(
                token=token,
                client_id=principal["client_id"],
                scopes=[str(s) for s in principal.get("scopes", [])],
                subject=principal.get("subject") if isinstance(principal.get("subject"), str) else None,
                claims=claims or None,
            )
        return cls(tokens)

    async def verify_token(self, token: str) -> AccessToken | None:
        return self._tokens.get(token)

    def __len__(self) -> int:
        return len(self._tokens)


def require_bearer(app: Any, verifier: StaticTokenVerifier) -> ASGIApp:
    """`app` behind the SDK's bearer middleware: a request without a valid token gets 401, an authenticated one
    carries its `AccessToken` (as `streamable_http_app(auth=..., token_verifier=...)` would set up)."""
    required = RequireAuthMiddleware(app, required_scopes=[])

    async def only_http_needs_a_token(scope: Scope, receive: Receive, send: Send) -> None:
        # The lifespan (which starts the session manager) carries no user and must reach the app.
        await (required if scope["type"] == "http" else app)(scope, receive, send)

    return AuthenticationMiddleware(AuthContextMiddleware(only_http_needs_a_token), backend=BearerAuthBackend(verifier))


@dataclass(frozen=True)
class TokenRefusal:
    """Why a presented token was refused, in words for its client (never the token itself)."""

    reason: str


class ExplainingVerifier(TokenVerifier, Protocol):
    """A `TokenVerifier` that can also say why it refuses a token."""

    async def check(self, token: str) -> AccessToken | TokenRefusal: ...


_INVALID_REQUEST = -32600  # JSON-RPC, as the SDK's own HTTP refusals
_STATUS = {401: "Unauthorized", 403: "Forbidden"}
_REFUSAL_KEY = "mcp_pd.token_refusal"  # where the backend leaves the reason for the challenge, in the ASGI scope


class _ExplainingBackend(AuthenticationBackend):
    """The SDK's `BearerAuthBackend`, keeping the verifier's reason for a refused token in the request's scope so
    the 401 can say it (expired, another audience, unknown key, ...)."""

    def __init__(self, verifier: ExplainingVerifier) -> None:
        self.verifier = verifier

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        header = conn.headers.get("authorization")
        if header is None:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            conn.scope[_REFUSAL_KEY] = "the Authorization header must be 'Bearer <access token>'"
            return None
        verdict = await self.verifier.check(token.strip())
        if isinstance(verdict, TokenRefusal):
            conn.scope[_REFUSAL_KEY] = verdict.reason
            return None
        if verdict.expires_at is not None and verdict.expires_at < int(time.time()):
            conn.scope[_REFUSAL_KEY] = "the token has expired"
            return None
        return AuthCredentials(verdict.scopes), AuthenticatedUser(verdict)


_UNSAFE = re.compile(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]")  # RFC 6750 3: what an error_description may hold


def _quoted(value: str) -> str:
    return '"' + _UNSAFE.sub("?", value) + '"'


@dataclass(frozen=True)
class _Challenge:
    """`/mcp` behind a token: 401 with `WWW-Authenticate: Bearer resource_metadata=...` (and `invalid_token` with
    the reason when a token was refused), 403 `insufficient_scope` naming the scopes a token lacks (RFC 6750 3.1;
    the MCP authorization spec's scope challenge). The SDK's `RequireAuthMiddleware` says neither the reason nor
    the `scope` attribute, which the SDK's own client reads to ask for the right scopes."""

    app: ASGIApp
    required_scopes: tuple[str, ...]
    metadata_url: str
    listeners: list[Callable[[int, str | None, str, str | None], None]]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # the lifespan, which starts the session manager
            return
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            reason = scope.get(_REFUSAL_KEY)
            if reason is None:
                await self._refuse(
                    scope, send, 401, None, "this server needs an OAuth access token (see resource_metadata)"
                )
            else:
                await self._refuse(scope, send, 401, "invalid_token", str(reason))
            return
        missing = [s for s in self.required_scopes if s not in user.scopes]
        if missing:
            why = f"the token lacks the scope {' '.join(missing)} this server requires"
            await self._refuse(scope, send, 403, "insufficient_scope", why)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, error: str | None, description: str) -> None:
        client = scope.get("client")
        for listener in self.listeners:  # the audit trail: (status, error, why, the peer's address)
            listener(status, error, description, str(client[0]) if client else None)
        parts = [f"resource_metadata={_quoted(self.metadata_url)}"]
        if self.required_scopes:
            parts.append(f"scope={_quoted(' '.join(self.required_scopes))}")
        if error is not None:
            parts[:0] = [f"error={_quoted(error)}", f"error_description={_quoted(description)}"]
        # A JSON-RPC error, so an MCP client shows the reason (the SDK's client surfaces a JSON-RPC body of a non-2xx
        # answer, and only a generic message otherwise); OAuth clients read the header, and the RFC 6750 fields are
        # in `data` too.
        oauth = {"error": error or "unauthorized", "error_description": description}
        refusal = {"code": _INVALID_REQUEST, "message": f"{_STATUS[status]}: {description}", "data": oauth}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": refusal}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class ClientAuth:
    """How `/mcp` authenticates its clients, for `_http.http_server`: the wrapper around the MCP app, the public
    endpoints it adds (RFC 9728 metadata) and the start-up line."""

    wrap: Callable[[ASGIApp], ASGIApp]
    verifier: TokenVerifier
    description: str
    public: Mapping[str, ASGIApp] = field(default_factory=dict)
    # Told of each request refused for its token: (HTTP status, OAuth error or None, why, peer address or None).
    refusals: list[Callable[[int, str | None, str, str | None], None]] = field(default_factory=list)

    @classmethod
    def static(cls, verifier: StaticTokenVerifier) -> ClientAuth:
        """`--bearer-tokens`: the tokens of the file, nothing published."""
        return cls(
            wrap=lambda app: require_bearer(app, verifier),
            verifier=verifier,
            description=f"bearer tokens required ({len(verifier)} known); grants kept per principal",
        )

    @classmethod
    def oauth(
        cls,
        verifier: ExplainingVerifier,
        *,
        resource: str,
        issuer: str,
        required_scopes: Sequence[str] = (),
        description: str,
    ) -> ClientAuth:
        """An OAuth 2.1 resource server for `resource`, whose tokens `issuer` mints: the SDK's RFC 9728 route at
        `/.well-known/oauth-protected-resource<resource path>`, and the challenges pointing to it."""
        # Validated by the model (which keeps a path-less issuer without a trailing slash: RFC 8414 compares issuers
        # as exact strings), served by the SDK's own handler at the RFC 9728 path, with its CORS.
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource,
                "authorization_servers": [issuer],
                "scopes_supported": list(required_scopes) or None,
                "resource_name": "mcp-pd",
            }
        )
        metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))
        handler = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        routes = [Route(urlsplit(metadata_url).path, endpoint=handler, methods=["GET", "OPTIONS"])]
        scopes = tuple(required_scopes)

        refusals: list[Callable[[int, str | None, str, str | None], None]] = []

        def wrap(app: ASGIApp) -> ASGIApp:
            challenged = _Challenge(app, scopes, metadata_url, refusals)
            return AuthenticationMiddleware(AuthContextMiddleware(challenged), backend=_ExplainingBackend(verifier))

        return cls(
            wrap=wrap,
            verifier=verifier,
            description=description,
            public={route.path: route for route in routes},
            refusals=refusals,
        )
