"""Which session a request belongs to, and which client sent it, in each transport and protocol era (spec 5.2;
spec/sessions.md).

The one place that reads the SDK's connection objects and its authenticated principal. `resolve` gives the key
grants are kept under (the operator's hook, then the principal, then the transport's session); `client` says
which client a request comes from (the transport's session, then the hook, then the principal, else that request
alone), for what a server holds per client beyond grants (the gateway's upstream sessions, roots, questions and
logs). Both register callbacks for the end of a session; this module knows nothing about what is granted.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, principal_components
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = [
    "ClientId",
    "SessionKeyHook",
    "SessionPolicy",
    "SessionResolver",
    "SessionlessPolicy",
    "access_token",
    "client_address",
    "connection",
    "is_http",
    "principal_key",
]

logger = logging.getLogger("mcp_pd.sessions")

SessionKeyHook = Callable[[ServerRequestContext[Any, Any]], str | None]
SessionlessPolicy = Literal["downgrade", "reject"]


@dataclass(frozen=True)
class SessionPolicy:
    """How requests without a session identity are treated (spec/sessions.md)."""

    sessionless: SessionlessPolicy = "downgrade"
    session_key: SessionKeyHook | None = None
    principal_keys: bool = True


@dataclass(frozen=True, slots=True)
class ClientId:
    """Which client a request comes from.

    `key` names the client for as long as it lasts: a handshake session (`conn:`, `http:`, `stream:`), the
    operator's hook (`custom:`) or an authenticated principal (`principal:`). An anonymous request without a
    session is a client for that request alone (`request:`, `lasting` False): it never inherits what another
    request left, and `bucket` (its HTTP peer) is what bounds per client apply to for such requests.
    """

    key: str
    lasting: bool = True
    bucket: str = ""

    @property
    def limit_key(self) -> str:
        """What per-client bounds count against: the client, or for a request alone its peer's bucket."""
        return self.key if self.lasting else self.bucket


def connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The SDK's per-client Connection behind `ctx` (None when the SDK does not expose one): the one place that
    reaches for it, for the resolver here, change announcements and the gateway."""
    return _connection(ctx)


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK exposes the per-client Connection to handlers only through the session object.
    # Guarded so an SDK change degrades to "no identity" (an explicit error), never to shared state.
    return getattr(ctx.session, "_connection", None)


def is_http(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request came over Streamable HTTP (the transport attaches the HTTP request)."""
    return ctx.request is not None


def client_address(ctx: ServerRequestContext[Any, Any]) -> str:
    """A bucket for a request without a session: its HTTP peer (never used to authorize anything)."""
    client = getattr(ctx.request, "client", None)
    host = getattr(client, "host", None)
    return f"address:{host}" if host else "(no session)"


def _access_token(ctx: ServerRequestContext[Any, Any]) -> AccessToken | None:
    # The HTTP request's own authenticated user first (set by the SDK's bearer middleware on every request),
    # then the SDK's context variable (other transports that authenticate).
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if isinstance(user, AuthenticatedUser):
        return user.access_token
    return get_access_token()


def access_token(ctx: ServerRequestContext[Any, Any]) -> AccessToken | None:
    """The SDK's verified token of the request (None when it was not authenticated), for who-did-what records."""
    return _access_token(ctx)


def principal_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """`principal:["client","issuer","subject"]` for a request the SDK authenticated, else None.

    The same (client id, issuer, subject) triple the SDK uses to bind a Streamable HTTP session to its
    credential: two users of one OAuth client are distinct whenever the token verifier supplies a subject.
    """
    token = _access_token(ctx)
    if token is None:
        return None
    return "principal:" + json.dumps(list(principal_components(token)), separators=(",", ":"), ensure_ascii=False)


class _SessionEnd:
    """An exit callback for one session: a slotted object rather than `exit_stack.callback(fn, key)`,
    whose closure and wrapper cost ~760 bytes per session (all session tracking is now ~230;
    benchmarks/README.md)."""

    __slots__ = ("ident", "resolver")

    def __init__(self, resolver: SessionResolver, ident: str) -> None:
        self.resolver = resolver
        self.ident = ident

    def __call__(self, *exc_details: object) -> None:
        # Returns None, so an exception unwinding the session is never suppressed.
        self.resolver._ended(self.ident)


class SessionResolver:
    """Maps a request to a session key, and tells `on_end(key)` when that session is over."""

    def __init__(self, policy: SessionPolicy, on_end: Callable[[str], None]) -> None:
        self.policy = policy
        self._on_end = on_end
        # Told of every session (client) that ends, after `on_end`: what others hold per client is let go.
        self.listeners: list[Callable[[str], None]] = []
        # transport identity -> session key. Connection keys name this process and a counter, never an id():
        # grants kept in a shared store (Redis) outlive the process and its addresses, and a reused address
        # must never inherit another connection's grants.
        self._tracked: dict[str, str] = {}
        self._process = secrets.token_hex(6)
        self._counter = itertools.count(1)

    def resolve(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The session key of `ctx`, or None when the request carries no session identity.

        In order: the operator's `session_key` hook, the authenticated principal, the transport's session.
        """
        if self.policy.session_key is not None:
            custom = self.policy.session_key(ctx)
            if custom is not None:
                return f"custom:{custom}"
        if self.policy.principal_keys:
            principal = principal_key(ctx)
            if principal is not None:
                # No end signal: a principal's grants end by idle expiry (spec/sessions.md).
                return principal
        return self._transport_key(ctx, _connection(ctx))

    def client(self, ctx: ServerRequestContext[Any, Any]) -> ClientId:
        """Which client `ctx` comes from: its transport's session (a handshake connection, an `Mcp-Session-Id`, a
        2026-07-28 pipe), else the operator's `session_key` hook, else its authenticated principal, else the
        request alone (never shared with another request, whatever both leave unsaid)."""
        key = self._transport_key(ctx, _connection(ctx))
        if key is None and self.policy.session_key is not None:
            custom = self.policy.session_key(ctx)
            key = None if custom is None else f"custom:{custom}"
        if key is None:
            key = principal_key(ctx)
        if key is not None:
            return ClientId(key)
        return ClientId(f"request:{self._process}.{next(self._counter)}", lasting=False, bucket=client_address(ctx))

    def _transport_key(self, ctx: ServerRequestContext[Any, Any], conn: Any) -> str | None:
        if conn is None:
            return None
        session_id = getattr(conn, "session_id", None)
        if session_id:
            # Stateful Streamable HTTP: the Mcp-Session-Id names the session.
            return self._track(f"http:{session_id}", conn, unique=True)
        if is_http(ctx):
            # Stateless HTTP, or 2026-07-28 over HTTP: every request is a new connection.
            return None
        if getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
            # Handshake era on a stream (stdio, in-memory): the connection lives as long as the session.
            return self._track(f"conn:{id(conn):x}", conn, unique=False)
        if getattr(conn, "has_standalone_channel", False):
            # 2026-07-28 on stdio: a fresh Connection per request, but one outbound channel per pipe,
            # and one pipe is one client.
            return self._track(f"stream:{id(conn.outbound):x}", conn.outbound, unique=False)
        return None

    def _track(self, ident: str, anchor: Any, *, unique: bool) -> str:
        """The key of the session `ident` names; `unique`: `ident` is already unique across processes and time."""
        key = self._tracked.get(ident)
        if key is not None:
            return key
        key = ident if unique else f"{ident.partition(':')[0]}:{self._process}.{next(self._counter)}"
        self._tracked[ident] = key
        exit_stack = getattr(anchor, "exit_stack", None)
        if exit_stack is not None:
            # Runs on stdio EOF, HTTP DELETE and the SDK's idle timeout.
            exit_stack.push(_SessionEnd(self, ident))
        else:
            weakref.finalize(anchor, self._ended, ident)
        return key

    def _ended(self, ident: str) -> None:
        key = self._tracked.pop(ident, None)
        if key is None:
            return
        logger.debug("session %s ended; dropping its grants", key)
        self._on_end(key)
        for listener in self.listeners:
            try:
                listener(key)
            except Exception:  # one holder failing to let go must not keep the others holding
                logger.exception("a listener of session %s's end failed", key)

    def __len__(self) -> int:
        return len(self._tracked)
