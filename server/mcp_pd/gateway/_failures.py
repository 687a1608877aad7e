"""What went wrong with an upstream, in words an operator (and a model) can act on.

`UpstreamUnavailable` is the one exception a call raises when its upstream gave no usable answer (`went_away`: one
that died during the call, with when to retry, never what it printed on stderr); `explain` turns what connecting
raised into one line; `call_failure` sorts a JSON-RPC error of a call into the upstream's own error (passed on), a
timeout or a closed connection; `session_forgotten` recognises an HTTP upstream that no longer knows the gateway's
session. Every reason is written through the one rule that secrets never leave the operator's log
(`mcp_pd._redact`): an HTTP library that quotes an illegal header value, a URL with its credentials or a token the
configuration holds (`remember` registers an upstream's) never reaches a client, `/admin` or the log. Knows nothing
about sessions, processes or supervision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_pd._redact import redact, register_env, register_headers, register_url

if TYPE_CHECKING:
    from ._config import UpstreamConfig

__all__ = ["UpstreamUnavailable", "call_failure", "explain", "remember", "session_forgotten", "went_away"]


def remember(config: UpstreamConfig) -> None:
    """Register what in an upstream's configuration may be a credential (header values, secret-named environment
    values, a URL's user, password and key-like query values) with the rule that keeps secrets in."""
    register_headers(config.headers)
    register_env(config.env)
    register_url(config.url)


class UpstreamUnavailable(Exception):
    """A call that could not reach its upstream (or got no usable answer): the message names it and says why."""

    def __init__(self, server: str, reason: str, *, retry_in: float | None = None) -> None:
        self.server = server
        self.reason = redact(reason)  # it reaches clients (the refusal), /admin and the log
        self.retry_in = retry_in
        super().__init__(f"upstream server '{server}' {self.reason}")


def went_away(server: str, name: str, why: str, retry_in: float | None) -> UpstreamUnavailable:
    """An upstream that died during the call to `name`: `why` (the exit, fit for clients), and when to retry."""
    again = f"it is restarting, retry in {retry_in:.1f} s" if retry_in is not None else "the gateway restarts it"
    return UpstreamUnavailable(
        server,
        f"went away during the call to '{name}': {why}; {again} (the call may or may not have taken effect)",
        retry_in=retry_in,
    )


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _flatten(inner)]
    return [exc]


def explain(exc: BaseException) -> str:
    """One line for an exception raised while connecting, without Python internals where it can be helped, and
    without secrets (an HTTP library refusing a header quotes its value: a pasted token with a trailing blank)."""
    return redact(_explain(exc))


def _explain(exc: BaseException) -> str:
    leaves = _flatten(exc)
    leaf = next((e for e in leaves if not isinstance(e, anyio.get_cancelled_exc_class())), leaves[0])
    if isinstance(leaf, FileNotFoundError):
        return f"command not found: {leaf.filename or leaf}"
    if isinstance(leaf, PermissionError):
        return f"command not executable: {leaf.filename or leaf}"
    if isinstance(leaf, MCPError):
        return f"answered the handshake with error {leaf.code}: {leaf.message}"
    text = str(leaf) or type(leaf).__name__
    return f"{type(leaf).__name__}: {text}" if type(leaf).__name__ not in text else text


def call_failure(exc: MCPError) -> Literal["timeout", "closed", "upstream"]:
    """What a JSON-RPC error of a tools/call means: the SDK's own timeout, the connection closing under it, or an
    error the upstream itself answered (passed on to the caller as it is)."""
    if exc.code == types.REQUEST_TIMEOUT and exc.message.startswith("Request 'tools/call' timed out"):
        return "timeout"
    if exc.code == types.CONNECTION_CLOSED and exc.message == "Connection closed":
        return "closed"
    return "upstream"


def session_forgotten(exc: MCPError) -> bool:
    """An HTTP upstream that no longer knows our session (restarted, idle expiry): HTTP 404 on Mcp-Session-Id."""
    text = exc.message.lower()
    return "session" in text and any(w in text for w in ("not found", "terminated", "expired", "unknown", "invalid"))
