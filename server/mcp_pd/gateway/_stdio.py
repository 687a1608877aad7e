"""Serving the gateway over stdio without a thread hop per message.

The SDK's `stdio_server` reads stdin and writes stdout through worker threads (two hand-offs per request); for a
gateway every request is on the hot path, so the same framing is fed from asyncio pipe transports instead. Falls
back to the SDK's own streams when stdin or stdout is not a pipe (e.g. a regular file). A lane (the gateway's
`StdioLane`) may be offered each line first and answer it itself.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol, cast

from mcp.server.stdio import stdio_server

__all__ = ["Lane", "pipe_stdio"]

_LINE_LIMIT = 1 << 26  # one JSON-RPC message per line; large results are legitimate
# Bytes the client has not read yet beyond which the lane waits to write (asyncio's own high-water mark).
_BEHIND = 1 << 16


class _Lines:
    """`async for line in ...` over a StreamReader (what stdio_server expects of its stdin), minus what `take`
    answers itself."""

    def __init__(self, reader: asyncio.StreamReader, take: Take | None) -> None:
        self._reader = reader
        self._take = take

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            if self._take is None or not await self._take(line):
                return line.decode("utf-8", errors="replace")


class _Writer:
    """`await write(text)` / `await flush()` over a StreamWriter (what stdio_server expects of its stdout)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()

    async def line(self, data: bytes) -> None:
        """One whole line at once: lines written by the lane and by the SDK never interleave."""
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


@asynccontextmanager
async def pipe_stdio(lane: Lane | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of `stdio_server`, over asyncio pipes when stdin and stdout are pipes.

    `lane` is offered each line first (only over pipes); what it takes never reaches the streams.
    """
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=_LINE_LIMIT)
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
    lines = _Lines(reader, lane.offer if lane is not None else None)
    try:
        async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, out)) as streams:
            yield streams
    finally:
        if lane is not None:
            await lane.aclose()
