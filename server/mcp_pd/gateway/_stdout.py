"""An upstream's stdout, read for `StdioProcess` (`_process.py`): each message handed to the lane's request it
answers, else to the SDK's session.

Lines are read by `_lines.LineReader` (linear, at most `max_line` bytes a message, big lines decoded in a worker
thread, in order). A longer message is never buffered: the request it answers gets a JSON-RPC error saying its
size and the limit, a request of the upstream's gets one too, and a message that does not say which request it
answers makes the gateway stop the upstream (its supervisor restarts it) rather than leave a call waiting for its
timeout. A line that cannot be decoded fails the request it answers the same way; other stray lines are noise.
Knows nothing about MCP beyond framing JSON-RPC lines, nor about starting or stopping processes.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ._lines import OFF_LOOP, LineReader, Oversized, decode, undecodable
from ._watchdog import signal_group

if TYPE_CHECKING:
    from ._process import StdioProcess, _InFlight

__all__ = ["LANE_ID", "LANE_MARK", "READ_CHUNK", "StdoutReader"]

logger = logging.getLogger("mcp_pd.gateway")

READ_CHUNK: Final = 1 << 16
# Ids of the requests sent by `StdioProcess.request`: strings, never the SDK session's integers, so the two cannot
# collide.
LANE_ID: Final = "mcp-pd-lane-"
LANE_MARK: Final = LANE_ID.encode()


class StdoutReader:
    """One upstream's stdout until EOF (`run`): the lane's answers to the lane, the rest to the session, and what
    cannot be read turned into errors for the requests it answers (or, with no id to fail, the upstream stopped).
    Counts noise and sets `fault` on its `StdioProcess`, which reports them."""

    def __init__(self, process: StdioProcess, in_flight: _InFlight) -> None:
        self._process = process
        self._in_flight = in_flight
        self._waiting = in_flight.waiting

    async def run(
        self, proc: asyncio.subprocess.Process, sink: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        stdout = proc.stdout
        assert stdout is not None

        async def read(size: int) -> bytes:
            # Whether answers may be taken as they arrive while this waits: only between whole lines.
            self._in_flight.idle = lines.between_lines
            try:
                return await stdout.read(size)
            finally:
                self._in_flight.idle = False

        lines = LineReader(read, limit=self._process.max_line, chunk=READ_CHUNK)
        async with sink:
            async for line in lines:
                if isinstance(line, Oversized):
                    message = self._oversized(line, proc.pid)
                elif len(line) < OFF_LOOP:
                    if self._waiting and LANE_MARK in line and self._in_flight.answered(line):
                        continue
                    message = self._parse(line) if line.strip() else None
                else:
                    message = await self._parse_big(line)
                if message is not None:
                    try:
                        await sink.send(message)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return
        self._in_flight.abandon()  # EOF: nothing more will be answered

    def _parse(self, line: bytes) -> SessionMessage | None:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError:
            return self._unreadable(line)

    async def _parse_big(self, line: bytes) -> SessionMessage | None:
        """`_InFlight.answered` or `_parse` for a line of `OFF_LOOP` bytes or more: decoded in a worker thread (the
        reader waits for it, so the order holds), then only validated here, which costs little next to decoding."""
        try:
            message = await decode(line)
        except (ValueError, RecursionError):
            return self._unreadable(line)
        request_id = message.get("id") if isinstance(message, dict) else None
        pending = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if pending is not None and ("result" in message or "error" in message):
            pending.answer(message)
            return None
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
        except ValidationError:
            self._noise(line)
            return None

    def _unreadable(self, line: bytes) -> SessionMessage | None:
        """A line that cannot be decoded (not UTF-8, not JSON). When its first and last bytes say it answers a
        request, that request fails now, saying why (rather than wait for its timeout, 300 s by default); a request
        of the upstream's gets an error; anything else is noise (servers that log on stdout exist)."""
        found = undecodable(line)
        if found is None:
            self._noise(line)
            return None
        (kind, request_id), why = found
        logger.warning(
            "upstream %r wrote a message that %s (a %s, id %r)", self._process.config.name, why, kind, request_id
        )
        if kind == "request":
            self._process._reply_error(request_id, f"the gateway could not read a message that {why}")
            return None
        error = types.ErrorData(
            code=types.INTERNAL_ERROR,
            message=f"upstream '{self._process.config.name}' answered with a message that {why}; it was discarded (MCP "
            "messages are UTF-8 JSON: the upstream has a bug, or a tool returned bytes it did not encode)",
        )
        return self._fail(request_id, error)

    def _fail(self, request_id: int | str, error: types.ErrorData) -> SessionMessage | None:
        """`error` as the answer to `request_id`: handed to the lane's request, or to the session (None: handed)."""
        pending = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if pending is not None:
            pending.answer({"jsonrpc": "2.0", "id": request_id, "error": error.model_dump(exclude_none=True)})
            return None
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    def _noise(self, line: bytes) -> None:
        # Servers that print logs on stdout exist; one stray line must not cost the session.
        self._process.noise += 1
        logger.warning(
            "upstream %r wrote a line on stdout that is not JSON-RPC (ignored): %.200s",
            self._process.config.name,
            line[:800].decode(errors="replace"),
        )

    def _oversized(self, line: Oversized, pid: int) -> SessionMessage | None:
        """What a message over the limit becomes: an error for the request it answers, an error answered to the
        upstream's own request, or (when it does not say which request it is) the upstream stopped."""
        name = self._process.config.name
        frame = line.frame()
        kind, request_id = frame if frame is not None else (None, None)
        if request_id is not None:
            logger.warning(
                "upstream %r wrote a message of %s (a %s, id %r); to let it through, raise --max-message-mib or "
                "this server's maxMessageMiB in the config",
                name,
                line.describe(),
                kind,
                request_id,
            )
            if kind == "request":  # the upstream asked something of a client: it gets its refusal
                self._process._reply_error(request_id, f"the gateway refused a message of {line.describe()}")
                return None
            error = types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"upstream '{name}' answered with a message of {line.describe()}; it was discarded unread. "
                "Ask for less at a time (a page, a range, a smaller file).",
                data={"size": line.size, "limit": line.limit},
            )
            return self._fail(request_id, error)
        if kind is not None:  # a notification: nobody waits for it
            logger.warning("upstream %r wrote a message of %s (a notification; dropped)", name, line.describe())
            return None
        # No id to fail: rather than leave a call waiting for its timeout, every call on it fails now, and the
        # supervisor starts the upstream again.
        self._process.fault = (
            f"the gateway stopped it: it wrote a message of {line.describe()}, which does not say which request "
            "it answers"
        )
        logger.warning("upstream %r: %s", name, self._process.fault)
        signal_group(pid, signal.SIGTERM)
        return None
