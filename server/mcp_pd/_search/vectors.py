"""Tool vectors for semantic ranking: embedded once per document version, read from and written to the
`VectorStore` when there is one, kept as one matrix for cosine scores. Knows documents' texts and vectors,
nothing of BM25 or queries' words.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .documents import SearchDocument
from .store import text_key
from .text import clauses

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .store import VectorStore

__all__ = ["Vectors"]


class Vectors:
    """Vectors by (model, document version) in memory, by (model, text) on disk."""

    def __init__(self, embedder: Embedder, store: VectorStore | None, np: Any) -> None:
        self.embedder = embedder
        self.store = store
        self._np = np
        # "<model>:<version>" -> row: a re-upsert of the same version, or another index sharing this cache,
        # costs nothing. One dict store per row, safe beside a reader.
        self.cache: dict[str, Any] = {}
        self._matrix: Any = None
        self._dirty = True
        self._lock = threading.Lock()
        self.embedded = 0  # texts this index had to embed (the rest came from memory or the store)

    def embed_missing(self, docs: Sequence[SearchDocument]) -> None:
        """Vectors for every document not cached yet: from the store, else embedded (and then stored)."""
        model = self.embedder.model_id
        todo: dict[str, SearchDocument] = {}
        for d in docs:
            key = f"{model}:{d.version}"
            if key not in self.cache:
                todo.setdefault(key, d)
        if not todo:
            return
        texts = {key: d.embedding_text() for key, d in todo.items()}
        keys = {key: text_key(text) for key, text in texts.items()}
        if self.store is not None:
            stored = self.store.load(model, keys.values())
            for key, tkey in keys.items():
                row = stored.get(tkey)
                if row is not None:
                    self.cache[key] = row
                    del texts[key]
        if texts:
            vectors = self.embedder.embed(list(texts.values()))
            for key, row in zip(texts, vectors, strict=True):
                self.cache[key] = row
            if self.store is not None:
                self.store.save(model, {keys[key]: row for key, row in zip(texts, vectors, strict=True)})
        with self._lock:
            self.embedded += len(texts)

    def cached(self) -> dict[str, Any]:
        """Document version -> vector for the current model."""
        prefix = f"{self.embedder.model_id}:"
        return {k[len(prefix) :]: v for k, v in self.cache.items() if k.startswith(prefix)}

    def seed(self, vectors: Mapping[str, Any]) -> None:
        model = self.embedder.model_id
        for version, row in vectors.items():
            self.cache[f"{model}:{version}"] = row

    def invalidate(self) -> None:
        self._dirty = True

    def matrix(self, docs: Sequence[SearchDocument | None]) -> Any:
        """One row per slot (zeros for a free slot)."""
        if self._dirty:
            np = self._np
            model = self.embedder.model_id
            matrix = np.zeros((max(1, len(docs)), 384), dtype=np.float32)
            for slot, doc in enumerate(docs):
                if doc is not None:
                    row = self.cache.get(f"{model}:{doc.version}")
                    if row is not None:
                        if matrix.shape[1] != len(row):
                            matrix = np.zeros((max(1, len(docs)), len(row)), dtype=np.float32)
                        matrix[slot] = row
            self._matrix = matrix
            self._dirty = False
        return self._matrix

    def cosines(self, vector: Any, docs: Sequence[SearchDocument | None]) -> Any:
        # einsum, not `@`: a matrix-vector product through multi-threaded BLAS waits for a second core, which
        # costs 5x the wall time (8 ms against 1.4 ms at 10,000 tools) on a busy 2-core machine.
        return self._np.einsum("ij,j->i", self.matrix(docs), vector)

    def cosines_many(self, vectors: Any, docs: Sequence[SearchDocument | None]) -> Any:
        """One row of cosines per query vector (a single pass over the matrix)."""
        return self._np.einsum("ij,kj->ki", self.matrix(docs), vectors)

    def query_cosines(self, query: str, docs: Sequence[SearchDocument | None], clause_weight: float) -> Any:
        """Each slot's cosine to `query`; a long task's is `clause_weight` of its best step's, the rest the whole's."""
        np = self._np
        # A model that embeds queries differently from documents (e5's "query: ") says so by embed_query.
        embed_query = getattr(self.embedder, "embed_query", None) or self.embedder.embed
        parts = clauses(query) if clause_weight > 0 else []
        if not parts:
            return self.cosines(embed_query([query])[0], docs)
        # Only the steps are embedded (the whole task is their mean: as good, and a batch of short texts costs
        # less than one long one).
        vectors = embed_query(parts)
        steps = self.cosines_many(vectors, docs)
        # cos(tool, mean of the steps' unit vectors), without embedding the whole task
        whole = np.mean(steps, axis=0) / max(1e-6, float(np.linalg.norm(np.mean(vectors, axis=0))))
        return (1 - clause_weight) * whole + clause_weight * np.max(steps, axis=0)

    def spread(self, sims: Any, slots: Iterable[int]) -> tuple[float, float]:
        """The mean and standard deviation of a query's cosines over the live slots: how far a cosine stands above
        them (the bands' z) does not depend on the cosine range of a catalog's texts."""
        live = self._np.fromiter(slots, dtype=self._np.int64)
        return float(sims[live].mean()), max(1e-6, float(sims[live].std()))
