"""Text to search terms: Unicode-aware tokens, a light English stemmer, CJK bigrams, a long task's steps.

Knows text only. Stop words are data (`data/stopwords.json`), beside the vocabulary.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Final

__all__ = [
    "DATA",
    "QUERY_CHARS",
    "QUERY_WORDS",
    "STOP",
    "analyze",
    "clauses",
    "first_sentence",
    "is_cjk",
    "name_words",
    "normalize",
    "stem",
    "tokenize",
]

DATA: Final = Path(__file__).resolve().parent / "data"

# A query is read up to this many characters and words (longer ones are cut, not refused).
QUERY_CHARS: Final = 1_000
QUERY_WORDS: Final = 64

HUMP: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
RUN: Final = re.compile(r"[^\W_]+")
_COMBINING: Final = re.compile(r"[\u0300-\u036f]")
_STOPWORDS: Final = json.loads((DATA / "stopwords.json").read_text(encoding="utf-8"))
STOP: Final = frozenset(_STOPWORDS["english"])
# A few words of other languages that carry no meaning for search (the glossary maps the ones that do).
STOP_OTHER: Final = frozenset(_STOPWORDS["other"])

_IRREGULAR: Final = {"ran": "run", "running": "run", "wrote": "write", "written": "write", "children": "child"}


def is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF
        or 0x31F0 <= code <= 0x31FF
    )


def normalize(text: str) -> str:
    """NFKC, camel humps spaced, case folded, Latin accents folded (kana voicing marks kept)."""
    text = HUMP.sub(" ", unicodedata.normalize("NFKC", text)).casefold()
    if not text.isascii():
        text = unicodedata.normalize("NFC", _COMBINING.sub("", unicodedata.normalize("NFD", text)))
    return text


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light, consistent English stemmer: plurals, -ing, -ed and a final e (`creates` = `created` = `create`)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isascii() or word.isdigit():
        return word
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + repl
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # running -> runn -> run
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, *, stop: bool = True) -> list[str]:
    """Index terms of `text`: stemmed words, stop words dropped, CJK runs as bigrams."""
    out: list[str] = []
    for run in RUN.findall(normalize(text)):
        if run.isascii():
            if not stop or (run not in STOP and run not in STOP_OTHER):
                out.append(stem(run))
            continue
        # Split a mixed run (`pod一覧`) into its CJK and non-CJK parts.
        start = 0
        for i in range(1, len(run) + 1):
            if i == len(run) or is_cjk(run[i]) != is_cjk(run[start]):
                part = run[start:i]
                if is_cjk(part[0]):
                    out.extend(cjk_terms(part))
                elif not stop or (part not in STOP and part not in STOP_OTHER):
                    out.append(stem(part))
                start = i
    return out


def plain_tokens(text: str) -> list[str]:
    """Words without stemming (the ablation's tokenizer; CJK runs stay whole)."""
    return [w for w in RUN.findall(normalize(text)) if w not in STOP]


@lru_cache(maxsize=65_536)
def analyze(text: str, stemming: bool) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """((index term, count) pairs, surface words for spelling repair) of a text; cached because definitions
    repeat themselves (every GitHub tool has an `owner` and a `repo` described the same way)."""
    terms = tokenize(text) if stemming else plain_tokens(text)
    counts: dict[str, int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    words = tuple(w for w in RUN.findall(normalize(text)) if len(w) >= 3 and w.isascii() and w.isalpha())
    return tuple(counts.items()), words


_CLAUSE: Final = re.compile(
    r"[.;!?\u3002\uff1b\uff01\uff1f]\s+|,\s+|\s+(?:and then|then|and|also|after that|before|so that|including)\s+",
    re.IGNORECASE,
)


def clauses(query: str, *, min_words: int = 10, most: int = 4) -> list[str]:
    """The steps of a long task (sentences, comma- and `and`/`then`-joined parts of 2 to 24 words), or [] for a
    query shorter than `min_words` words or of one step."""
    if len(query.split()) < min_words:
        return []
    parts = [" ".join(p.split()[:24]) for p in _CLAUSE.split(query[:QUERY_CHARS]) if p and len(p.split()) >= 2]
    return parts[:most] if len(parts) >= 2 else []


def first_sentence(text: str) -> str:
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)[.!?](\s|$)", paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


def name_words(name: str) -> str:
    """A tool name as words: `listPullRequests` and `list_pull_requests` both give `list Pull Requests`-like text."""
    return " ".join(RUN.findall(HUMP.sub(" ", name).replace("_", " ")))
