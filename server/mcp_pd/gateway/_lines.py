"""JSON-RPC lines read from a pipe: linear, capped, and big ones decoded off the event loop.

Both ends of the gateway that speak stdio read through `LineReader`: an upstream's stdout (`_stdout.py`) and the
client's stdin when the gateway is served over stdio (`_stdio.py`). Each byte is searched for a newline once (the
search resumes where the last one stopped, so a 60 MB line costs 60 MB of searching, not 60 MB per chunk); a line
may be at most `MAX_LINE` bytes; past that it is never buffered but skipped up to its newline, and handed over as
an `Oversized` (its size and its first and last few KiB, enough to tell which request it answers), so whoever reads
can fail that request with a clear error. `decode` parses a line of `OFF_LOOP` bytes or more in a worker thread, a
slice at a time (`_slices.py`: one `json.loads` would hold the GIL, and so the event loop, for all of it); callers
await it before reading on, so messages keep their order. `parse` and `dump` are `json.loads` and `json.dumps` for
the small lines of the hot path, done by pydantic-core's parser and serializer (about a fifth and a tenth of the
time), with `json`'s own answer wherever the two would differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
from pydantic_core import PydanticSerializationError, from_json, to_json

from ._slices import loads

__all__ = [
    "CHUNK",
    "KEEP",
    "MAX_LINE",
    "OFF_LOOP",
    "Frame",
    "LineReader",
    "Oversized",
    "decode",
    "dump",
    "frame",
    "megabytes",
    "mend",
    "parse",
    "undecodable",
]

# One message per line and results of tens of MB are legitimate (a file read whole); past this a line is refused.
MAX_LINE: Final = 64 << 20
# Lines at least this long are decoded in a worker thread: below it a decode costs well under a millisecond.
OFF_LOOP: Final = 1 << 20
CHUNK: Final = 1 << 16
KEEP: Final = 4096  # of an oversized line: its first and last bytes, which hold its id

# `{"jsonrpc":"2.0","id":ID,"result"...` (ids first, as the SDKs write them) or `{"result":...,"id":ID}` (ids last).
_ID = rb'(-?\d+|"(?:[^"\\]|\\.)*")'
_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
_HEAD_ID = re.compile(rb"\A\s*\{\s*" + _JSONRPC + rb'"id"\s*:\s*' + _ID + rb'\s*,\s*"(result|error|method)"')
_HEAD_KIND = re.compile(rb"\A\s*\{\s*" + _JSONRPC + rb'"(result|error|method)"')
_TAIL_ID = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')


def megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


# What a message is when it cannot be decoded: ("response", id), ("request", id or None for a notification).
Frame = tuple[Literal["response", "request"], int | str | None]


@dataclass(frozen=True)
class Oversized:
    """A line longer than the reader's limit, skipped: its size and its first and last bytes."""

    size: int
    limit: int
    head: bytes
    tail: bytes

    def frame(self) -> Frame | None:
        """("response", id) for an answer, ("request", id or None) for a request or notification, None when its
        first and last bytes do not say."""
        return frame(self.head, self.tail)

    def describe(self) -> str:
        """`80.1 MiB, over the limit of 64.0 MiB per message`."""
        return f"{megabytes(self.size)}, over the limit of {megabytes(self.limit)} per message"


def frame(head: bytes, tail: bytes) -> Frame | None:
    """What a message is, from its first and last bytes alone (for one that cannot be decoded: too long, not UTF-8,
    not JSON): ("response", id) for an answer, ("request", id or None) for a request or notification, None when
    they do not say."""
    found = _HEAD_ID.match(head)
    if found is not None:
        kind: Literal["response", "request"] = "request" if found[2] == b"method" else "response"
        return kind, _id(found[1])
    leading = _HEAD_KIND.match(head)
    if leading is None:
        return None
    late = _TAIL_ID.search(tail)
    request_id = _id(late[1]) if late is not None else None
    if leading[1] == b"method":
        return "request", request_id
    return ("response", request_id) if request_id is not None else None


def undecodable(line: bytes) -> tuple[tuple[Literal["response", "request"], int | str], str] | None:
    """For a line that cannot be decoded: what it is, when its ends say which request it is or answers, and why it
    cannot be read ("is not valid UTF-8 (byte 0xe9 at offset 71)", "is not valid JSON"); None when they do not
    say (noise)."""
    kind, request_id = frame(line[:KEEP], line[-KEEP:]) or (None, None)
    if kind is None or request_id is None:
        return None
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (kind, request_id), f"is not valid UTF-8 (byte 0x{line[exc.start]:02x} at offset {exc.start})"
    return (kind, request_id), "is not valid JSON"


def _id(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


class LineReader:
    """`async for line in LineReader(read)`: each complete line (without its newline) as bytes, or an `Oversized`
    for a line longer than `limit`. `read(n)` returns up to n bytes, b"" at the end of the stream; a last line
    without a newline is still handed over."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]], *, limit: int = MAX_LINE, chunk: int = CHUNK) -> None:
        self._read = read
        self.limit = limit
        self._chunk = chunk
        self._buffer = bytearray()
        self._searched = 0  # how much of the buffer is known to hold no newline
        self._eof = False
        self._skipping = False

    @property
    def between_lines(self) -> bool:
        """Whether the next byte read starts a line: nothing of a line is held or being skipped."""
        return not self._buffer and not self._skipping

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> bytes | Oversized:
        while True:
            buffer = self._buffer
            end = buffer.find(b"\n", self._searched)
            if end >= 0:
                self._searched = 0
                line = bytes(memoryview(buffer)[:end])
                if end < OFF_LOOP:
                    del buffer[: end + 1]  # from the front of a bytearray: no copy of the rest
                else:  # a fresh buffer: the old one's memory is not kept behind the next (small) lines
                    self._buffer = bytearray(memoryview(buffer)[end + 1 :])
                return line
            self._searched = len(buffer)
            if len(buffer) > self.limit:
                return await self._skip()
            if self._eof:
                break
            chunk = await self._read(self._chunk)
            if not chunk:
                self._eof = True
                continue
            buffer += chunk
        if self._buffer:
            line, self._buffer, self._searched = bytes(self._buffer), bytearray(), 0
            return line
        raise StopAsyncIteration

    async def _skip(self) -> Oversized:
        """Drop the rest of an over-long line (the buffer holds its start, no newline), keeping its ends."""
        buffer = self._buffer
        head, tail, size = bytes(buffer[:KEEP]), bytes(buffer[-KEEP:]), len(buffer)
        self._buffer, self._searched, self._skipping = bytearray(), 0, True
        try:
            while not self._eof:
                chunk = await self._read(self._chunk)
                if not chunk:
                    self._eof = True
                    break
                end = chunk.find(b"\n")
                part = chunk if end < 0 else chunk[:end]
                size += len(part)
                tail = (tail + part)[-KEEP:]
                if end >= 0:
                    self._buffer += chunk[end + 1 :]
                    break
        finally:
            self._skipping = False
        return Oversized(size, self.limit, head, tail)


def parse(line: bytes) -> Any:
    """`json.loads(line)`, faster. What pydantic-core's parser refuses (a lone surrogate escape, nesting past its
    depth limit, bytes that are not UTF-8) is handed to `json.loads`, so the value and the errors are its own.
    Raises ValueError (RecursionError for nesting too deep even for `json`)."""
    try:
        return from_json(line)
    except ValueError:
        return mend(json.loads(line), line)


def dump(message: Any) -> bytes:
    """`json.dumps(message, separators=(",", ":")).encode()` for a value parsed from JSON, faster: the same JSON
    value (Infinity and NaN written as `json` writes them), non-ASCII text as UTF-8 rather than escaped; what
    pydantic-core cannot write (a lone surrogate, which `parse` may return) is written by `json`."""
    try:
        return to_json(message, inf_nan_mode="constants")
    except PydanticSerializationError:
        return json.dumps(message, separators=(",", ":")).encode()


async def decode(line: bytes) -> Any:
    """`json.loads(line)`, in a worker thread and in slices for a line of `OFF_LOOP` bytes or more. Raises
    ValueError."""
    if len(line) < OFF_LOOP:
        return mend(json.loads(line), line)
    return mend(await anyio.to_thread.run_sync(loads, line), line)


# A JSON escape of a surrogate code unit: only a line that has one can hold a lone surrogate once read.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def mend(value: Any, line: bytes) -> Any:
    """`value` read from `line`, with every lone surrogate (JSON's "\\ud800" alone, which no UTF-8 writer can
    write: the SDK's transports fail on it) made U+FFFD, in place; the line is searched first, so a line without
    such an escape costs one scan of its bytes."""
    if _SURROGATE_ESCAPE.search(line) is None:
        return value
    if isinstance(value, str):
        return _mended(value)
    stack = [value]
    while stack:  # iterative: a value json could read may be nested deeper than this function could recurse
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in list(items):
            if isinstance(item, str):
                node[key] = _mended(item)
            elif isinstance(item, dict | list):
                stack.append(item)
        if isinstance(node, dict):
            for key, mended in [(k, _mended(k)) for k in node if isinstance(k, str)]:
                if mended != key:
                    node[mended] = node.pop(key)
    return value


def _mended(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
