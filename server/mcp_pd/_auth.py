"""Bearer-token authentication for `mcp-pd serve --bearer-tokens FILE`, on the `mcp` SDK's own middleware.

A deployment behind a real authorization server gives the SDK its `TokenVerifier` (`streamable_http_app(auth=...,
token_verifier=...)`); this module is the small static variant the CLI needs for tests, demos and closed
deployments: a JSON file maps each token to its principal. Either way the SDK puts the verified `AccessToken` on
the request, and `_sessions.principal_key` keys grants on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["StaticTokenVerifier", "require_bearer"]


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
