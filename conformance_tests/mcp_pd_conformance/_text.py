"""Reading texts for what they say: parameter documentation, call examples, and the workflow sentences of 4.2.

A keyword anywhere in a text proves little ("first", "error" and "tools/list" turn up for other
reasons), so the workflow checks look for the parts of one statement within one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = [
    "call_example",
    "explains_authorization",
    "explains_consequence",
    "explains_fetch_first",
    "explains_tools_list",
    "parameter_docs",
    "sentences",
    "strings_in",
]

_TYPES = r"int|integer|str|string|bool|boolean|float|number|list|dict|array|object|optional\[[^\]]*\]"
# Parameter documentation in the common docstring styles: reST/Sphinx, Google, NumPy, JSDoc/Javadoc.
_DOCSTRING = re.compile(
    r":param\b|:type\s+\w+\s*:|:returns?:|:raises?\b"
    r"|@param\b|@returns?\b|@arg\b"
    r"|\b(?:args|arguments|parameters|params|kwargs|keyword arguments)\s*:\s*\S"
    r"|\bparameters\s*\n\s*-{3,}"
    rf"|\b\w+\s*\((?:{_TYPES})(?:,\s*optional)?\)\s*[:-]",
    re.IGNORECASE,
)
# An example call: f(a=1), f(a: 1), a JSON object with a quoted key, or an arguments object after "e.g.".
_CALL = re.compile(
    r"\b[a-z_][\w.]*\(\s*[a-z_]\w*\s*[=:]"
    r"|\{\s*[\"']\w+[\"']\s*:"
    r"|\b(?:e\.g\.|for example|example|usage)\s*[:,]?\s*[\w.]*\s*[({]",
    re.IGNORECASE,
)


def parameter_docs(text: str) -> str | None:
    """The parameter documentation `text` carries, quoted, or None."""
    match = _DOCSTRING.search(text)
    return match.group(0).strip() if match else None


def call_example(text: str, name: str) -> str | None:
    """An example call in `text` (of any function, or of tool `name`), quoted, or None."""
    match = _CALL.search(text) or re.search(rf"\b{re.escape(name)}\s*\(", text)
    return match.group(0).strip() if match else None


def strings_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every (path, string) in a JSON value, keys included."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.{key}" if path else str(key), str(key)
            yield from strings_in(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings_in(item, f"{path}[{i}]")


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (also at line breaks and before "Step N")."""
    parts = re.split(r"(?<=[.;!?])\s+|\n+|(?=\bstep\s*\d)", text, flags=re.IGNORECASE)
    return [p.strip() for p in parts if p and p.strip()]


_TOOLS_LIST = r"tools/list|tools list|tool list|list of tools|list_tools|listTools"
_FETCH = r"\b(fetch|read|retriev|get|load|request|query|look\s*up)"
_CALLING = r"\b(call|invok|us(e|ing)\b|run|execut)"
_ORDER = r"\b(before|first|prior|until|then|after|only once)\b"
_REFUSAL = r"\b(fail|error|reject|refus|denied|blocked|not (be )?(authori[sz]ed|allowed|permitted))"
_UNFETCHED = r"\b(without|before|not|unfetched|un-fetched|never)\b"


def _any_sentence(text: str, *patterns: str) -> bool:
    return any(all(re.search(p, s, re.IGNORECASE) for p in patterns) for s in sentences(text))


def explains_tools_list(text: str) -> bool:
    """One sentence relates tools/list to this resource (choose there, learn details here)."""
    return _any_sentence(
        text,
        _TOOLS_LIST,
        r"\b(choos|select|pick|find|identify|decid|discover|resource|descriptions?|definitions?|parameters?|names?)",
    )


def explains_fetch_first(text: str) -> bool:
    """One sentence orders fetching before calling, or numbered steps put a fetch before a call."""
    if _any_sentence(text, _FETCH, _CALLING, _ORDER) or _any_sentence(text, r"\brequired before (calling|using)"):
        return True
    steps = [s for s in sentences(text) if re.match(r"step\s*\d|\d[.)]\s", s, re.IGNORECASE)]
    fetch = next((i for i, s in enumerate(steps) if re.search(_FETCH, s, re.IGNORECASE)), None)
    call = next((i for i, s in enumerate(steps) if re.search(r"\bcall|\binvok", s, re.IGNORECASE)), None)
    return fetch is not None and call is not None and fetch < call


def explains_consequence(text: str) -> bool:
    """One sentence says what an unfetched call does (names TOOL_DESCRIPTION_REQUIRED, or that it fails)."""
    return "TOOL_DESCRIPTION_REQUIRED" in text or _any_sentence(text, _CALLING, _UNFETCHED, _REFUSAL)


def explains_authorization(text: str) -> bool:
    """One sentence says that fetching authorizes the tool for the session."""
    return _any_sentence(text, r"authori[sz]", r"\bsession")
