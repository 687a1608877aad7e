"""What went wrong reaching a server a person named on the command line, in one line they can act on.

`mcp-pd call` (and anything else that connects to a `--url` or a `--stdio` command for a person) turns what the SDK
raised into one sentence: no traceback for a typing mistake, a server that is not running, a missing or refused
token, a wrong path, a command that does not exist or exits before the handshake. The SDK reports every HTTP error
status as the same JSON-RPC error ("Server returned an error response"), so the HTTP client used here records the
statuses it received (`StatusLog`), and the status says which mistake it was. Knows nothing about tools or grants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StatusLog", "Unreachable", "explain"]


class Unreachable(Exception):
    """A server could not be used, said in one line (`str(exc)`) for the person who named it."""


@dataclass
class StatusLog:
    """The HTTP error statuses a client received (an httpx2 response hook), with the server's `WWW-Authenticate`."""

    statuses: list[int] = field(default_factory=list)
    challenge: str = ""

    async def __call__(self, response: Any) -> None:
        if response.status_code >= 400:
            self.statuses.append(response.status_code)
            self.challenge = self.challenge or response.headers.get("www-authenticate", "")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _status(status: int, target: str, *, token_sent: bool, challenge: str) -> str:
    if status == 401:
        if token_sent:
            return (
                f"{target} refused the bearer token (401 Unauthorized): check the token, e.g. the one your entry "
                "in the server's --bearer-tokens file holds"
            )
        what = "a bearer token" if "bearer" in challenge.lower() or not challenge else "credentials"
        return f"{target} requires {what} (401 Unauthorized): add --header 'Authorization: Bearer TOKEN'"
    if status == 403:
        return f"{target} refused the request (403 Forbidden): the token is valid but not allowed here"
    if status == 404:
        return f"nothing serves MCP at {target} (404 Not Found): check the URL's path (mcp-pd serves /mcp)"
    if status == 421:
        return (
            f"{target} does not accept this Host name (421 Misdirected Request): use a host name the server allows "
            "(its --allowed-host)"
        )
    if status == 405:
        return f"{target} is not a Streamable HTTP MCP endpoint (405 Method Not Allowed): check the URL"
    return f"{target} answered HTTP {status}: check the URL and that it is an MCP server's Streamable HTTP endpoint"


def explain(
    exc: BaseException, target: str, *, stdio: bool, log: StatusLog | None = None, token_sent: bool = False
) -> str:
    """One line for what connecting to (or talking with) `target` raised: a URL, else (`stdio`) a command line."""
    leaves = _leaves(exc)
    if log is not None and log.statuses:
        return _status(log.statuses[0], target, token_sent=token_sent, challenge=log.challenge)
    names = {type(leaf).__name__ for leaf in leaves}
    leaf = leaves[0]
    if isinstance(leaf, FileNotFoundError) and stdio:
        return f"cannot start the server: command not found: {leaf.filename or leaf} (from --stdio {target!r})"
    if isinstance(leaf, PermissionError) and stdio:
        return f"cannot start the server: {leaf.filename or leaf} is not executable (from --stdio {target!r})"
    if "UnsupportedProtocol" in names:
        return f"{target!r} is not an http:// or https:// URL, e.g. http://127.0.0.1:8000/mcp"
    if names & {"ConnectError", "ConnectTimeout"}:
        return f"cannot connect to {target}: {leaf}; is the server running, and is the host and port right?"
    if names & {"ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutError"}:
        return f"{target} did not answer in time"
    from mcp.shared.exceptions import MCPError

    error = next((e for e in leaves if isinstance(e, MCPError)), None)
    if error is not None and stdio and error.error.message == "Connection closed":
        return f"the server exited before answering (from --stdio {target!r}); what it printed is above"
    if error is not None:
        return f"{target} answered error {error.error.code}: {error.error.message}"
    if isinstance(leaf, OSError):
        return f"cannot reach {target}: {leaf.strerror or leaf}"
    text = str(leaf) or type(leaf).__name__
    return f"talking to {target} failed: {type(leaf).__name__}: {text}"
