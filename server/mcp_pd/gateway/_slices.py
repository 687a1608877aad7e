"""`json.loads` of a big line in slices: the same value, with no single step long enough to hold other threads up.

`json.loads` is one C call: in a worker thread it still holds the GIL from start to end (about 0.1 s for a 60 MiB
result), and the event loop, which serves every other client, waits that long. Most of a big MCP message is a few
long strings (a file's text, an image's data), so here each string of `LONG` characters or more is decoded in
windows of at most `WINDOW` characters (the C decoder's own `scanstring`, told where to stop by a quote appended
to the window), and the rest, with those strings replaced by placeholders, is decoded at once; between steps the
interpreter can switch threads. A message made of very many strings (past `MAX_STRINGS`: a table of rows as
structured content) is instead walked (`_Walker`): its arrays and objects are read here a member at a time, each
member by the C decoder's own `scan_once`, so no step is longer than one member (600,000 rows are 600,000 short
steps, where `json.loads` held the GIL for the whole table). A message under `WALK_MIN` bytes, or not in UTF-8, is
decoded by `json.loads` at once.
"""

from __future__ import annotations

import codecs
import gc
import json
import re
import secrets
import threading
from _json import scanstring  # the C decoder of one JSON string (what json.loads itself runs)
from json.scanner import make_scanner  # the C decoder of one JSON value (likewise)
from typing import Any, Final

__all__ = ["LONG", "WALK_MIN", "loads"]

LONG: Final = 64 * 1024  # characters: a string this long is decoded in windows, and held out of the rest
WINDOW: Final = 1 << 20  # characters decoded (or bytes turned into text) in one step
FIRST_WINDOW: Final = 4096  # most strings are short: they are found whole in a window this size
MAX_STRINGS: Final = 10_000
WALK_MIN: Final = 1 << 20  # bytes: a smaller message of many strings is decoded by `json.loads` at once
WIDE: Final = 64  # members: past these, a container's members are decoded whole, each by one `scan_once`
_HIGH: Final = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW: Final = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def loads(
    data: bytes, *, window: int = WINDOW, long: int = LONG, max_strings: int = MAX_STRINGS, walk_min: int = WALK_MIN
) -> Any:
    """`json.loads(data)`, decoded a slice at a time (module doc). Raises ValueError as `json.loads` does."""
    if json.detect_encoding(data[:4]) != "utf-8" or data[:3] == codecs.BOM_UTF8:
        return json.loads(data)
    tag = "\ue000" + secrets.token_hex(16) + ":"  # a placeholder's start: no string of the message has it
    held: dict[str, str] = {}
    skeleton: list[bytes] = []
    copied = 0  # data before this is in `skeleton`
    found = data.find(b'"')
    for _ in range(max_strings):
        if found < 0:
            break
        value, end = _string(data, found + 1, window, long)
        if value is not None:
            placeholder = f"{tag}{len(held)}"
            held[placeholder] = value
            skeleton += (data[copied:found], b'"', placeholder.encode(), b'"')
            copied = end
        found = data.find(b'"', end)
    else:
        if found >= 0:  # very many strings: a member at a time (or, for a small message, in one go)
            return json.loads(data) if len(data) < walk_min else _Walker(data).document()
    if not held:
        return json.loads(data)
    skeleton.append(data[copied:])
    return _restore(json.loads(b"".join(skeleton)), tag, held)


def _string(data: bytes, start: int, window: int, long: int) -> tuple[str | None, int]:
    """The string whose opening quote is just before `start`: (its value when it is `long` characters or longer,
    else None; the index after its closing quote). Raises ValueError where `json.loads` would."""
    chunks: list[str] = []
    size = 0
    at = start
    width = min(FIRST_WINDOW, window)
    while True:
        value, closed, stop = _window(data, at, min(at + width, len(data)))
        chunks.append(value)
        size += len(value)
        if closed:
            return ("".join(chunks) if size >= long else None), stop + 1
        if stop >= len(data):
            raise json.JSONDecodeError("Unterminated string starting at", data.decode(errors="replace"), start - 1)
        at = stop
        width = min(width * 4, window)


def _window(data: bytes, at: int, cut: int) -> tuple[str, bool, int]:
    """Decode `data[at:cut]` as the inside of a string: (value, whether the string's closing quote was in it, the
    index of that quote or else where the window ended). A cut inside a UTF-8 sequence or an escape (`\\`,
    `\\uXX`) is moved back to where it began; one between the two halves of an escaped surrogate pair, past them."""
    while cut < len(data) and cut > at and data[cut] & 0xC0 == 0x80:
        cut -= 1  # a UTF-8 continuation byte: the character began before
    while True:
        piece = data[at:cut].decode("utf-8", "surrogatepass")  # as `json.loads` decodes bytes
        try:
            value, end = scanstring(piece + '"', 0, True)
        except ValueError:
            back = data.rfind(b"\\", max(at, cut - 6), cut)
            if back <= at or cut >= len(data):
                raise  # not a cut inside an escape: the message itself is wrong
            cut = back
            continue
        if end <= len(piece):  # the string's own closing quote, `end - 1` characters in
            return value, True, at + len(piece[: end - 1].encode("utf-8", "surrogatepass"))
        if value and "\ud800" <= value[-1] <= "\udbff" and _LOW.match(data, cut) and _HIGH.match(data, cut - 6):
            cut += 6  # an escaped pair's high half ends the window and its low half begins the next: both in this one
            continue
        return value, False, cut


def _restore(value: Any, tag: str, held: dict[str, str]) -> Any:
    """`value` with each placeholder (a key or a string) replaced by the string it holds."""

    def swap(item: Any) -> Any:
        return held.pop(item, item) if isinstance(item, str) and item.startswith(tag) else item

    root = [swap(value)]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                node[index] = item = swap(item)
                if isinstance(item, dict | list):
                    stack.append(item)
        else:
            if any(isinstance(key, str) and key.startswith(tag) for key in node):
                items = [(swap(key), item) for key, item in node.items()]
                node.clear()
                node.update(items)
            for key, item in node.items():
                item = swap(item)
                node[key] = item
                if isinstance(item, dict | list):
                    stack.append(item)
    return root[0]


_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_COLLECTION: Final = threading.Lock()


class _Walker:
    """A JSON document read a member at a time: arrays and objects here, each member by the C decoder
    (`scan_once`, what `json.loads` runs for every value), so the GIL is free between members. A container's first
    `WIDE` members that are themselves containers are walked into too (the envelope, the result, its structured
    content, a table in it: a few narrow levels above one wide one); past `WIDE` members a container is a table,
    and each member is one `scan_once`. The values are `json.loads`'s (its scanner, `strict`, NaN and Infinity
    accepted); errors are its `JSONDecodeError`s. Nesting too deep for recursion here falls back to `json.loads`."""

    def __init__(self, data: bytes) -> None:
        self.text = data.decode("utf-8", "surrogatepass")  # as `json.loads` decodes bytes
        self.scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: the C class only

    def document(self) -> Any:
        # A table of rows is a million containers at once: each full collection during the walk (the collector runs
        # in whichever thread allocates, holding the GIL) would walk them all, about a second in one step. The walk
        # runs with automatic collection off, and what it built is then frozen (never walked by a collection again;
        # reference counting still frees it, since decoded JSON holds no cycles). The young garbage is collected
        # first, while it is little, so that little else is frozen with the table. One walk at a time.
        with _COLLECTION:
            enabled = gc.isenabled()
            gc.collect(1)
            gc.disable()
            try:
                return self._document()
            finally:
                gc.freeze()
                if enabled:
                    gc.enable()

    def _document(self) -> Any:
        try:
            value, end = self._value(self._skip(0), walk=True)
        except RecursionError:
            return json.loads(self.text)
        end = self._skip(end)
        if end != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, end)
        return value

    def _skip(self, at: int) -> int:
        match = _WHITESPACE.match(self.text, at)
        return at if match is None else match.end()

    def _value(self, at: int, *, walk: bool) -> tuple[Any, int]:
        opening = self.text[at : at + 1]
        if walk and opening == "[":
            return self._array(at + 1)
        if walk and opening == "{":
            return self._object(at + 1)
        try:
            return self.scan(self.text, at)  # type: ignore[no-any-return,unused-ignore]
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", self.text, stop.value) from None

    def _array(self, at: int) -> tuple[list[Any], int]:
        values: list[Any] = []
        at = self._skip(at)
        if self.text[at : at + 1] == "]":
            return values, at + 1
        while True:
            value, at = self._value(at, walk=len(values) < WIDE)
            values.append(value)
            at = self._skip(at)
            delimiter = self.text[at : at + 1]
            if delimiter == "]":
                return values, at + 1
            if delimiter != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", self.text, at)
            at = self._skip(at + 1)

    def _object(self, at: int) -> tuple[dict[str, Any], int]:
        values: dict[str, Any] = {}
        members = 0
        at = self._skip(at)
        if self.text[at : at + 1] == "}":
            return values, at + 1
        while True:
            if self.text[at : at + 1] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", self.text, at)
            key, at = scanstring(self.text, at + 1, True)
            at = self._skip(at)
            if self.text[at : at + 1] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", self.text, at)
            value, at = self._value(self._skip(at + 1), walk=members < WIDE)
            values[key] = value  # a repeated key: the last one wins, as in `json.loads`
            members += 1
            at = self._skip(at)
            delimiter = self.text[at : at + 1]
            if delimiter == "}":
                return values, at + 1
            if delimiter != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", self.text, at)
            at = self._skip(at + 1)
