"""The hand-written vocabulary (`data/vocabulary.json`): domain synonyms and other languages' words for the domain's
terms, which a query adds at a lower weight. A user's own catalog gets none of it; the benchmark reports every
figure with and without it. Knows text only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from .text import DATA, RUN, is_cjk, normalize, stem

__all__ = ["Vocabulary", "vocabulary"]


class Vocabulary:
    """Phrase -> extra query terms. Latin phrases match whole token sequences; CJK ones match substrings."""

    def __init__(self, data: Mapping[str, Any], stemming: bool) -> None:
        self.synonyms: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.translations: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.cjk: dict[str, set[tuple[str, ...]]] = {}

        def key(phrase: str) -> tuple[str, ...]:
            words = RUN.findall(normalize(phrase))
            return tuple(stem(w) if stemming else w for w in words)

        for group in data.get("synonyms", []):
            keys = [key(p) for p in group]
            for k in keys:
                self.synonyms.setdefault(k, set()).update(o for o in keys if o != k)
        for english, foreign in data.get("translations", {}).items():
            target = key(english)
            for phrase in foreign:
                if any(is_cjk(ch) for ch in phrase):
                    self.cjk.setdefault(normalize(phrase), set()).add(target)
                else:
                    self.translations.setdefault(key(phrase), set()).add(target)
        self.max_len = max((len(k) for k in (*self.synonyms, *self.translations)), default=1)
        self.cjk_keys = sorted(self.cjk, key=len, reverse=True)

    @staticmethod
    def load(stemming: bool) -> Vocabulary:
        data = json.loads((DATA / "vocabulary.json").read_text(encoding="utf-8"))
        return Vocabulary(data, stemming)


_VOCAB_LOCK = threading.Lock()
_VOCABS: dict[bool, Vocabulary] = {}  # one per stemming setting, loaded once per process


def vocabulary(stemming: bool) -> Vocabulary:
    with _VOCAB_LOCK:
        if stemming not in _VOCABS:
            _VOCABS[stemming] = Vocabulary.load(stemming)
        return _VOCABS[stemming]
