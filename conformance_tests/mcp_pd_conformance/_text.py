"""Reading texts for what they say: parameter documentation, call examples, usage instructions, a description that
is only the tool's name, and the workflow sentences of 4.2.

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
    "only_the_name",
    "parameter_docs",
    "sentences",
    "sequential_steps",
    "strings_in",
    "usage_instruction",
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


# Parameter documentation written inline ("limit: integer optional, 1-50, default 10"): a name followed by its type
# and whether it is optional, or a default beside a range of values in one sentence. Calibrated with the docstring
# styles above on the 322 real tools of ../shared/catalogs: none of their listed first sentences or titles matches.
_INLINE = re.compile(
    rf"\b[a-z_][\w-]*\s*[:=]\s*(?:an?\s+)?(?:{_TYPES})\b[\s,;(]*(?:optional|required|\d|default|min|max)",
    re.IGNORECASE,
)
_DEFAULT = re.compile(r"\bdefaults?\b\s*(?:value\s*)?(?:is|of|:|=|to)?\s*[-+]?[\w.\"']+", re.IGNORECASE)
_RANGE = re.compile(
    r"\b\d+\s*(?:-|\u2013|\.\.|to)\s*\d+\b|\b(?:min(?:imum)?|max(?:imum)?)\s*[:=]?\s*\d+", re.IGNORECASE
)


def parameter_docs(text: str) -> str | None:
    """The parameter documentation `text` carries, quoted, or None: a docstring section, a name with its type and
    whether it is optional, or a default beside a range of values ("1-50, default 10")."""
    match = _DOCSTRING.search(text) or _INLINE.search(text)
    if match:
        return match.group(0).strip()
    for sentence in sentences(text):
        default, bounds = _DEFAULT.search(sentence), _RANGE.search(sentence)
        if default and bounds:
            return sentence
    return None


def call_example(text: str, name: str) -> str | None:
    """An example call in `text` (of any function, or of tool `name`), quoted, or None."""
    match = _CALL.search(text) or re.search(rf"\b{re.escape(name)}\s*\(", text)
    return match.group(0).strip() if match else None


# Usage instructions (spec 3.1 MUST NOT): a directive to the caller at the start of a sentence ("Always pass ...",
# "Do not ...", "Make sure ..."; "always"/"never" before a verb's base form only, so "Always returns ..." is behaviour),
# a direction about arguments ("use the limit parameter", "must be passed as", "dates must be in ISO format"), words
# to the caller ("you must"), or another tool to call first. "Call this first" and "use it when ..." say when to use
# the tool, which a description should (3.1's use cases). Calibrated on the 322 real tools of ../shared/catalogs:
# none of their first sentences matches, and what matches in their full descriptions is each a real instruction.
_DIRECTIVE = re.compile(
    r"^(?:(?:note|important|tip|warning)\s*[:!-]\s*)?(?:please\s+)?"
    r"(?:(?:always|never)\s+(?!\w+[^s\W]s\b)|do\s+not\b|don'?t\b|avoid\b|make\s+sure\b|be\s+sure\b|remember\s+to\b"
    r"|ensure\s+(?:that\s+)?(?:you|to|the\s+caller)\b|only\s+(?:call|use|invoke)\b|first\s+call\b)",
    re.IGNORECASE,
)
_DIRECTION = re.compile(
    r"\b(?:pass|provide|specify|supply|give|set|include|send|use|fill\s+in)\s+(?:(?:the|a|an|its|each|every|your|both)\s+)?"
    r"[`'\"]?[\w.-]+[`'\"]?(?:\s+[`'\"]?[\w.-]+[`'\"]?){0,2}\s+(?:parameters?|arguments?|params?|flags?)\b"
    r"|\b(?:must|should|has\s+to|have\s+to|needs?\s+to)\s+be\s+(?:passed|given|provided|specified|supplied|formatted"
    r"|quoted|encoded|set|called|invoked|absolute|relative|an?\s+(?:integer|string|number|boolean|array|list|object)"
    r"|integers|strings|numbers|booleans|in\s+[\w\s-]{0,20}format|one\s+of)\b"
    r"|^(?:pass|specify|supply)\s+(?:\S+\s+){0,3}as\b"
    r"|\b(?:you|callers?|the\s+caller|clients?|the\s+(?:model|llm|agent))\s+(?:must|should)\b"
    r"|\b(?:call|invoke|run|use|read|fetch)\s+(?!(?:this|it)\b)(?:[\w.-]+\s+){1,2}(?:first|beforehand)\b"
    r"|\bbefore\s+(?:calling|using|invoking)\s+(?:this|it)\b",
    re.IGNORECASE,
)
# Pointers to the resource are the extension's workflow, judged by tools-list/distinct-descriptions, not here.
_WORKFLOW_POINTER = re.compile(r"\?tools=|tool_descriptions", re.IGNORECASE)


def usage_instruction(text: str) -> str | None:
    """The first sentence of `text` that instructs the caller how to call the tool, or None."""
    for sentence in sentences(text):
        if _WORKFLOW_POINTER.search(sentence):
            continue
        if _DIRECTIVE.search(sentence) or _DIRECTION.search(sentence):
            return sentence
    return None


def only_the_name(text: str, name: str) -> bool:
    """Whether a description is nothing but the tool's name as written ("word_count", "The add tool.").

    The name spelled as words ("List starred repositories" for list_starred_repositories) is not caught here: real
    catalogs write such descriptions, and whether they select the tool is tools-list/description-purpose's SHOULD.
    """
    core = re.sub(r"^\s*(?:the|this)\s+|\s+(?:tool|function|command)\b", "", text.strip(), flags=re.IGNORECASE)
    core = re.sub(r"[\s.!:;`'\"]+$|^[\s`'\"]+", "", core)
    return bool(name) and core.lower() == name.lower()


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
# What happens to the call: it fails, is refused or rejected, or gets/returns an error; "error handling" is no outcome.
_OUTCOME = (
    r"\b(fails?|failed|failing|refus(ed|es|al)|reject(s|ed|ion)?|denied|blocked"
    r"|(returns?|returned|results?\s+in|gets?|yields?|raises?|produces?|receives?|with|throws?)\s+(an?\s+|the\s+)?"
    r"([\w-]+\s+)?(error|exception)\b"
    r"|not\s+(be\s+)?(authori[sz]ed|allowed|permitted))"
)
# The condition: the call comes without (or before) fetching the description; "before calling" is no condition.
_UNFETCHED = (
    r"\b(without|before)\s+(first\s+)?(having\s+)?((a|the|its|their)\s+)?((prior|previous|first)\s+)?(fetch|read|retriev|load|request|describ|get)\w*"
    r"|\bun-?fetched\b|\bnot\s+(yet\s+)?(been\s+)?(fetched|read|retrieved|loaded|described)"
    r"|\bhas(n't|\s+not)\s+(been\s+)?(fetched|read)|\bnever\s+(fetched|read)"
)


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
    """One sentence says what an unfetched call does: it names TOOL_DESCRIPTION_REQUIRED, or puts a call, the
    missing fetch and an outcome (fails, is refused, returns an error) together. A mention of errors is not it."""
    return "TOOL_DESCRIPTION_REQUIRED" in text or _any_sentence(text, _CALLING, _UNFETCHED, _OUTCOME)


# What a fetch does to the tool, in other words than "authorizes": it unlocks, enables or permits it, grants access
# to it, or lets the caller use it. A sentence that refuses ("not allowed", "fails") says the consequence (4.2-04).
_GRANTS = (
    r"\b(authori[sz]\w*|unlock\w*|enabl(e|es|ed|ing)\b|permit\w*"
    r"|grants?\s+(you\s+)?(access|permission|the\s+right)|gives?\s+(you\s+)?(access|permission)"
    r"|(allow|let)s?\s+(you\s+|the\s+(caller|client|model)\s+)?(to\s+)?(call|use|invoke|run)\b)"
)
_REFUSING = r"\b(not|never|no|fails?|refus\w*|reject\w*|denied|errors?|without)\b"
# How long: the session, the connection, or as long as the caller stays connected.
_SESSION = r"\b(session|connection|stay\s+connected|remain\s+connected)"


def explains_authorization(text: str) -> bool:
    """One sentence says that fetching authorizes the tool for the session, in any words: "authorizes that tool for
    this session", "unlocks that tool for as long as this session lasts", "grants access to it for the rest of the
    connection". A sentence about refusals ("is not allowed in this session") does not say it."""
    return any(
        re.search(_GRANTS, s, re.IGNORECASE)
        and re.search(_SESSION, s, re.IGNORECASE)
        and (re.search(r"authori[sz]", s, re.IGNORECASE) or not re.search(_REFUSING, s, re.IGNORECASE))
        for s in sentences(text)
    )


_NUMBERED = re.compile(r"\bstep\s*(\d|one\b|two\b)|(^|\s)1[.)]\s.*(^|\s)2[.)]\s", re.IGNORECASE | re.DOTALL)
# Words that open a sequence, and words that continue one; arrows chain steps too ("tools/list -> read -> call").
_OPENS = r"\b(first(ly)?|begin\s+by|start\s+by|to\s+begin|initially)\b"
_CONTINUES = r"\b(then|next|second(ly)?|third(ly)?|after\s+that|afterwards?|once\s+\w+|finally|lastly)\b"


def sequential_steps(text: str) -> bool:
    """Whether `text` lays the workflow out as steps in order: numbered ("Step 1: ...", "1. ... 2. ..."), or in words
    (an opening word followed by a continuing one, "First ... then ...", or two continuing words, "... next ...
    finally ..."), or as a chain of at least two arrows."""
    if _NUMBERED.search(text):
        return True
    opening = re.search(_OPENS, text, re.IGNORECASE)
    after = text[opening.end() :] if opening else ""
    if opening and re.search(_CONTINUES, after, re.IGNORECASE):
        return True
    return len(re.findall(_CONTINUES, text, re.IGNORECASE)) >= 2 or len(re.findall(r"->|→|=>", text)) >= 2
