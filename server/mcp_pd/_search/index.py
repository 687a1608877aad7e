"""The search index facade: documents by slot, BM25 postings, spelling repair, optional vectors, and the ranking
that fuses them (with clause-level cosines for long tasks), abstains, and tells near-ties apart.

`allowed` is applied before ranking and before counting: a tool it rejects never appears in hits, totals, similar
tools, close names or category counts. Knows tools and text, nothing of sessions, transports or the SDK.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from .bands import banded_hits
from .config import SearchConfig
from .documents import SearchDocument
from .postings import Postings, weighted_terms
from .query import parse
from .results import SearchHit, SearchResult
from .slots import Allowed, Slots
from .spelling import Spelling, name_matches
from .text import QUERY_CHARS
from .ties import distinguishing_words
from .vectors import Vectors
from .vocabulary import vocabulary

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .store import VectorStore

__all__ = ["Allowed", "SearchIndex"]


class SearchIndex:
    """An incremental inverted index over tool documents, with optional vectors from an `Embedder`.

    Thread-safe for one writer and many readers (a lock around every operation; searches take well under
    10 ms at 10,000 tools, so contention is short).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        config: SearchConfig | None = None,
        *,
        store: VectorStore | None = None,
    ) -> None:
        self.config = config or SearchConfig()
        self._lock = threading.RLock()
        self._vocab = vocabulary(self.config.stemming)
        self._table = Slots()
        # The table's own containers, read on every query (postings and vectors are indexed by slot).
        self._docs, self._slots = self._table.docs, self._table.by_name
        # numpy (installed with the semantic extra, and nearly everywhere else) scores postings as arrays:
        # 10x faster at 10,000 tools. Without it the same scores come from dictionaries.
        self._np: Any = None
        try:
            import numpy

            self._np = numpy
        except ModuleNotFoundError:
            if embedder is not None:
                raise
        self._postings = Postings(self.config, self._np)
        self._spelling = Spelling(self.config.stemming)
        # Vectors on disk by (model, text) when `store` is given: read before embedding, written after.
        self._vectors = Vectors(embedder, store, self._np) if embedder is not None else None

    @property
    def embedder(self) -> Embedder | None:
        return self._vectors.embedder if self._vectors is not None else None

    @property
    def store(self) -> VectorStore | None:
        return self._vectors.store if self._vectors is not None else None

    @property
    def embedded(self) -> int:
        """Texts this index had to embed (the rest came from memory or the store)."""
        return self._vectors.embedded if self._vectors is not None else 0

    # -- maintenance ------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    def names(self) -> list[str]:
        return sorted(self._slots)

    def document(self, name: str) -> SearchDocument:
        return self._table.document(name)

    def upsert(self, docs: Iterable[SearchDocument]) -> int:
        """Add or replace documents; unchanged versions are skipped. Returns how many changed."""
        docs = list(docs)
        if self._vectors is not None:
            # Outside the index lock: embedding takes ~30 ms a tool, and searches keep answering meanwhile.
            self._vectors.embed_missing(docs)
        changed: list[tuple[int, SearchDocument]] = []
        register = self._spelling.register if self.config.spelling else None
        with self._lock:
            for doc in docs:
                slot = self._slots.get(doc.name)
                if slot is not None:
                    old = self._docs[slot]
                    if old is not None and old.version == doc.version and old == doc:
                        continue
                    self._unindex(slot)
                else:
                    slot = self._table.claim(doc.name)
                    self._postings.ensure(len(self._docs))
                self._docs[slot] = doc
                changed.append((slot, doc))
            if not changed:
                return 0
            for slot, doc in changed:
                self._postings.set(slot, weighted_terms(doc, self.config, register))
            if self._postings.needs_reweight(len(self._slots)):
                self._postings.reweight(self._slots.values())
                self._table.recategorize()
            else:
                for slot, _ in changed:
                    self._postings.add(slot)
                    self._table.categorize(slot)
            self._spelling.invalidate()
            if self._vectors is not None:
                self._vectors.invalidate()
            return len(changed)

    def remove(self, names: Iterable[str]) -> int:
        """Drop documents by name (unknown names are ignored). Returns how many were removed."""
        removed = 0
        with self._lock:
            for name in names:
                slot = self._slots.get(name)
                if slot is None:
                    continue
                self._postings.remove(slot)
                self._postings.clear(slot)
                self._table.release(name)
                removed += 1
            if removed:
                self._spelling.invalidate()
                if self._vectors is not None:
                    self._vectors.invalidate()
        return removed

    def _unindex(self, slot: int) -> None:
        self._postings.remove(slot)
        self._table.uncategorize(slot)

    def cached_vectors(self) -> dict[str, Any]:
        """Document version -> vector for the current model (to save, or to seed another index with)."""
        if self._vectors is None:
            return {}
        with self._lock:
            return self._vectors.cached()

    def seed_vectors(self, vectors: Mapping[str, Any]) -> None:
        """Pre-fill the vector cache (version -> vector), e.g. from a previous run saved by the caller."""
        if self._vectors is None:
            return
        with self._lock:
            self._vectors.seed(vectors)

    # -- queries ------------------------------------------------------------------------------------------

    def _candidates(self, q: Any, allowed: Allowed, category: str | None, keep: int) -> tuple[dict[int, float], int]:
        """The `keep` best visible slots by BM25 with their scores, and how many visible slots matched at all."""
        filtered = allowed is not None or category is not None
        n = len(self._slots)
        if self._np is None:
            raw = self._postings.scores(q.terms, n)
            visible = {s: v for s, v in raw.items() if self._visible(s, allowed, category)} if filtered else raw
            if len(visible) <= keep:
                return visible, len(visible)
            return dict(heapq.nlargest(keep, visible.items(), key=lambda kv: kv[1])), len(visible)
        np = self._np
        scores = self._postings.score_array(q.terms, n, len(self._docs))
        matched = np.flatnonzero(scores)
        if filtered:
            matched = np.fromiter((s for s in matched.tolist() if self._visible(s, allowed, category)), dtype=np.int64)
        total = len(matched)
        if total > keep:
            matched = matched[np.argpartition(-scores[matched], keep)[:keep]]
        return dict(zip(matched.tolist(), scores[matched].tolist(), strict=True)), total

    def _visible(self, slot: int, allowed: Allowed, category: str | None) -> bool:
        return self._table.visible(slot, allowed, category)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        category: str | None = None,
        allowed: Allowed = None,
        semantic: bool = True,
    ) -> SearchResult:
        """The best `limit` visible tools for `query`, or an abstention when none explains it well."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        c = self.config
        query = query[:QUERY_CHARS]
        with self._lock:
            q = parse(query, c, self._postings, self._spelling, self._vocab, len(self._slots))
            # Only the best few hundred lexical matches can reach the top `limit` after fusion.
            visible, total = self._candidates(q, allowed, category, max(100, limit * 20))
            cosines: dict[int, float] = {}
            space = self._vectors if semantic and len(self._slots) > 0 else None
            degraded = ""
            spread = (0.0, 1.0)
            if space is not None:
                # A model (a remote one above all) that fails costs the vectors, never the answer.
                try:
                    sims = space.query_cosines(query, self._docs, c.clause_weight)
                except Exception as exc:
                    degraded, space = f"{type(exc).__name__}: {exc}"[:300], None
                else:
                    spread = space.spread(sims, self._slots.values())
                    # Candidates: the lexical matches plus the semantic top few hundred.
                    top = self._np.argpartition(-sims, min(len(sims) - 1, 200))[:200]
                    for s in (*visible.keys(), *(int(x) for x in top)):
                        if s < len(self._docs) and self._visible(s, allowed, category):
                            cosines[s] = float(sims[s])
            use_vectors = space is not None
            shown = lambda slot: self._visible(slot, allowed, category)  # noqa: E731
            name_bonus = name_matches(query, self._slots, shown) if c.fuzzy_names else {}
            candidates = set(visible) | set(cosines) | set(name_bonus)
            if not candidates:
                return self._abstain(0, "no tool matches any word of the query", allowed, 0.0, degraded, use_vectors)
            best_lex = max(visible.values(), default=0.0) or 1.0
            fused: dict[int, float] = {}
            for s in candidates:
                lex = visible.get(s, 0.0) / best_lex
                score = lex
                if use_vectors:
                    cos = max(0.0, cosines.get(s, 0.0))
                    score = (1 - c.semantic_weight) * lex + c.semantic_weight * cos
                score += name_bonus.get(s, 0.0)
                fused[s] = score
            ranked = heapq.nlargest(limit, fused.items(), key=lambda kv: (kv[1], -kv[0]))
            total = max(total, len(ranked))
            top_slot = ranked[0][0]
            coverage = max(q.coverage(self._postings, top_slot), min(1.0, name_bonus.get(top_slot, 0.0)))
            # The best cosine any visible tool reaches: a task no tool is close to in meaning is unanswerable
            # here, whichever tool the fusion put first.
            cosine = max(cosines.values(), default=0.0) if use_vectors else None
            if cosine is None:
                unsure = (
                    coverage < c.abstain_coverage_lexical
                    and q.answered(self._postings, top_slot) < c.abstain_words_lexical
                )
            else:
                unsure = coverage < c.abstain_coverage and cosine < c.abstain_cosine
            if c.abstain and unsure:
                return self._abstain(total, "no tool explains the query well", allowed, coverage, degraded, use_vectors)
            confidence = coverage if cosine is None else max(coverage, cosine)
            covered = lambda slot: max(q.coverage(self._postings, slot), min(1.0, name_bonus.get(slot, 0.0)))  # noqa: E731
            cos_of = cosines if use_vectors else None
            hits = banded_hits(c, ranked, self._docs, cos_of, covered, spread)
            return SearchResult(
                hits,
                total,
                confidence=round(confidence, 4),
                ties=self._ties(ranked),
                ranking="hybrid" if use_vectors else "lexical",
                degraded=degraded,
            )

    def _ties(self, ranked: Sequence[tuple[int, float]]) -> dict[str, list[str]]:
        """For near-tied best hits (the first three within `tie_margin` of the best): what tells them apart."""
        if len(ranked) < 2 or ranked[0][1] <= 0:
            return {}
        floor = ranked[0][1] * (1 - self.config.tie_margin)
        band = [self._docs[slot] for slot, score in ranked[:3] if score >= floor]
        if len(band) < 2:
            return {}
        idf = lambda term: self._postings.idf(term, len(self._slots))  # noqa: E731 - one use, read in place
        return distinguishing_words([d for d in band if d is not None], idf, stemming=self.config.stemming)

    def _abstain(
        self, total: int, reason: str, allowed: Allowed, confidence: float, degraded: str, hybrid: bool
    ) -> SearchResult:
        browse = [name for name, _ in self.categories(allowed)]
        ranking = "hybrid" if hybrid else "lexical"
        return SearchResult([], total, True, reason, browse, round(confidence, 4), ranking=ranking, degraded=degraded)

    # -- neighbours, names, categories --------------------------------------------------------------------

    def similar(self, name: str, *, limit: int = 5, allowed: Allowed = None) -> list[SearchHit]:
        """Tools most like `name` (by vectors when available, else by shared weighted terms).

        Raises KeyError when `name` is unknown or not allowed (the two are indistinguishable to the caller).
        """
        with self._lock:
            slot = self._slots.get(name)
            if slot is None or (allowed is not None and not allowed(name)):
                raise KeyError(name)
            doc = self._docs[slot]
            assert doc is not None
            scores: dict[int, float] = {}
            if self._vectors is not None:
                sims = self._vectors.cosines(self._vectors.matrix(self._docs)[slot], self._docs)
                order = self._np.argsort(-sims)[: limit * 20 + 1]
                scores = {int(s): float(sims[s]) for s in order}
            else:
                weights = self._postings.doc_terms(slot)
                n = len(self._slots)
                top_terms = heapq.nlargest(24, weights, key=lambda t: weights[t] * self._postings.idf(t, n))
                scores = self._postings.scores({t: 1.0 for t in top_terms}, n)
            scores.pop(slot, None)
            visible = [(s, v) for s, v in scores.items() if self._visible(s, allowed, None)]
            ranked = heapq.nlargest(limit, visible, key=lambda kv: (kv[1], -kv[0]))
            out = []
            for s, v in ranked:
                d = self._docs[s]
                assert d is not None
                out.append(SearchHit(d.name, d.category, d.summary, round(v, 4)))
            return out

    def closest_names(self, name: str, *, limit: int = 5, allowed: Allowed = None) -> list[str]:
        """Visible tool names closest to a (misspelled) `name`, best first."""
        with self._lock:
            out = []
            for candidate, _, _ in process.extract(
                name, list(self._slots), scorer=fuzz.WRatio, limit=limit * 4 + 10, score_cutoff=50
            ):
                if allowed is None or allowed(candidate):
                    out.append(str(candidate))
                    if len(out) == limit:
                        break
            return out

    def categories(self, allowed: Allowed = None) -> list[tuple[str, int]]:
        """(category, visible tool count), largest first; tools without a category count under ''.

        A category with no visible tool is not listed (its existence is not revealed either)."""
        with self._lock:
            return self._table.categories(allowed)

    def with_config(self, config: SearchConfig) -> SearchIndex:
        """A new index with `config` over the same documents (shares the vector cache: nothing re-embeds)."""
        other = SearchIndex(self.embedder, config, store=self.store)
        if other._vectors is not None and self._vectors is not None:
            other._vectors.cache = self._vectors.cache
        other.upsert(list(self._table.live()))
        return other
