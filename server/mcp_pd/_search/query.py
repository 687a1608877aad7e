"""A query read into weighted terms: its words, spelling repairs, and the vocabulary's synonyms and translations.

Each query word keeps the set of terms that answer it and its importance (IDF), so a hit's coverage (the share of
the query it explains) and the words it answers can be judged for abstention. Bounded work whatever is sent.
Knows terms and the vocabulary; the postings only for document frequencies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .config import SearchConfig
from .postings import Postings
from .spelling import Spelling
from .text import QUERY_CHARS, QUERY_WORDS, RUN, STOP, cjk_terms, is_cjk, normalize, plain_tokens, stem, tokenize
from .vocabulary import Vocabulary

__all__ = ["Query", "parse"]


@dataclass(slots=True)
class Query:
    terms: dict[str, float]  # term -> query weight
    # Per query word: ([importance, known to the index], the terms that answer it), for coverage.
    groups: list[tuple[list[float], set[str]]]
    words: int

    def coverage(self, postings: Postings, slot: int) -> float:
        """The IDF-weighted share of the query's words the document in `slot` answers."""
        total = sum(importance[0] for importance, _ in self.groups)
        if total <= 0:
            return 0.0
        got = 0.0
        for importance, answer in self.groups:
            if any(postings.has(t, slot) for t in answer):
                got += importance[0]
        return got / total

    def answered(self, postings: Postings, slot: int) -> int:
        """How many of the query's words the index knows are answered by the document in `slot`."""
        return sum(
            1 for importance, answer in self.groups if importance[1] and any(postings.has(t, slot) for t in answer)
        )


def parse(query: str, config: SearchConfig, postings: Postings, spelling: Spelling, vocab: Vocabulary, n: int) -> Query:
    """`query` (cut to QUERY_CHARS characters and QUERY_WORDS words) over an index of `n` documents."""
    c = config
    query = query[:QUERY_CHARS]
    words = (tokenize(query) if c.stemming else plain_tokens(query))[:QUERY_WORDS]
    terms: dict[str, float] = {}
    groups: list[tuple[list[float], set[str]]] = []
    unknown_idf = math.log(1 + (n + 0.5) / 0.5)

    def bump(term: str, weight: float) -> None:
        if weight > terms.get(term, 0.0):
            terms[term] = weight

    surface = [w for w in RUN.findall(normalize(query)) if w.isascii()]
    raw_of = {(stem(w) if c.stemming else w): w for w in surface}
    for word in words:
        answer = {word}
        if word not in postings and c.spelling:
            fixed = spelling.correct(raw_of.get(word, word), postings)
            if fixed is not None:
                answer.add(fixed)
                bump(fixed, 0.9)
        bump(word, 1.0)
        if word in postings:
            importance = postings.idf(word, n)
        elif is_cjk(word[0]):
            # Unknown CJK bigrams are mostly particles and word boundaries (`を作`, `一个`), not content.
            importance = unknown_idf * c.cjk_unknown_importance
        else:
            importance = unknown_idf
        groups.append(([importance, float(word in postings)], answer))
    # Vocabulary phrases over the (unstemmed-then-stemmed) word sequence of the query.
    seq = [stem(x) if c.stemming else x for x in RUN.findall(normalize(query))][: QUERY_WORDS * 2]
    for i in range(len(seq)):
        for size in range(1, min(vocab.max_len, len(seq) - i) + 1):
            key = tuple(seq[i : i + size])
            targets: list[tuple[tuple[str, ...], float]] = []
            if c.synonyms:
                targets += [(t, c.synonym_weight) for t in vocab.synonyms.get(key, ())]
            if c.translations:
                targets += [(t, 1.0) for t in vocab.translations.get(key, ())]
            _expand(key, targets, terms, groups, unknown_idf)
    if c.translations and any(is_cjk(ch) for ch in query):
        text = normalize(query)
        for phrase in vocab.cjk_keys:
            if phrase in text:
                targets = [(t, 1.0) for t in vocab.cjk[phrase]]
                _expand(tuple(cjk_terms(phrase)), targets, terms, groups, unknown_idf)
                text = text.replace(phrase, " ")
    return Query(terms, groups, len(words))


def _expand(
    key: tuple[str, ...],
    targets: list[tuple[tuple[str, ...], float]],
    terms: dict[str, float],
    groups: list[tuple[list[float], set[str]]],
    full: float,
) -> None:
    if not targets:
        return
    added: set[str] = set()
    for phrase, weight in targets:
        for t in phrase:
            if t in STOP:
                continue
            added.add(t)
            if weight > terms.get(t, 0.0):
                terms[t] = weight
    # The original words of the phrase are answered by the expansion's terms too (for coverage).
    # A word the vocabulary understood carries meaning (even a CJK bigram unknown to the index).
    keyset = set(key)
    for importance, answer in groups:
        if answer & keyset:
            answer.update(added)
            if not importance[1]:
                importance[0] = max(importance[0], full)
