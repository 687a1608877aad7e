"""`?tools=` parsing (spec 4.3; spec/interpretations.md I-3), with property-based tests."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_pd._uri import MAX_URI_LENGTH, SelectionError, is_descriptions_uri, parse_selection

BASE = "resource:///tool_descriptions"
names = st.from_regex(r"[A-Za-z0-9_.\-]{1,40}", fullmatch=True)


def parse(uri: str, max_tools: int = 64) -> list[str]:
    return parse_selection(uri, BASE, max_tools)


@pytest.mark.req("PD-4.3-01", "PD-4.3-02")
@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (f"{BASE}?tools=a", ["a"]),
        (f"{BASE}?tools=a,b,c", ["a", "b", "c"]),
        (f"{BASE}?tools= a , b ", ["a", "b"]),
        (f"{BASE}?tools=a,,b,", ["a", "b"]),
        (f"{BASE}?tools=a,b,a", ["a", "b"]),
        (f"{BASE}?tools=a&tools=b", ["a", "b"]),
        (f"{BASE}?tools=a%2Cb", ["a", "b"]),
        (f"{BASE}?x=1&tools=a#frag", ["a"]),
        (f"{BASE}?tools=a+b", ["a+b"]),
        (f"{BASE}?tools=", []),
        (BASE, []),
    ],
)
def test_examples(uri: str, expected: list[str]) -> None:
    assert parse(uri) == expected


@pytest.mark.req("PD-4.3-03")
def test_names_are_case_sensitive() -> None:
    assert parse(f"{BASE}?tools=Add,add,ADD") == ["Add", "add", "ADD"]


@pytest.mark.parametrize(
    ("uri", "code"),
    [
        (f"{BASE}?tools=" + "a" * 129, "INVALID_TOOL_NAME"),
        (f"{BASE}?tools=a%00b", "INVALID_TOOL_NAME"),
        (f"{BASE}?tools=%ff", "INVALID_TOOL_NAME"),
        (f"{BASE}?tools=" + ",".join(f"t{i}" for i in range(65)), "TOO_MANY_TOOLS"),
        (f"{BASE}?tools=" + "a," * MAX_URI_LENGTH, "URI_TOO_LONG"),
    ],
)
def test_refusals(uri: str, code: str) -> None:
    with pytest.raises(SelectionError) as caught:
        parse(uri)
    assert caught.value.code == code
    assert caught.value.message


def test_uri_identity() -> None:
    assert is_descriptions_uri(BASE, BASE)
    assert is_descriptions_uri(f"{BASE}?tools=a", BASE)
    assert is_descriptions_uri(f"{BASE}#x", BASE)
    assert not is_descriptions_uri(f"{BASE}x?tools=a", BASE)
    assert not is_descriptions_uri("resource:///other?tools=a", BASE)


@pytest.mark.req("PD-4.3-02")
@given(st.lists(names, min_size=1, max_size=30))
def test_round_trip(requested: list[str]) -> None:
    uri = f"{BASE}?tools=" + ",".join(quote(n, safe="") for n in requested)
    assert parse(uri) == list(dict.fromkeys(requested))


@given(st.text(max_size=300))
def test_any_text_is_parsed_or_refused_cleanly(query: str) -> None:
    try:
        result = parse(f"{BASE}?{query}")
    except SelectionError as exc:
        assert exc.code in {"INVALID_TOOL_NAME", "TOO_MANY_TOOLS", "URI_TOO_LONG"}  # noqa: PT017
    else:
        assert all(name and name == name.strip() and name.isprintable() for name in result)
        assert len(result) == len(set(result))
