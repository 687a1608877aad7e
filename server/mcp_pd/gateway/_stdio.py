"""Serving the gateway over stdio without a thread hop per message.

The SDK's `stdio_server` reads stdin and writes stdout through worker threads (two hand-offs per request); for a
gateway every request is on the hot path, so the same framing is fed from asyncio pipe transports instead. Falls
back to the SDK's own streams when stdin or stdout is not a pipe (e.g. a regular file).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from mcp.server.stdio import stdio_server

__all__ = ["pipe_stdio"]

_LINE_LIMIT = 1 << 26  # one JSON-RPC message per line; large results are legitimate


class _Lines:
    """`async for line in ...` over a StreamReader (what stdio_server expects of its stdin)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """`await write(text)` / `await flush()` over a StreamWriter (what stdio_server expects of its stdout)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of `stdio_server`, over asyncio pipes when stdin and stdout are pipes."""
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
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    async with stdio_server(stdin=cast(Any, _Lines(reader)), stdout=cast(Any, _Writer(writer))) as streams:
        yield streams
