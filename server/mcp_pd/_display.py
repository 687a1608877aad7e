"""Names from outside (file and folder names, above all) as they may be printed: one helper, used wherever one is.

A folder anyone could write to may hold a file whose name carries terminal escape sequences, a newline that forges
a log line, a bidi override that reorders what the operator reads, or bytes that are not UTF-8. Printed raw, any of
them acts on the operator's terminal or log (issue 39.14). Knows nothing else.
"""

from __future__ import annotations

__all__ = ["printable"]


def printable(value: object) -> str:
    """`str(value)` with every character a terminal or a log reader could act on escaped: controls (C0, DEL, C1, so
    newlines and ESC too), format characters (bidi overrides, zero-width ones), line and paragraph separators and
    undecodable bytes (surrogates), each as `\\xNN` or `\\uNNNN`; everything else, non-ASCII letters included, as is."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
