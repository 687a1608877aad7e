"""The one cursor codec behind tools/list and browse_tools (mcp_pd._paging)."""

from __future__ import annotations

from mcp_pd._paging import decode_cursor, encode_cursor


def test_a_cursor_names_its_position_in_its_own_listing_only() -> None:
    cursor = encode_cursor("browse", 50)
    assert decode_cursor("browse", cursor) == 50
    assert decode_cursor("tools/list", cursor) is None  # never replayed against another listing
    assert decode_cursor("tools/list", encode_cursor("tools/list", 0)) == 0


def test_anything_else_is_not_a_cursor() -> None:
    for junk in ("", "pd1:", "pd1:!!!", "pd1:" + "A" * 300, "browse:5", "pd1:YnJvd3NlOi0x", "pd1:YnJvd3NlOng="):
        assert decode_cursor("browse", junk) is None, junk
