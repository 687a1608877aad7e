"""The planner's reading of text: words and stems, the task cut into steps, quoted values, handles, dates, numbers,
URLs, paths and arithmetic found in a step, and tools ranked by the words they share with it.

Pure functions over strings (and the function definitions a model sees); no state, no I/O.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, Final

from mcp_pd_agent._loop import FunctionSpec

__all__ = [
    "ABOUT_READING",
    "BACKTICK",
    "CUES",
    "DATE",
    "HANDLE",
    "IDENTIFIER",
    "MATH",
    "NUMBER",
    "PATH",
    "PRONOUN",
    "QUOTED",
    "SPLIT",
    "STOPWORDS",
    "TO_WORDS",
    "URL",
    "content_words",
    "looks_like_expression",
    "math_expression",
    "name_tokens",
    "normalized",
    "quoted_spans",
    "rank_tools",
    "rephrase",
    "search_query",
    "split_steps",
    "stem_word",
    "without_quotes",
    "word_list",
]

STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "be",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "me",
        "my",
        "i",
        "we",
        "our",
        "you",
        "your",
        "what",
        "which",
        "who",
        "how",
        "many",
        "much",
        "do",
        "does",
        "please",
        "from",
        "as",
        "at",
        "into",
        "then",
        "there",
        "their",
        "them",
        "one",
        "all",
        "any",
        "some",
        "give",
        "show",
        "tell",
        "get",
    ]
)


PRONOUN: Final = re.compile(r"\b(it|its|that|this|them|the first one|the new one)\b", re.IGNORECASE)


QUOTED: Final = re.compile(
    r"(?<![\w])(?:'([^']+?)'|\"([^\"]+?)\"|\u201c([^\u201d]+?)\u201d|\u2018([^\u2019]+?)\u2019)(?![\w])"
)


BACKTICK: Final = re.compile(r"`([A-Za-z0-9_.\-]+)`")


HANDLE: Final = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])")


DATE: Final = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


URL: Final = re.compile(r"https?://[^\s'\"<>]+[^\s'\"<>.,;:!?)]")


PATH: Final = re.compile(r"(?<![\w:/])(/[\w.\-]+(?:/[\w.\-]+)*)")


NUMBER: Final = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


SPLIT: Final = re.compile(r"(?:,\s*|;\s*|\s+)(?:and\s+)?then\s+|;\s+", re.IGNORECASE)


MATH: Final = re.compile(r"(?:\d+(?:\.\d+)?|\*\*|sqrt|pi|[-+*/()%])(?:\s*(?:\d+(?:\.\d+)?|\*\*|sqrt|pi|[-+*/()%]))*")


CUES: Final[dict[str, tuple[str, ...]]] = {
    "titled": ("title",),
    "title": ("title",),
    "named": ("name", "title"),
    "called": ("name", "title"),
    "saying": ("body", "text", "message", "comment", "content"),
    "comment": ("body", "text", "message"),
    "mentioning": ("query", "search", "q"),
    "about": ("query", "search", "q"),
    "for": ("query", "search", "q"),
    "describing": ("description",),
    "description": ("description",),
}


ABOUT_READING: Final = re.compile(r"\btool descriptions?\b", re.IGNORECASE)


IDENTIFIER: Final = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


TO_WORDS: Final = frozenset({"to", "into", "in", "as"})


def stem_word(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def word_list(text: str) -> list[str]:
    return [stem_word(w) for w in re.findall(r"[a-z0-9]+", text.lower())]


def content_words(text: str) -> set[str]:
    return {w for w in word_list(text) if w not in STOPWORDS}


def name_tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [stem_word(t) for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def normalized(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", value.lower())


def quoted_spans(text: str) -> list[tuple[str, int]]:
    """Quoted strings with their start offsets."""
    return [(next(g for g in m.groups() if g is not None), m.start()) for m in QUOTED.finditer(text)]


def without_quotes(text: str) -> str:
    return QUOTED.sub(" ", text)


def split_steps(task: str) -> list[str]:
    """Split at 'then' and ';' outside quotes."""
    masked, saved = task, []
    for index, match in enumerate(QUOTED.finditer(task)):
        saved.append(match.group(0))
        masked = masked.replace(match.group(0), f"\x00{index}\x00", 1)
    parts = [p.strip(" ,.") for p in SPLIT.split(masked) if p.strip(" ,.")]
    restored = []
    for part in parts:
        for index, original in enumerate(saved):
            part = part.replace(f"\x00{index}\x00", original)
        restored.append(part)
    return restored or [task]


def rank_tools(text: str, functions: Sequence[FunctionSpec]) -> list[tuple[float, str]]:
    """Score each function against a step: name words x3, in-order name words +2, description words +1."""
    plain = without_quotes(text)
    sequence = word_list(plain)
    words = {w for w in sequence if w not in STOPWORDS}
    scored: list[tuple[float, str]] = []
    for position, function in enumerate(functions):
        tokens = name_tokens(function.name)
        meaningful = [t for t in tokens if t not in STOPWORDS]
        hits = [t for t in meaningful if t in words]
        score = 3.0 * len(hits) - 0.5 * (len(meaningful) - len(hits))
        for first, second in itertools.pairwise(meaningful):
            spots = [i for i, w in enumerate(sequence) if w == first]
            if any(second in sequence[i + 1 : i + 4] for i in spots):
                score += 2.0
        overlap = len(content_words(function.description) & words)
        if not hits and not overlap:
            continue  # shares no word with the step
        scored.append((score + overlap - position * 1e-6, function.name))
    scored.sort(key=lambda item: -item[0])
    return scored


def search_query(text: str) -> str:
    """A step as a search query: without quoted values and backticked names (they are arguments, not the tool)."""
    return re.sub(r"\s+", " ", BACKTICK.sub(" ", without_quotes(text))).strip(" ,.;:!?")


def rephrase(text: str) -> str | None:
    """The step's content words as a second query (no numbers), or None when that says nothing new."""
    natural = search_query(text)
    words = [w for w in dict.fromkeys(word_list(natural)) if w not in STOPWORDS and not w.isdigit()]
    rephrased = " ".join(words)
    return rephrased if rephrased and rephrased != natural.lower() else None


def looks_like_expression(prop: str, description: str, examples: list[Any]) -> bool:
    if "expression" in prop.lower() or "formula" in prop.lower() or "expression" in description:
        return True
    values = [e.get(prop) for e in examples if isinstance(e, dict)]
    return any(isinstance(v, str) and re.search(r"\d\s*[-+*/]\s*\d", v) for v in values)


def math_expression(text: str) -> str | None:
    """Arithmetic in a sentence: thousands separators dropped, 'X% of Y' -> (X/100*Y), words -> operators."""
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
    text = re.sub(r"(\d+(?:\.\d+)?)\s*%\s+of\s+(\d+(?:\.\d+)?)", r"(\1/100*\2)", text)
    for word, symbol in (
        ("times", "*"),
        ("plus", "+"),
        ("minus", "-"),
        ("divided by", "/"),
        ("\u00d7", "*"),
        ("\u00f7", "/"),
    ):
        text = text.replace(f" {word} ", f" {symbol} ")
    spans = [m.group(0).strip() for m in MATH.finditer(text)]
    spans = [s for s in spans if re.search(r"\d", s)]
    return max(spans, key=len) if spans else None
