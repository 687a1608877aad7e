"""Streamable HTTP serving with explicit limits (sessions, request size and pace, keep-alive) and its doors
(allowed Host/Origin, client tokens, the operator credential).

The SDK caps sessions, expires idle ones, bounds request bodies and checks Host/Origin; uvicorn owns the sockets.
The gaps are closed here: nothing bounds how long a client may take to *send* a request (a client that dribbles its
headers or body holds a connection, and an opening request a session slot, forever); the SDK turns the Host/Origin
checks off for any bind address but loopback, and makes them only on `/mcp`. Here every request, whatever its
path, passes one Host/Origin check first; the operator endpoints (`/metrics`, the gateway's `/admin`) then need the
operator credential (`OperatorAccess`), which is never a client's token. `mcp-pd serve` and `mcp-pd proxy` over HTTP
both build their server here (`http_server`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import h11
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._auth import ClientAuth
from ._limits import ADMIN_TOKEN_ENV, HttpLimits

__all__ = [
    "ADMIN_TOKEN_ENV",
    "HttpLimits",
    "OperatorAccess",
    "admin_token",
    "describe_http",
    "http_server",
    "transport_security",
]

# What the SDK allows when it protects a loopback server itself; kept for loopback binds.
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_INVALID_REQUEST = -32600  # JSON-RPC; the SDK's own HTTP refusals carry it too
_DRAIN_BYTES = 64 * 1024 * 1024  # read and dropped past the body limit, at most, to answer with 413
_MIN_TOKEN: Final = 16  # as for client tokens (`_auth`): shorter ones are too easy to guess
# Headers a reverse proxy adds: a request carrying one came from elsewhere, whatever address it arrived from.
_FORWARDED: Final = (b"forwarded", b"x-forwarded-for", b"x-real-ip")
_DEFAULT_LIMITS: Final = HttpLimits()


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve to anything


_PORT = r"(?::(?:\d{1,5}|\*))?"
_NAME = r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?"
_HOST_RE = re.compile(rf"(?:{_NAME}|\[[0-9a-f:.]+\]){_PORT}")
_ORIGIN_RE = re.compile(rf"https?://(?:{_NAME}|\[[0-9a-f:.]+\]){_PORT}")


def _host_patterns(value: str) -> list[str]:
    """`--allowed-host` value -> the SDK's Host patterns; a bare host name allows any port."""
    host = value.strip().lower()
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"  # an unbracketed IPv6 address cannot carry a port
    except ValueError:
        pass
    if not _HOST_RE.fullmatch(host):
        raise ValueError(
            f"--allowed-host {value!r} is not a host name: give HOST or HOST:PORT as clients send it in the Host "
            "header (e.g. mcp.example.com or mcp.example.com:8443; HOST:* for any port), without a scheme or path"
        )
    has_port = re.search(r":(\d+|\*)$", host) is not None and not host.endswith("]")
    return [host] if has_port else [host, f"{host}:*"]


def _origin_patterns(value: str) -> list[str]:
    origin = value.strip().lower().removesuffix("/")
    if not _ORIGIN_RE.fullmatch(origin):
        raise ValueError(
            f"--allowed-origin {value!r} is not an origin: give SCHEME://HOST[:PORT] as browsers send it in the "
            "Origin header (e.g. https://app.example.com; http://localhost:* for any port), without a path"
        )
    return [origin]


def transport_security(bind: str, hosts: Sequence[str] = (), origins: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection for a server bound to `bind`: on for every bind address.

    On loopback the SDK's defaults (127.0.0.1, localhost, [::1], any port) stay and `hosts`/`origins` add to them.
    Beyond loopback only `hosts` are accepted, and there must be some: a server reachable from other machines
    cannot guess the names its clients use, and accepting any Host is what DNS rebinding needs. Requests without
    an Origin header (non-browser clients) pass; browsers need `origins`. Raises ValueError naming the flag.
    """
    allowed_hosts = [p for h in hosts for p in _host_patterns(h)]
    allowed_origins = [p for o in origins for p in _origin_patterns(o)]
    if is_loopback(bind):
        local = [*_LOOPBACK_HOSTS]
        bound = f"[{bind.strip('[]')}]" if ":" in bind else bind.lower()
        if bound not in local:
            local.append(bound)  # another loopback address (127.0.0.2, ...) is reached under its own name
        allowed_hosts = [f"{h}:*" for h in local] + allowed_hosts
        allowed_origins = [f"http://{h}:*" for h in local] + allowed_origins
    elif not allowed_hosts:
        raise ValueError(
            f"--host {bind} serves beyond this machine, so DNS-rebinding protection needs the host names clients "
            "will use: add --allowed-host NAME (repeatable; e.g. --allowed-host mcp.example.com), and "
            "--allowed-origin ORIGIN for browser clients"
        )
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(allowed_hosts)),
        allowed_origins=list(dict.fromkeys(allowed_origins)),
    )


def admin_token(file: Path | None, environ: Mapping[str, str]) -> str | None:
    """The operator credential: the one line of `file` (`--admin-token-file`) or `environ[ADMIN_TOKEN_ENV]`.

    None when neither is set; ValueError saying what is wrong (both set, unreadable, empty, short, spaces).
    """
    from_env = environ.get(ADMIN_TOKEN_ENV)
    if file is not None and from_env:
        raise ValueError(f"--admin-token-file and ${ADMIN_TOKEN_ENV} both give an operator token: keep one")
    if file is not None:
        try:
            token, where = file.read_text(encoding="utf-8").strip(), f"--admin-token-file {file}"
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the operator token from --admin-token-file {file}: {exc}") from None
    elif from_env:
        token, where = from_env.strip(), f"${ADMIN_TOKEN_ENV}"
    else:
        return None
    if len(token) < _MIN_TOKEN or any(c.isspace() or not c.isprintable() for c in token):
        raise ValueError(
            f"{where}: the operator token must be one line of at least {_MIN_TOKEN} printable characters without "
            "spaces (e.g. the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def _is_local(scope: Scope) -> bool:
    """Whether the request came from this machine itself, not through a reverse proxy running on it."""
    if any(name in _FORWARDED for name, _ in scope.get("headers", ())):
        return False
    client = scope.get("client")
    if not client:
        return False
    try:
        address = ipaddress.ip_address(str(client[0]))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@dataclass(frozen=True)
class OperatorAccess:
    """Who may open the operator endpoints (`/metrics`, the gateway's `/admin`).

    With `token` (the operator credential) set: only a request carrying it, from anywhere, as
    `Authorization: Bearer <token>` or as the password of HTTP Basic (any user name; browsers ask for it). A client's
    bearer token never opens them: they show every client's traffic. Without a token: loopback clients that did not
    come through a reverse proxy, and only while clients have no tokens (`client_tokens`); a server that
    authenticates its clients keeps these endpoints closed until it has an operator token too.
    """

    token: str | None = None
    client_tokens: bool = False

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(HTTP status, why) when the request may not open an operator endpoint, else None."""
        path = scope.get("path", "")
        if self.token is not None:
            if self._carries_token(scope):
                return None
            return 401, (
                f"{path} needs the operator token (--admin-token-file or ${ADMIN_TOKEN_ENV}) as "
                "'Authorization: Bearer <token>' or as the HTTP Basic password; client tokens do not open it"
            )
        if self.client_tokens:
            return 403, (
                f"{path} is closed: this server authenticates its clients, and their tokens do not open it; "
                f"start it with an operator token (--admin-token-file FILE or ${ADMIN_TOKEN_ENV}) to read it"
            )
        if not _is_local(scope):
            return 403, (
                f"{path} answers loopback clients only (not through a proxy); start the server with an operator "
                f"token (--admin-token-file FILE or ${ADMIN_TOKEN_ENV}) to open it to others"
            )
        return None

    def _carries_token(self, scope: Scope) -> bool:
        assert self.token is not None
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    given = credential.strip()
                elif scheme.lower() == b"basic":
                    try:
                        given = base64.b64decode(credential.strip(), validate=True).partition(b":")[2]
                    except (binascii.Error, ValueError):
                        given = b""
                break
        # Constant time: the comparison must not tell an attacker how much of a guess was right.
        return hmac.compare_digest(given, self.token.encode("utf-8"))

    def describe(self, paths: Sequence[str]) -> str:
        """One start-up line: who may open `paths`."""
        where = " and ".join(paths)
        if self.token is not None:
            return f"{where}: operator token required (client tokens do not open them)"
        if self.client_tokens:
            return (
                f"{where}: closed (client tokens do not open them; set --admin-token-file FILE or ${ADMIN_TOKEN_ENV})"
            )
        return f"{where}: loopback clients only (set --admin-token-file FILE or ${ADMIN_TOKEN_ENV} to open them)"


class _Doors:
    """Every HTTP request's first stop: the Host/Origin check on every path (the SDK makes it on `/mcp` only, so a
    DNS-rebinding page could read the others), then the operator endpoints behind `OperatorAccess`, and everything
    else to the MCP app (behind client tokens, if any)."""

    def __init__(
        self,
        app: ASGIApp,
        security: TransportSecuritySettings,
        endpoints: Mapping[str, ASGIApp],
        access: OperatorAccess,
        public: Mapping[str, ASGIApp] | None = None,
    ) -> None:
        self.app = app
        self.guard = TransportSecurityMiddleware(security)
        self.endpoints = dict(endpoints)
        self.access = access
        self.public = dict(public or {})  # open to anyone past the Host check (OAuth resource metadata)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # the lifespan, which starts the session manager
            return
        refused = await self.guard.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if (public := self.public.get(scope["path"])) is not None:
            await public(scope, receive, send)
            return
        endpoint = self.endpoints.get(scope["path"])
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        problem = self.access.refusal(scope)
        if problem is None:
            await endpoint(scope, receive, send)
            return
        status, why = problem
        body = (why + "\n").encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        if status == 401:
            # Basic first: a browser asks for it (the token as password) and never for Bearer.
            headers += [
                (b"www-authenticate", b'Basic realm="mcp-pd operator", charset="UTF-8"'),
                (b"www-authenticate", b'Bearer realm="mcp-pd operator"'),
            ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _error_body(message: str) -> bytes:
    # The shape of the SDK's own HTTP refusals, so MCP clients show the message.
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": _INVALID_REQUEST, "message": message}}
    return json.dumps(error, separators=(",", ":")).encode()


async def _refuse(send: Send, status: int, message: str) -> None:
    body = _error_body(message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            # The refused request may still be arriving (or stalled): this connection carries no other one.
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _CompleteRequests:
    """Hands the app only whole requests: each body read in full within `timeout`, at most `max_bytes`.

    Reading the body up front, before the SDK, means a slow or stalled body is answered 408 and the connection
    closed, and it never holds a session slot (the SDK admits a session before it reads the opening request).
    Only the *request* is bounded: the response, an SSE stream included, runs as long as the app wants.
    """

    def __init__(self, app: ASGIApp, *, timeout: float, max_bytes: int) -> None:
        self.app = app
        self.timeout = timeout
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = f"Request body too large: the limit is {self.max_bytes} bytes"
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes and b"expect" in headers:
            # A client waiting for "100 Continue" has sent nothing yet: tell it now, it never sends the body.
            await _refuse(send, 413, too_large)
            return
        chunks: list[bytes] = []
        size = 0
        complete = False
        with anyio.move_on_after(self.timeout):
            while size <= self.max_bytes + _DRAIN_BYTES:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # nobody left to answer
                chunk = message.get("body", b"")
                size += len(chunk)
                # Past the limit the body is still read (and dropped), within the same bounds: a client that is
                # cut off while it sends sees a reset, not the 413 that says why.
                if size <= self.max_bytes:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    complete = True
                    break
        if size > self.max_bytes:
            await _refuse(send, 413, too_large)
            return
        if not complete:
            await _refuse(send, 408, f"Request Timeout: the request body did not arrive within {self.timeout:g} s")
            return
        whole: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        pending = [whole]

        async def replay() -> Message:
            # Later calls wait for the disconnect, as streaming responses do.
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)


class _PacedH11(H11Protocol):
    """uvicorn's h11 protocol, with a deadline on each request head and on each stall of a response.

    uvicorn bounds only the idle time *between* requests (keep-alive, cancelled by the first byte of the next
    one): a connection that never sends anything, or sends its headers a byte at a time, stays open for good.
    Here the head must be complete within `request_timeout` of the connection opening or of the request's first
    byte; else the client gets 408 (if it had begun) and the connection is closed.

    Nor does uvicorn bound a client that stops reading: its response waits in the socket's buffer (all of it, when
    the app wrote it in one message) and the app waits for the buffer to drain, for as long as the socket stays
    open. Here, once the transport's buffer is full (asyncio pauses the protocol), the client has `write_timeout`
    to take something from it; else the connection is aborted, its buffer dropped, and the app sees the client
    gone (what it held for that response is let go). Subclassed per server (`_paced_h11`) because uvicorn builds
    one protocol per connection from the class alone.
    """

    request_timeout: float = HttpLimits.request_timeout
    write_timeout: float = HttpLimits.write_timeout
    keep_alive_timeout: float = HttpLimits.keep_alive_timeout

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn's Config types the keep-alive as whole seconds; its timer takes any float.
        self.timeout_keep_alive = self.keep_alive_timeout  # type: ignore[assignment]
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_begun = False
        self._write_deadline: asyncio.TimerHandle | None = None

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_deadline is None:
            self._write_deadline = self.loop.call_later(self.write_timeout, self._write_timed_out)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._write_disarm()

    def _write_disarm(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _write_timed_out(self) -> None:
        self._write_deadline = None
        if self.transport.is_closing() and self.transport.get_write_buffer_size() == 0:
            return
        self.logger.warning(
            "Closing a connection whose client read nothing of its response for %g s (%d bytes waiting)",
            self.write_timeout,
            self.transport.get_write_buffer_size(),
        )
        self.transport.abort()  # not close(), which would wait for the client to read the buffer first

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(begun=False)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # these bytes start (or continue) a request head
            self._arm(begun=True)
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in (or the connection failed)
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._write_disarm()
        super().connection_lost(exc)

    def _arm(self, *, begun: bool) -> None:
        self._head_begun = self._head_begun or begun
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.request_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None
        self._head_begun = False

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self._head_begun:
            body = _error_body(f"Request Timeout: the request headers did not arrive within {self.request_timeout:g} s")
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                + b"content-length: %d\r\n\r\n" % len(body)
                + body
            )
        self.logger.info("Closing a connection whose request headers did not arrive in time")
        self.transport.close()


def _paced_h11(limits: HttpLimits) -> type[H11Protocol]:
    attributes = {
        "request_timeout": limits.request_timeout,
        "write_timeout": limits.write_timeout,
        "keep_alive_timeout": limits.keep_alive_timeout,
    }
    return type("PacedH11Protocol", (_PacedH11,), attributes)


def http_server(
    server: Server[Any],
    *,
    host: str,
    port: int,
    security: TransportSecuritySettings,
    limits: HttpLimits = _DEFAULT_LIMITS,
    stateless: bool = False,
    log_level: str = "warning",
    clients: ClientAuth | None = None,
    operator: Mapping[str, ASGIApp] | None = None,
    operator_token: str | None = None,
    responses: Callable[[ASGIApp], ASGIApp] | None = None,
) -> uvicorn.Server:
    """A uvicorn server for `server`'s Streamable HTTP app at /mcp, with `limits` and `security` applied.

    `clients`: how `/mcp` authenticates (static bearer tokens or OAuth; None: it does not), and what it publishes
    (OAuth's resource metadata, open to all). `operator`: endpoints by path (`/metrics`, `/admin`), each opened as
    `OperatorAccess(operator_token, client_tokens=clients is not None)` decides, outside the client token check.
    `security` applies to every path. `responses`: wraps the SDK's app, inside the doors and the limits (the
    gateway's HTTP lane writes large results there).
    """
    app = server.streamable_http_app(
        stateless_http=stateless,
        host=host,
        transport_security=security,
        max_request_body_size=limits.max_body_bytes,
        session_idle_timeout=limits.session_idle_timeout,
        max_sessions=limits.max_sessions,
    )
    inner: ASGIApp = app if responses is None else responses(app)
    paced: ASGIApp = _CompleteRequests(inner, timeout=limits.request_timeout, max_bytes=limits.max_body_bytes)
    if clients is not None:
        paced = clients.wrap(paced)
    access = OperatorAccess(operator_token, client_tokens=clients is not None)
    config = uvicorn.Config(
        _Doors(paced, security, operator or {}, access, None if clients is None else clients.public),
        host=host,
        port=port,
        log_level=log_level,
        http=_paced_h11(limits),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        ws="none",  # MCP has no WebSocket transport: an upgrade request is just refused
    )
    return uvicorn.Server(config)


def describe_http(limits: HttpLimits, security: TransportSecuritySettings, *, stateless: bool = False) -> list[str]:
    """The effective limits, one line each, as `mcp-pd serve` prints them at start-up."""
    if stateless:
        sessions = "stateless: no sessions"
    else:
        cap = "no cap" if limits.max_sessions is None else f"at most {limits.max_sessions}"
        idle = (
            "never expire"
            if limits.session_idle_timeout is None
            else f"end after {limits.session_idle_timeout:g} s idle"
        )
        sessions = f"sessions: {cap}; they {idle}"
    origins = ", ".join(security.allowed_origins) or "none (browsers refused)"
    return [
        sessions,
        f"requests: body at most {limits.max_body_bytes} bytes, headers at most {limits.max_header_bytes} "
        f"bytes; headers and then body each within {limits.request_timeout:g} s (responses and SSE streams are "
        "not limited); idle connections closed after "
        f"{limits.keep_alive_timeout:g} s",
        f"responses: a client that reads nothing of what it is owed for {limits.write_timeout:g} s is disconnected "
        "and what was held for it let go",
        f"allowed Host: {', '.join(security.allowed_hosts)}",
        f"allowed Origin (or none sent): {origins}",
    ]
