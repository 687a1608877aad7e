"""What an HTTP server lets its clients hold, and the operator credential's variable: plain values, imported by
the CLI's parsers without the SDK (`mcp-pd --help` stays fast); `_http.py` serves with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ADMIN_TOKEN_ENV", "HttpLimits"]

ADMIN_TOKEN_ENV: Final = "MCP_PD_ADMIN_TOKEN"


@dataclass(frozen=True)
class HttpLimits:
    """How much a Streamable HTTP server lets its clients hold, and for how long.

    `max_sessions` and `session_idle_timeout` are the SDK's (None: no cap / never expire); `request_timeout` bounds
    the time a client may take to send a request's headers, and again its body (a response, such as an SSE stream,
    may then last as long as it needs); `write_timeout` bounds how long a client may leave the response it is owed
    unread (the server's socket buffer full, nothing taken from it): past it the connection is cut off and what was
    waiting for that client is let go; `keep_alive_timeout` closes a connection idle between requests;
    `max_header_bytes` is h11's bound on a request head (uvicorn's default).
    """

    max_sessions: int | None = 1000
    session_idle_timeout: float | None = 1800.0
    max_body_bytes: int = 4 * 1024 * 1024
    request_timeout: float = 30.0
    write_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    max_header_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        for name in ("session_idle_timeout", "request_timeout", "write_timeout", "keep_alive_timeout"):
            value = getattr(self, name)
            if value is not None and not (0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive, finite number of seconds, not {value!r}")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1 (or None for no cap), not {self.max_sessions!r}")
        for name in ("max_body_bytes", "max_header_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)!r}")
