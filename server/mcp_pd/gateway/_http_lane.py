"""The HTTP lane for large results: their content written by the transport in slices, not by the SDK at once.

Over Streamable HTTP the SDK turns a tool result into wire bytes in single steps on the event loop: pydantic dumps
the result (and dumps it again to check it against the protocol version), the response is dumped to JSON,
sse_starlette splits and copies the SSE event, uvicorn copies it out. For a 60 MiB text that is about half a second
in which no other client is served; for 600,000 rows of `structuredContent` or sixty 1 MB blocks, more. The lane
keeps the whole SDK path (auth, Host/Origin, sessions, the extension's admission, routing, metrics: the call is the
SDK's from start to end) and takes out of it only what is big:

- `instrument` wraps the `tools/call` handler from outside, after everything else (metrics see the real result).
  A result that answers an HTTP request and is big (its strings add up to `threshold` characters or more, or it
  has too many blocks or structured values to count: `_size`) leaves the handler with its `content` replaced by
  one placeholder block and its `structuredContent` by a one-key placeholder object, each naming a random,
  single-use token (nobody else can know or send it); the lane holds the real values until the response carrying
  the placeholder is written or the request that made it ends. A result finished after its request ended (the
  client hung up while the upstream worked) is emptied at once: nobody can receive it, and nothing of it is held.
- `app` wraps the SDK's ASGI app: in that request's response body (the SSE event in the handshake era, the JSON
  body in the 2026-07-28 era), each placeholder is replaced by its value, JSON-encoded by `Encoder` a slice at a
  time and written as it is encoded (uvicorn waits for the socket between slices, so a client that reads slowly
  holds about one slice, and one that stops reading is cut off by the server's write timeout, `_http.py`), one
  message of the response at a time (a keep-alive ping waits for the event's last slice). A JSON body's
  `content-length` is dropped (its size is known only once written): it goes out chunked.

The encoding is JSON as the SDK writes it (UTF-8; `\\uXXXX` for what UTF-8 cannot carry; non-finite numbers as
`null`), inside one SSE `data:` line (JSON escapes every line break). Stdio has its own lane (`_lane.py`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import anyio.lowlevel
import mcp_types as types
import pydantic_core
from mcp.server.lowlevel import Server
from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["THRESHOLD", "Encoder", "HttpLane"]

THRESHOLD: Final = 1 << 20  # characters a result's strings add up to: smaller ones cost the SDK a few ms at most
# Bytes encoded, and written, between two turns of the event loop: about 1 ms of work, which another client's request
# waits behind at worst (a 1 MiB slice cost about 4 ms, which a loaded machine stretches tenfold), and under the
# allocator's threshold for buffers of their own (mcp_pd/_memory.py), so each slice's buffers are reused.
SLICE: Final = 256 << 10
MAX_COUNTED: Final = 4096  # blocks or structured values: a result with more is big, whatever its strings
_KEY: Final = "mcp_pd.http_lane"  # the ASGI scope entry holding one request's deferred values
_PREFIX: Final = "mcp-pd-deferred:"
# The placeholders as both eras' SDK writes them (compact JSON; the block's two fields in the order of the model or,
# as the SDK's check against the protocol version re-dumps them, of the alphabet): the content's one text block, and
# the structured content's one key.
_MARKER: Final = re.compile(
    rb'\[\{(?:"type":"text",)?"text":"mcp-pd-deferred:(?P<content>[0-9a-f]{32})"(?:,"type":"text")?\}\]'
    rb'|\{"mcp-pd-deferred:(?P<structured>[0-9a-f]{32})":0\}'
)

Handler = Callable[[Any, Any], Awaitable[Any]]


class _Held:
    """One HTTP request's deferred values, by token: the lane writes them into its response, and drops whatever
    is left when the request ends (`open` turns False: a result finished later is not held at all)."""

    __slots__ = ("open", "values")

    def __init__(self) -> None:
        self.values: dict[str, tuple[str, Any]] = {}  # token -> (placeholder kind, value)
        self.open = True


class HttpLane:
    """Large tool results taken out of the SDK's serialization and written in slices (module doc)."""

    def __init__(self, threshold: int = THRESHOLD, slice_size: int = SLICE) -> None:
        self.threshold = threshold
        self.slice_size = slice_size
        self.taken = 0  # values the lane wrote (the tests and the benchmark read it)
        # Every open request's deferred values, by token. Process-wide: the SDK sends a response on the stream of
        # the request its id names, and a client that reuses an id gets the first request's answer in the second's
        # response; a random token cannot be guessed or sent by anyone else.
        self.held: dict[int, _Held] = {}

    @property
    def holding(self) -> int:
        """How many deferred values the lane holds now (the tests read it: none once every request has ended)."""
        return sum(len(held.values) for held in self.held.values())

    def instrument(self, server: Server[Any]) -> None:
        """Wrap `server`'s `tools/call` handler (call it last, after the extension and the metrics)."""
        entry = server.get_request_handler("tools/call")
        if entry is not None:
            server.add_request_handler("tools/call", entry.params_type, self._wrap(entry.handler))

    def app(self, app: ASGIApp) -> ASGIApp:
        """`app` (the SDK's Streamable HTTP app) writing the deferred values of its responses."""
        return _Writer(app, self)

    def _wrap(self, handler: Handler) -> Handler:
        async def deferring(ctx: Any, params: Any) -> Any:
            result = await handler(ctx, params)
            scope = getattr(getattr(ctx, "request", None), "scope", None)
            held = scope.get(_KEY) if isinstance(scope, dict) else None
            if isinstance(held, _Held) and isinstance(result, types.CallToolResult):
                if not held.open:
                    # Its request is over (the client hung up): the SDK would serialize it for nobody.
                    return result.model_copy(update={"content": [], "structured_content": None})
                return self._defer(result, held)
            return result  # not an HTTP request through `app` (or not a plain result): the SDK writes it all

        return deferring

    def _defer(self, result: types.CallToolResult, held: _Held) -> types.CallToolResult:
        if _size(result, self.threshold) < self.threshold:
            return result
        update: dict[str, Any] = {}
        if result.content:
            marker = self._hold("content", list(result.content), held)
            update["content"] = [types.TextContent(type="text", text=marker)]
        if result.structured_content is not None:
            update["structured_content"] = {self._hold("structured", result.structured_content, held): 0}
        # A shallow copy: the handler's own objects (which the gateway may still hold) are left as they are.
        return result.model_copy(update=update)

    def _hold(self, kind: str, value: Any, held: _Held) -> str:
        token = secrets.token_hex(16)
        held.values[token] = (kind, value)
        return _PREFIX + token

    def encoder(self) -> Encoder:
        return Encoder(self.slice_size)


def _size(result: types.CallToolResult, enough: int) -> int:
    """About how many characters `result`'s content and structured content hold: the length of their strings,
    counted until `enough` is reached; `enough` when there are more than `MAX_COUNTED` blocks or values to count
    (walking them all would cost what the lane spares)."""
    if len(result.content) > MAX_COUNTED:
        return enough
    size = 0
    for block in result.content:
        if isinstance(block, types.TextContent):
            size += len(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            size += len(block.data)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            size += len(resource.text if isinstance(resource, types.TextResourceContents) else resource.blob)
    if result.structured_content is None or size >= enough:
        return size
    stack: list[Any] = [result.structured_content]
    for _ in range(MAX_COUNTED):
        if not stack or size >= enough:
            return size
        value = stack.pop()
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, dict):
            size += sum(len(key) for key in value if isinstance(key, str))
            stack += value.values()
        elif isinstance(value, list | tuple):
            stack += value
        else:
            size += 8  # a number, true, false, null
    return size if not stack else enough


def _plain(value: Any) -> Any:
    """A content block as the SDK dumps it (its strings shared, not copied); anything else as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _json(value: Any) -> bytes:
    """`value` as compact JSON in one step, as the SDK writes it (pydantic's encoder); `\\uXXXX` where UTF-8
    cannot carry a character (a lone surrogate)."""
    try:
        return pydantic_core.to_json(value, inf_nan_mode="null")
    except pydantic_core.PydanticSerializationError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


class Encoder:
    """A JSON value (content blocks as models, or plain JSON data) encoded a piece at a time, no piece costing
    much more than `slice_size` bytes of output: a long string is encoded in slices of it, and a big array or
    object in runs of members, each run as long as the last ones suggest (twice as many while they came out
    small, half as many when one came out big; a member that is itself an array or object is walked into when
    runs are down to one member)."""

    def __init__(self, slice_size: int = SLICE) -> None:
        self.slice_size = slice_size
        self.count = 0  # bytes produced so far

    def pieces(self, value: Any) -> Iterator[bytes]:
        """`value`'s JSON, in pieces (module doc: the encoding)."""
        value = _plain(value)
        if isinstance(value, str) and len(value) >= self.slice_size:
            yield from self._string(value)
        elif isinstance(value, dict) and value:
            yield from self._members(list(value.items()), b"{", b"}", is_object=True)
        elif isinstance(value, list | tuple) and value:
            yield from self._members(list(value), b"[", b"]", is_object=False)
        else:
            yield self._counted(_json(value))

    def _counted(self, piece: bytes) -> bytes:
        self.count += len(piece)
        return piece

    def _string(self, text: str) -> Iterator[bytes]:
        yield self._counted(b'"')
        for start in range(0, len(text), self.slice_size):
            part = text[start : start + self.slice_size]
            try:
                yield self._counted(json.dumps(part, ensure_ascii=False)[1:-1].encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
                yield self._counted(json.dumps(part)[1:-1].encode("ascii"))
        yield self._counted(b'"')

    def _members(self, members: list[Any], opening: bytes, closing: bytes, *, is_object: bool) -> Iterator[bytes]:
        yield self._counted(opening)
        run = 1
        index = 0
        while index < len(members):
            if index:
                yield self._counted(b",")
            before = self.count
            batch = members[index : index + run]
            index += run
            last = batch[0][1] if is_object else batch[0]
            if len(batch) == 1 and (
                isinstance(last, dict | list | tuple | BaseModel)
                or (isinstance(last, str) and len(last) >= self.slice_size)
            ):
                if is_object:
                    yield self._counted(_json(str(batch[0][0])) + b":")
                yield from self.pieces(last)
            else:
                whole = _json(dict(batch) if is_object else [_plain(member) for member in batch])
                yield self._counted(whole[1:-1])
            produced = self.count - before
            if produced < self.slice_size // 4:
                run *= 2
            elif produced > self.slice_size:
                run = max(1, run // 2)
        yield self._counted(closing)


class _Writer:
    """The ASGI side of the lane: gives each HTTP request a place for its deferred values, and writes them into
    its response where the placeholders are."""

    def __init__(self, app: ASGIApp, lane: HttpLane) -> None:
        self.app = app
        self.lane = lane

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held = _Held()
        scope[_KEY] = held
        self.lane.held[id(held)] = held
        start: Message | None = None  # a JSON response's head, held until its body says whether it has a value
        # One message written at a time: sse_starlette's keep-alive ping (its own task) must not land between the
        # slices of an event the lane is writing.
        lock = anyio.Lock()

        async def write(message: Message) -> None:
            async with lock:
                await written(message)

        async def written(message: Message) -> None:
            nonlocal start
            if not held.values:
                if start is not None:
                    await send(start)
                    start = None
                await send(message)
                return
            if message["type"] == "http.response.start" and _has_length(message):
                start = message
                return
            if message["type"] == "http.response.body":
                body: bytes = message.get("body", b"")
                if _MARKER.search(body) is not None:
                    if start is not None:  # the size is known once written: chunked instead
                        await send(_without_length(start))
                        start = None
                    await self._write(body, send, more=message.get("more_body", False), held=held)
                    return
            if start is not None:
                await send(start)
                start = None
            await send(message)

        try:
            await self.app(scope, receive, write)
        finally:  # values this request's response never carried (cancelled, failed, hung up) go with it
            held.open = False
            held.values.clear()
            self.lane.held.pop(id(held), None)

    async def _write(self, body: bytes, send: Send, *, more: bool, held: _Held) -> None:
        """`body` with each placeholder replaced by its value, written a slice at a time as it is encoded."""
        offset = 0
        pending: list[bytes] = []
        size = 0

        async def flush() -> None:
            nonlocal pending, size
            if pending:
                chunk, pending, size = b"".join(pending), [], 0
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await anyio.lowlevel.checkpoint()

        for found in _MARKER.finditer(body):
            kind = "content" if found.group("content") else "structured"
            entry = held.values.pop(found.group(kind).decode("ascii"), None)  # single use
            if entry is None or entry[0] != kind:
                continue  # not a value this request holds: left as it is
            pending.append(body[offset : found.start()])
            offset = found.end()
            encoder = self.lane.encoder()
            for piece in encoder.pieces(entry[1]):
                pending.append(piece)
                size += len(piece)
                if size >= self.lane.slice_size:
                    await flush()
            del entry
            self.lane.taken += 1
        pending.append(body[offset:])
        await send({"type": "http.response.body", "body": b"".join(pending), "more_body": more})


def _has_length(message: Message) -> bool:
    return any(name.lower() == b"content-length" for name, _ in message.get("headers", ()))


def _without_length(message: Message) -> Message:
    headers = [(n, v) for n, v in message.get("headers", ()) if n.lower() != b"content-length"]
    return {**message, "headers": headers}
