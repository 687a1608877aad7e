"""Opaque page cursors, one codec for every paged answer (`tools/list`, `browse_tools`).

A cursor is `pd1:` and the base64 of `<scope>:<position>`: the scope keeps a cursor of one listing from being
replayed against another, and anything that does not decode to this scope and a position >= 0 is invalid (the
caller says how to start over). Knows positions, nothing of what is listed.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

__all__ = ["decode_cursor", "encode_cursor"]

_PREFIX: Final = "pd1:"


def encode_cursor(scope: str, position: int) -> str:
    return _PREFIX + base64.urlsafe_b64encode(f"{scope}:{position}".encode()).decode()


def decode_cursor(scope: str, cursor: str) -> int | None:
    """The position `cursor` names in `scope`, or None when it is not one of ours for that scope."""
    if not cursor.startswith(_PREFIX) or len(cursor) > 200:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor[len(_PREFIX) :].encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    found, _, number = text.partition(":")
    return int(number) if found == scope and number.isdigit() else None
