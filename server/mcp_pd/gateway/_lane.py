"""The stdio lane: an admitted `tools/call` served without the SDK's request path, to keep the hop light.

Over stdio most of the gateway's time per call was the SDK turning one small JSON line into request models,
contexts and tasks, and back. The lane looks at each line the client sends before the SDK does. It takes only a
plain `tools/call` (handshake era, no progress token, none of the protocol's reserved `_meta` keys), and only when
the extension `admits` the call for this client's session right now, the same decision `tools/call` makes. When
the tool's upstream is a ready stdio process, the call is written onto its pipe at once and a clean result is
answered from the pipe's reader, with no task in between; anything else (an error, a timeout, a refusal to retry,
an upstream not ready) goes through the same code as `Gateway.run`, which the SDK path calls. Everything else, refusals
included, goes on to the SDK unchanged and in order. The lane learns who the client is from the first call the SDK
path lets through, so nothing is taken before then.

Knows nothing about grants, modes or upstream processes: it asks the extension and the gateway.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any, Final, Protocol

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_pd import Caller, ProgressiveDisclosure
from mcp_pd._selectors import selections

from ._lines import dump, parse
from ._process import Pending
from ._server import Gateway, hop_key

__all__ = ["StdioLane"]

logger = logging.getLogger("mcp_pd.gateway")

_CALL: Final = b'"tools/call"'
_CANCELLED: Final = b'"notifications/cancelled"'


class Output(Protocol):
    """Where the lane's answers go: the client's pipe, one whole JSON-RPC line at a time."""

    async def line(self, data: bytes) -> None:
        """Write `data`, waiting while the client is slow to read."""

    def now(self, data: bytes) -> bool:
        """Write `data` without waiting; False (nothing written) when the client is slow to read."""


Key = tuple[type, int | str]


class StdioLane:
    """Offered each line from the client (`await offer(line)`): True when it took the line and will answer it."""

    def __init__(self, gateway: Gateway, pd: ProgressiveDisclosure) -> None:
        self.gateway = gateway
        self.pd = pd
        self.caller: Caller | None = None
        self.taken = 0  # calls served by the lane (the benchmark and the tests read it)
        self._out: Output | None = None
        self._running: dict[Key, asyncio.Task[None]] = {}
        self._sent: dict[Key, Pending] = {}
        gateway.call_observers.append(self._learn)

    def attach(self, out: Output) -> None:
        """Where answers go (the same pipe the SDK writes to)."""
        self._out = out

    def _learn(self, ctx: ServerRequestContext[Any, Any], name: str) -> None:
        # A permission hook or a custom session key may look at each request: such servers keep the SDK path.
        if self.caller is not None or self.pd.permission is not None or self.pd.sessions.policy.session_key:
            return
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.caller = self.pd.caller(ctx)

    async def offer(self, line: bytes) -> bool:
        if self.caller is None or self._out is None or (_CALL not in line and _CANCELLED not in line):
            return False
        try:
            message = parse(line)
        except (ValueError, RecursionError):  # nested past what json can read: the SDK's parser answers it
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        params = message.get("params")
        if not isinstance(params, dict):
            return False
        if message.get("method") == "notifications/cancelled":
            return self._cancel(params.get("requestId"))
        call = _plain_call(message, params)
        if call is None:
            return False
        request_id, name, arguments, meta = call
        tasks = self.gateway.tasks
        if tasks is not None and name in tasks.required():
            return False  # a task-only tool called plainly: the SDK path says why it does not run
        if not await self.pd.admits(self.caller, name):
            return False
        key: Key = (type(request_id), request_id)
        if key in self._running or key in self._sent:
            return False  # a duplicate id in flight: the SDK answers that
        self.taken += 1
        if not self._send(key, request_id, name, arguments, meta):
            self._start(key, self._serve(request_id, name, self.gateway.run(name, arguments, meta=meta)))
        return True

    def _send(
        self, key: Key, request_id: int | str, name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None
    ) -> bool:
        """Write the call onto a ready upstream pipe now and answer from the pipe's reader: a clean result goes
        straight back, anything else (errors, timeouts, refusals, a slow client) to the same code as `run`."""
        found = self.gateway.route(name)
        if found is None:
            return False
        upstream, tool = found
        session = upstream.session
        if session is None:
            return False  # not started yet: `run` waits for it

        def answered(answer: dict[str, Any] | Exception) -> None:
            self._sent.pop(key, None)
            result = upstream.calls.passed(answer)
            if result is not None and self._out is not None:
                result = self.gateway.content.tool_result(upstream.name, result)  # its resource links served
                if self._out.now(_answer(request_id, result)):
                    return
            settled = upstream.calls.settle(tool, arguments, meta, answer, session)
            self._start(key, self._serve(request_id, name, self.gateway.outcome(name, settled, upstream.name)))

        pending = upstream.calls.send(tool, arguments, meta, answered)
        if pending is None:
            return False
        self._sent[key] = pending
        return True

    def _start(self, key: Key, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._running[key] = task
        task.add_done_callback(lambda _: self._running.pop(key, None))

    def _cancel(self, request_id: object) -> bool:
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return False
        key: Key = (type(request_id), request_id)
        pending = self._sent.pop(key, None)
        if pending is not None:
            pending.cancel("the caller cancelled the request")  # the upstream is told; no answer is sent
            return True
        task = self._running.get(key)
        if task is None:
            return False
        task.cancel()  # the upstream is told in turn; a cancelled request gets no answer
        return True

    async def _serve(self, request_id: int | str, name: str, outcome: Awaitable[types.CallToolResult]) -> None:
        try:
            data = _answer(request_id, await outcome)
        except MCPError as exc:
            data = _line(
                request_id, b',"error":' + exc.error.model_dump_json(by_alias=True, exclude_none=True).encode()
            )
        except Exception as exc:
            logger.exception("the call to %r failed in the gateway", name)
            error = {"code": types.INTERNAL_ERROR, "message": f"Tool '{name}' failed in the gateway: {exc}"}
            data = _line(request_id, b',"error":' + json.dumps(error).encode())
        assert self._out is not None
        await self._out.line(data)

    async def aclose(self) -> None:
        """Cancel what is still running (the client went away)."""
        for pending in self._sent.values():
            pending.cancel("the client went away")
        self._sent.clear()
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _line(request_id: int | str, body: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + dump(request_id) + body + b"}\n"


def _answer(request_id: int | str, result: types.CallToolResult) -> bytes:
    # Serialized by pydantic-core straight to JSON: the same fields the SDK path sends, in a fraction of the time
    # of a dict and json.dumps.
    return _line(request_id, b',"result":' + result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _plain_call(
    message: dict[str, Any], params: dict[str, Any]
) -> tuple[int | str, str, dict[str, Any] | None, dict[str, Any] | None] | None:
    """(id, name, arguments, forwarded _meta) of a tools/call the lane may take, else None."""
    request_id = message.get("id")
    if message.get("method") != "tools/call" or isinstance(request_id, bool):
        return None
    if not isinstance(request_id, int | str):
        return None
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
        return None
    # A key of the client's own hop means progress to forward or a 2026 request: the SDK path handles those, so
    # what the lane forwards is the whole `_meta`.
    if meta is not None and (not isinstance(meta, dict) or any(hop_key(str(k)) for k in meta)):
        return None
    if meta and selections(meta):
        return None  # it picks an implementation: the SDK path judges it against the one described (I-42)
    if set(params) - {"name", "arguments", "_meta"}:
        return None  # fields this lane does not know (task-augmented calls, say): the SDK path handles them
    return request_id, name, arguments, meta or None
