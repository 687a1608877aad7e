"""Serving the gateway over stdio without a thread hop per message.

The SDK's `stdio_server` reads stdin and writes stdout through worker threads (two hand-offs per request); for a
gateway every request is on the hot path, so the same framing is done here on asyncio pipe transports instead.
Falls back to the SDK's own streams when stdin or stdout is not a pipe (e.g. a regular file). A lane (the
gateway's `StdioLane`) may be offered each line first and answer it itself.

Lines are read by `_lines.LineReader`: linear, at most `MAX_LINE` bytes a message, and a line of `OFF_LOOP` bytes
or more decoded in a worker thread before the next is read (so the order holds). A longer line is skipped, never
buffered: a request gets a JSON-RPC error saying its size and the limit, an answer to one of the gateway's own
requests is turned into an error for that request, and the gateway keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from ._lines import MAX_LINE, OFF_LOOP, LineReader, Oversized

__all__ = ["Lane", "pipe_stdio"]

logger = logging.getLogger("mcp_pd.gateway")

# What the pipe's reader holds before it stops reading stdin (asyncio pauses at twice this); lines are assembled,
# up to `MAX_LINE`, by the LineReader.
_PIPE_BUFFER: Final = 1 << 20
# Bytes the client has not read yet beyond which the lane waits to write (asyncio's own high-water mark).
_BEHIND: Final = 1 << 16


class _Writer:
    """Whole lines onto the client's pipe: the SDK's messages and the lane's answers never interleave."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def line(self, data: bytes) -> None:
        """One whole line at once, waiting while the client is slow to read."""
        self._writer.write(data)
        await self._writer.drain()

    def now(self, data: bytes) -> bool:
        """`line` without waiting, unless the client has fallen behind (then nothing is written: use `line`)."""
        if self._writer.transport.get_write_buffer_size() > _BEHIND:
            return False
        self._writer.write(data)
        return True


class Lane(Protocol):
    """Answers some requests itself, before the SDK sees them (the gateway's `StdioLane`)."""

    def attach(self, out: _Writer) -> None: ...

    async def offer(self, line: bytes) -> bool: ...

    async def aclose(self) -> None: ...


Take = Callable[[bytes], Awaitable[bool]]


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _validate(line: bytes) -> types.JSONRPCMessage:
    # Decoded as the SDK's own stdio transport does: undecodable bytes are replaced, not refused.
    return types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", errors="replace"), by_name=False)


def _validate_big(line: bytes) -> types.JSONRPCMessage:
    """`_validate` for a big line (in a worker thread): json.loads holds the GIL about half as long as pydantic's
    own JSON parser on a long string, and the validation of the parsed value costs next to nothing."""
    text = line.decode("utf-8", errors="replace")
    return types.jsonrpc_message_adapter.validate_python(json.loads(text), by_name=False)


async def _read(
    reader: asyncio.StreamReader,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    take: Take | None,
    out: _Writer,
    limit: int,
) -> None:
    """Each line from the client: offered to `take` first, else parsed (big ones off the loop) and passed on."""
    async with sink:
        async for line in LineReader(reader.read, limit=limit):
            if isinstance(line, Oversized):
                item: SessionMessage | Exception | None = await _oversized(line, out)
            elif not line.strip() or (take is not None and len(line) < OFF_LOOP and await take(line)):
                continue  # (a big line goes the SDK's way: the lane would decode it on the event loop)
            else:
                try:
                    if len(line) < OFF_LOOP:
                        item = SessionMessage(_validate(line))
                    else:
                        item = SessionMessage(await anyio.to_thread.run_sync(_validate_big, line))
                except (ValueError, RecursionError) as exc:  # what the SDK's transport does with a bad line
                    item = exc
            if item is None:
                continue
            try:
                await sink.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return


async def _oversized(line: Oversized, out: _Writer) -> SessionMessage | None:
    """A client's line over the limit: its request refused, or its answer (to a request of the gateway's) made an
    error for that request; never buffered, never passed on."""
    frame = line.frame()
    kind, request_id = frame if frame is not None else (None, None)
    logger.warning("the client sent a message of %s (%s, id %r)", line.describe(), kind or "unrecognised", request_id)
    if request_id is None:
        return None  # a notification, or nothing that says which request: nobody waits for an answer
    if kind == "response":
        error = types.ErrorData(
            code=types.INVALID_REQUEST, message=f"the client answered with a message of {line.describe()}"
        )
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    message = (
        f"The request was {line.describe()}; it was discarded unread. Send less at a time (a smaller argument, a "
        "file path)."
    )
    await out.line(
        _line(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": types.INVALID_REQUEST,
                    "message": message,
                    "data": {"size": line.size, "limit": line.limit},
                },
            }
        )
    )
    return None


async def _write(source: MemoryObjectReceiveStream[SessionMessage], out: _Writer) -> None:
    async with source:
        async for message in source:
            try:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            except PydanticSerializationError:
                # A lone surrogate (JSON's "\ud800", which an upstream may send) has no UTF-8: written escaped, as
                # json writes it, rather than ending the gateway.
                value = message.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
                data = json.dumps(value, separators=(",", ":")).encode()
            await out.line(data + b"\n")


@asynccontextmanager
async def pipe_stdio(lane: Lane | None = None, *, limit: int = MAX_LINE) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams a server runs on, over asyncio pipes when stdin and stdout are pipes (else the
    SDK's `stdio_server`).

    `lane` is offered each line first (only over pipes); what it takes never reaches the streams. `limit`: the
    longest line read, in bytes.
    """
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=_PIPE_BUFFER)
        # Duplicates: closing the transports must not close the process's own stdin and stdout.
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader),
            open(os.dup(sys.stdin.fileno()), "rb", buffering=0),  # noqa: SIM115 - the transport owns it
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin,
            open(os.dup(sys.stdout.fileno()), "wb", buffering=0),  # noqa: SIM115 - the transport owns it
        )
    except (ValueError, OSError):
        async with stdio_server() as streams:
            yield streams
        return
    out = _Writer(asyncio.StreamWriter(transport, protocol, None, loop))
    if lane is not None:
        lane.attach(out)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_write, write_reader, out)
            reading = anyio.CancelScope()

            async def read() -> None:
                with reading:
                    await _read(reader, read_writer, lane.offer if lane is not None else None, out, limit)

            tg.start_soon(read)
            try:
                yield read_stream, write_stream
            finally:
                reading.cancel()  # stdin may stay open after the server is done
                write_stream.close()  # the writer ends once what was queued is written
                read_stream.close()
    finally:
        if lane is not None:
            await lane.aclose()
