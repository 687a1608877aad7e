"""The HTTP lane for large results: their big strings written by the transport in slices, not by the SDK at once.

Over Streamable HTTP the SDK turns a tool result into wire bytes in single steps on the event loop: pydantic dumps
the response, sse_starlette splits and copies the SSE event, uvicorn copies it out. For a 60 MiB text that is
about half a second in which no other client is served. The lane keeps the whole SDK path (auth, Host/Origin,
sessions, the extension's admission, routing, metrics: the call is the SDK's from start to end) and takes out of it
only the big strings themselves:

- `instrument` wraps the `tools/call` handler from outside, after everything else (metrics see the real result).
  A result that answers an HTTP request and carries a string of at least `threshold` characters (a text, an
  image's or audio's data, an embedded resource's text or blob) leaves the handler with that string replaced by a
  marker: a random, single-use token (nobody else can know or send it), its string held by the lane until the
  response carrying the marker is written or the request that made it ends.
- `app` wraps the SDK's ASGI app: in that request's response body (the SSE event in the handshake era, the JSON
  body in the 2026-07-28 era), the quoted marker is replaced by the string JSON-encoded a slice at a time with a
  turn of the event loop between slices, and written a slice at a time (uvicorn waits for the socket between
  them), one message of the response at a time (a keep-alive ping waits for the event's last slice). A JSON
  body's `content-length` is set to the size actually written.

The encoding is the one the SDK sends (a JSON string; UTF-8 as pydantic writes it, `\\uXXXX` for what UTF-8 cannot
carry), inside one SSE `data:` line (JSON escapes every line break). Stdio has its own lane (`_lane.py`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio.lowlevel
import mcp_types as types
from mcp.server.lowlevel import Server
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["THRESHOLD", "HttpLane"]

THRESHOLD: Final = 1 << 20  # characters: smaller strings cost the SDK a few milliseconds at most
SLICE: Final = 1 << 20  # characters encoded, and bytes written, between two turns of the event loop
_KEY: Final = "mcp_pd.http_lane"  # the ASGI scope entry holding one request's deferred strings
_PREFIX: Final = "mcp-pd-deferred:"
_MARKER: Final = re.compile(rb'"mcp-pd-deferred:([0-9a-f]{32})"')

Handler = Callable[[Any, Any], Awaitable[Any]]


class _Held(set[str]):
    """The tokens of one request's deferred strings (a type of its own: nothing else in a scope is mistaken for it);
    the strings themselves are the lane's until that request ends."""


class HttpLane:
    """Large strings of tool results taken out of the SDK's serialization and written in slices (module doc)."""

    def __init__(self, threshold: int = THRESHOLD, slice_size: int = SLICE) -> None:
        self.threshold = threshold
        self.slice_size = slice_size
        self.taken = 0  # strings the lane wrote (the tests and the benchmark read it)
        # Deferred strings by token, for as long as the request that made each is open. Process-wide: the SDK sends
        # a response on the stream of the request its id names, and a client that reuses an id gets the first
        # request's answer in the second's response; a random token cannot be guessed or sent by anyone else.
        self.strings: dict[str, str] = {}

    def instrument(self, server: Server[Any]) -> None:
        """Wrap `server`'s `tools/call` handler (call it last, after the extension and the metrics)."""
        entry = server.get_request_handler("tools/call")
        if entry is not None:
            server.add_request_handler("tools/call", entry.params_type, self._wrap(entry.handler))

    def app(self, app: ASGIApp) -> ASGIApp:
        """`app` (the SDK's Streamable HTTP app) writing the deferred strings of its responses."""
        return _Writer(app, self)

    def _wrap(self, handler: Handler) -> Handler:
        async def deferring(ctx: Any, params: Any) -> Any:
            result = await handler(ctx, params)
            scope = getattr(getattr(ctx, "request", None), "scope", None)
            held = scope.get(_KEY) if isinstance(scope, dict) else None
            if isinstance(held, _Held) and isinstance(result, types.CallToolResult):
                return self._defer(result, held)
            return result  # not an HTTP request through `app` (or not a plain result): the SDK writes it all

        return deferring

    def _defer(self, result: types.CallToolResult, held: _Held) -> types.CallToolResult:
        content: list[types.ContentBlock] = []
        changed = False
        for block in result.content:
            new = self._block(block, held)
            changed = changed or new is not block
            content.append(new)
        # Shallow copies: the handler's own objects (which the gateway may still hold) keep their strings.
        return result.model_copy(update={"content": content}) if changed else result

    def _block(self, block: types.ContentBlock, held: _Held) -> types.ContentBlock:
        if isinstance(block, types.TextContent) and len(block.text) >= self.threshold:
            return block.model_copy(update={"text": self._hold(block.text, held)})
        if isinstance(block, types.ImageContent | types.AudioContent) and len(block.data) >= self.threshold:
            return block.model_copy(update={"data": self._hold(block.data, held)})
        if isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents) and len(resource.text) >= self.threshold:
                resource = resource.model_copy(update={"text": self._hold(resource.text, held)})
            elif isinstance(resource, types.BlobResourceContents) and len(resource.blob) >= self.threshold:
                resource = resource.model_copy(update={"blob": self._hold(resource.blob, held)})
            if resource is not block.resource:
                return block.model_copy(update={"resource": resource})
        return block

    def _hold(self, text: str, held: _Held) -> str:
        token = secrets.token_hex(16)
        held.add(token)
        self.strings[token] = text
        return _PREFIX + token

    async def encoded(self, text: str) -> list[bytes]:
        """`text` as a JSON string (quotes included), in pieces of at most `slice_size` characters, encoded one
        at a time with a turn of the event loop after each: no single step holds the loop for long."""
        pieces = [b'"']
        for start in range(0, len(text), self.slice_size):
            part = text[start : start + self.slice_size]
            try:
                pieces.append(json.dumps(part, ensure_ascii=False)[1:-1].encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
                pieces.append(json.dumps(part)[1:-1].encode("ascii"))
            await anyio.lowlevel.checkpoint()
        pieces.append(b'"')
        return pieces


class _Writer:
    """The ASGI side of the lane: gives each HTTP request a place for its deferred strings, and writes them into
    its response where the markers are."""

    def __init__(self, app: ASGIApp, lane: HttpLane) -> None:
        self.app = app
        self.lane = lane

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held = _Held()
        scope[_KEY] = held
        start: Message | None = None  # a JSON response's head, held until its body says how long it is
        # One message written at a time: sse_starlette's keep-alive ping (its own task) must not land between the
        # slices of an event the lane is writing.
        lock = anyio.Lock()

        async def write(message: Message) -> None:
            async with lock:
                await written(message)

        async def written(message: Message) -> None:
            nonlocal start
            if not self.lane.strings:
                await send(message)
                return
            if message["type"] == "http.response.start" and _has_length(message):
                start = message
                return
            if message["type"] == "http.response.body":
                body: bytes = message.get("body", b"")
                parts = await self._parts(body)
                if parts is not None:
                    if start is not None:
                        start = _with_length(start, sum(len(part) for part in parts))
                        await send(start)
                        start = None
                    await self._send(parts, send, more=message.get("more_body", False))
                    return
            if start is not None:
                await send(start)
                start = None
            await send(message)

        try:
            await self.app(scope, receive, write)
        finally:  # strings this request's response never carried (cancelled, failed) go with it
            for token in held:
                self.lane.strings.pop(token, None)

    async def _parts(self, body: bytes) -> list[bytes] | None:
        """`body` with each marker replaced by its string, in pieces; None when it has none."""
        parts: list[bytes] = []
        offset = 0
        for found in _MARKER.finditer(body):
            text = self.lane.strings.pop(found.group(1).decode("ascii"), None)  # single use
            if text is None:
                continue  # not a string the lane holds: left as it is
            parts.append(body[offset : found.start()])
            parts += await self.lane.encoded(text)
            offset = found.end()
            self.lane.taken += 1
        if offset == 0:
            return None
        parts.append(body[offset:])
        return parts

    async def _send(self, parts: list[bytes], send: Send, *, more: bool) -> None:
        last = len(parts) - 1
        for index, part in enumerate(parts):
            if part or index == last:
                await send({"type": "http.response.body", "body": part, "more_body": more or index < last})
            parts[index] = b""  # written: let it go
            await anyio.lowlevel.checkpoint()


def _has_length(message: Message) -> bool:
    return any(name.lower() == b"content-length" for name, _ in message.get("headers", ()))


def _with_length(message: Message, size: int) -> Message:
    headers = [(n, v) for n, v in message.get("headers", ()) if n.lower() != b"content-length"]
    return {**message, "headers": [*headers, (b"content-length", str(size).encode())]}
