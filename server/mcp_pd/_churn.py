"""Spotting a client that opens a new MCP session for each request, so its grants never reach its calls.

FastMCP's `create_proxy` with a client that is not connected does this by design ("session isolation"): the
definition is fetched in one session and the call comes from the next, which holds nothing, and a model then loops
on `TOOL_DESCRIPTION_REQUIRED`. The spec gives such a client no way out, so the refusal says what is going on: when a
session without a grant calls a tool that a different session of the same client (same `clientInfo`, and the same
address where there is one) fetched moments ago, `explain` gives the reason to add. Knows nothing about transports
or modes; it only remembers, for a minute, who fetched what.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Final

from cachetools import TTLCache

from ._policy import Caller

__all__ = ["SessionChurn"]

WINDOW: Final = 60.0  # seconds a fetch is remembered
_MAX_ENTRIES: Final = 10_000


def client_of(caller: Caller) -> str | None:
    """Who the client says it is (name/version of its `clientInfo`, plus the request's address on HTTP)."""
    try:
        params = caller.context.session.client_params
    except AttributeError:
        return None
    if params is None:
        return None
    info = params.client_info
    request = getattr(caller.context, "request", None)
    client = getattr(request, "client", None)
    where = getattr(client, "host", None) or ""
    return f"{info.name}/{info.version}@{where}"


class SessionChurn:
    """`fetched` after each description is granted; `explain` when a call is refused for want of one."""

    def __init__(self, *, window: float = WINDOW, timer: Callable[[], float] = time.monotonic) -> None:
        self._timer = timer
        # (client, tool) -> (session that fetched it, when)
        self._fetches: TTLCache[tuple[str, str], tuple[str, float]] = TTLCache(_MAX_ENTRIES, window, timer=timer)

    def fetched(self, caller: Caller, names: Iterable[str]) -> None:
        client = client_of(caller)
        if client is None or caller.session is None:
            return
        now = self._timer()
        for name in names:
            self._fetches[(client, name)] = (caller.session, now)

    def explain(self, caller: Caller, name: str) -> str | None:
        """Why `caller` has no grant for `name` although its client fetched it moments ago, or None."""
        client = client_of(caller)
        if client is None or caller.session is None:
            return None
        fetched = self._fetches.get((client, name))
        if fetched is None or fetched[0] == caller.session:
            return None
        ago = self._timer() - fetched[1]
        return (
            f"'{name}' was fetched {ago:.1f} s ago in another MCP session of this client ({client.split('@')[0]}), "
            "and grants belong to the session that fetched them. This client seems to open a new session for each "
            "request (FastMCP's create_proxy does with a client that is not connected): keep one session open "
            "(connect the client before passing it to create_proxy), or authenticate it so grants follow the "
            "principal"
        )
