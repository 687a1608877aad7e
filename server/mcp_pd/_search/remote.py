"""Embeddings from the deployment's own model server: any OpenAI-compatible `POST /v1/embeddings` endpoint
(Ollama, llama.cpp's server, vLLM, text-embeddings-inference, LM Studio, a hosted API).

An `Embedder` like the shipped model, so the index, the vector cache on disk (keyed by this model id: endpoint
and model, and the text) and the benchmarks treat it alike. What a network adds is handled here:

- **Bounded**: texts go in batches (`batch`); a query's request has a deadline of `timeout` seconds in all (a
  search waits for it; a reply that drips a byte at a time does not get a new timeout per read), a batch of tools
  one of `batch_timeout` (embedding a catalog runs in the background); a reply is read a chunk at a time and
  given up at `_REPLY_LIMIT` bytes (never read whole first). Requests run on threads of their own: at most
  `_QUERY_SLOTS` queries wait for the endpoint at once (another is answered lexically at once, "busy"), so a slow
  endpoint never holds more threads than that, and a caller stops waiting at its deadline exactly;
- **Checked**: a reply must have one finite, non-zero vector per text, all of one size (the first reply fixes it;
  `dimensions` pins it up front); anything else is an `EndpointError`, never a vector;
- **Failing fast**: after a failure of the endpoint the endpoint is not asked again for `retry_after` seconds
  (each search would otherwise wait out the timeout); meanwhile `embed` raises at once and the index answers
  lexically. An endpoint that refuses one input (HTTP 400, 413, 422: a query too long, say) fails that query
  only: one client's query never turns vector search off for the others;
- **Kept apart**: what an endpoint answers besides vectors (an error's body, which may quote another client's
  query) goes to the operator's log only, never into an error a client sees; the URL's credentials
  (`https://user:pass@host`) are sent as Basic auth and never shown: not in errors, not in `model_id` (which
  `_meta` shows and the vector cache stores); see `mcp_pd._redact`;
- **Query vectors remembered**: the last `query_cache` queries' vectors are kept in memory, and in `store` (the
  index's `VectorStore`, keyed like every vector by model and text) when one is set, so a query asked before, by
  this process or an earlier one, is still ranked with vectors while the endpoint is down (`served_from_cache`
  says when that happened).

The API key, when needed, is read from an environment variable named by the operator, never from a flag or a file
of ours. Knows HTTP and vectors; nothing of tools or sessions.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from mcp_pd._redact import public_url, redact, register, register_url

from .embeddings import EmbeddingUnavailable, Vectors
from .store import VectorStore, text_key

__all__ = ["EndpointError", "OpenAIEmbedder", "add_flags", "endpoint_url", "from_flags"]

logger = logging.getLogger("mcp_pd.search")

_REPLY_LIMIT: Final = 64 << 20  # bytes: a reply larger than this is refused (a batch of 64 x 4096 floats is ~6 MB)
# Queries waiting for the endpoint at once (each on a thread of its own); one more is answered lexically at once.
_QUERY_SLOTS: Final = 4
# Statuses by which an endpoint refuses one input (too long, malformed) rather than failing: that query only.
_REFUSED_INPUT: Final = frozenset({400, 413, 422})
_BODY_LOGGED: Final = 300  # characters of an error reply's body kept for the operator's log


class EndpointError(EmbeddingUnavailable):
    """The embeddings endpoint failed, timed out, or answered something that is not the vectors asked for.

    `fault`: the endpoint itself is failing (it is then left alone for a while); False when it refused one input
    or every query slot was taken, which costs that query only."""

    def __init__(self, message: str, *, fault: bool = True) -> None:
        super().__init__(message)
        self.fault = fault


def endpoint_url(url: str) -> str:
    """The full embeddings URL from what an operator types: a base (`http://host:11434`), `.../v1`, or the
    endpoint itself (`.../v1/embeddings`). Its credentials, if any, are kept (see `OpenAIEmbedder`)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"embeddings URL {public_url(url)!r}: expected http(s)://host[:port][/v1[/embeddings]]")
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path = path + "/embeddings" if path.endswith("/v1") else path + "/v1/embeddings"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class OpenAIEmbedder:
    """Unit vectors from an OpenAI-compatible `/v1/embeddings` endpoint (see the module docstring).

    `key_env` names the environment variable holding the API key (sent as `Authorization: Bearer`); it is read at
    each request, so a rotated key needs no restart. A named variable that is unset is an error at start-up.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        key_env: str | None = None,
        timeout: float = 10.0,
        batch_timeout: float = 120.0,
        batch: int = 64,
        dimensions: int | None = None,
        retry_after: float = 30.0,
        query_cache: int = 4096,
    ) -> None:
        if not model.strip():
            raise ValueError("embeddings model: a model name is required (e.g. nomic-embed-text)")
        if timeout <= 0 or batch_timeout <= 0 or batch < 1 or retry_after < 0:
            raise ValueError("embeddings: timeouts must be > 0, batch >= 1, retry_after >= 0")
        if key_env is not None and not os.environ.get(key_env):
            raise ValueError(f"embeddings key: the environment variable {key_env} is not set")
        import httpx2
        import numpy

        self._np: Any = numpy
        register_url(url)  # its user and password are secrets wherever they might be quoted
        full = urlsplit(endpoint_url(url))
        # Sent as Basic auth; the URL kept and shown is without them.
        credentials = (unquote(full.username or ""), unquote(full.password or "")) if full.username else None
        self.url = urlunsplit(full._replace(netloc=_host(full)))  # its query (a key, maybe) is still sent
        self.shown = public_url(self.url)  # what errors, logs and `model_id` say
        self.model = model
        self.key_env = key_env
        self.batch = batch
        self.dimensions = dimensions
        self.retry_after = retry_after
        self._httpx = httpx2
        self.timeout, self.batch_timeout = timeout, batch_timeout
        self._client = httpx2.Client(timeout=httpx2.Timeout(timeout), follow_redirects=False, auth=credentials)
        # The threads requests run on: the query slots and one for the background batches.
        self._threads = ThreadPoolExecutor(_QUERY_SLOTS + 1, thread_name_prefix="mcp-pd-embeddings")
        self._slots = threading.BoundedSemaphore(_QUERY_SLOTS)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self.last_error = ""
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self._query_cache = query_cache
        self._local = threading.local()
        self.store: VectorStore | None = None  # query vectors on disk too (set by the catalog index)

    @property
    def model_id(self) -> str:
        # Endpoint and model: two servers may serve different weights under one name; vectors never mix. Host,
        # port and path only: `_meta` shows this id to every client, and every row of the vector cache holds it.
        parts = urlsplit(self.url)
        return f"openai:{self.model}@{_host(parts)}{parts.path}"

    @property
    def down(self) -> bool:
        """True while the endpoint is not asked again after a failure."""
        return time.monotonic() < self._down_until

    @property
    def served_from_cache(self) -> str:
        """Why this thread's last query vector came from the query cache instead of the endpoint ("" if not)."""
        return str(getattr(self._local, "cached", ""))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit row per text, batch by batch; raises EndpointError on any failure (nothing partial)."""
        return self._embed(texts, self.batch_timeout, query=False)

    def _embed(self, texts: Sequence[str], timeout: float, *, query: bool) -> Vectors:
        np = self._np
        texts = list(texts)
        if not texts:
            empty: Vectors = np.zeros((0, self.dimensions or 1), dtype=np.float32)
            return empty
        batches = range(0, len(texts), self.batch)
        rows = [self._request(texts[i : i + self.batch], timeout, query=query) for i in batches]
        out: Vectors = np.concatenate(rows, axis=0)
        return out

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """As `embed`, remembering each query's vector; while the endpoint fails, remembered queries still answer."""
        np = self._np
        self._local.cached = ""
        with self._lock:
            known = {t: self._queries[t] for t in texts if t in self._queries}
            for t in known:
                self._queries.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            try:
                fresh = self._embed(missing, self.timeout, query=True)
            except EndpointError as exc:
                stored = self._stored(missing)
                if stored is None:
                    raise EndpointError(f"{exc} (and the query was not asked before)") from None
                fresh = stored
                self._local.cached = f"query vector from the vector cache; the endpoint is failing: {exc}"
            else:
                if self.store is not None:
                    self.store.save(self.model_id, {text_key(t): row for t, row in zip(missing, fresh, strict=True)})
            with self._lock:
                for t, row in zip(missing, fresh, strict=True):
                    self._queries[t] = row
                    known[t] = row
                while len(self._queries) > self._query_cache:
                    self._queries.popitem(last=False)
        elif self.down:
            self._local.cached = f"query vector from the cache; the endpoint is failing: {self.last_error}"
        out: Vectors = np.stack([known[t] for t in texts])
        return out

    def _stored(self, texts: list[str]) -> Vectors | None:
        """Every text's vector from the store, or None."""
        if self.store is None:
            return None
        keys = [text_key(t) for t in texts]
        rows = self.store.load(self.model_id, keys)
        if len(rows) != len(set(keys)) or (self.dimensions and any(len(r) != self.dimensions for r in rows.values())):
            return None
        out: Vectors = self._np.stack([rows[k] for k in keys])
        return out

    def _request(self, texts: list[str], timeout: float, *, query: bool) -> Vectors:
        if self.down:
            raise EndpointError(f"embeddings endpoint {self.shown} is left alone after: {self.last_error}")
        try:
            return self._ask(texts, timeout, query=query)
        except EndpointError as exc:
            if exc.fault:  # a refused input or a full house costs this request only
                self.last_error = str(exc)
                self._down_until = time.monotonic() + self.retry_after
            raise

    def _ask(self, texts: list[str], timeout: float, *, query: bool) -> Vectors:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        deadline = time.monotonic() + timeout
        if query and not self._slots.acquire(blocking=False):
            raise EndpointError(
                f"embeddings endpoint {self.shown} is already answering {_QUERY_SLOTS} queries; this one was "
                "ranked without it",
                fault=False,
            )
        try:
            future = self._threads.submit(self._post, body, timeout, deadline)
        except RuntimeError:  # closed
            if query:
                self._slots.release()
            raise EndpointError(f"embeddings endpoint {self.shown}: the client is closed") from None
        if query:
            future.add_done_callback(lambda _: self._slots.release())  # the slot is free once the request ends
        try:
            # The caller's deadline, exactly: the request's thread gives up on its own soon after.
            data = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            raise EndpointError(f"embeddings endpoint {self.shown} timed out after {timeout:g} s") from None
        return self._vectors(data, texts)

    def _post(self, body: dict[str, Any], timeout: float, deadline: float) -> Any:
        """The endpoint's JSON reply, read a chunk at a time: given up past the deadline or past `_REPLY_LIMIT`
        bytes (never read whole first). Runs on the embedder's own threads."""
        httpx = self._httpx
        headers = {"Content-Type": "application/json"}
        if self.key_env is not None:
            key = os.environ.get(self.key_env, "")
            register(key)  # read at each request (a rotated key needs no restart): a secret wherever quoted
            headers["Authorization"] = f"Bearer {key}"
        late = EndpointError(f"embeddings endpoint {self.shown} timed out after {timeout:g} s")
        try:
            with self._client.stream(
                "POST", self.url, json=body, headers=headers, timeout=httpx.Timeout(timeout)
            ) as reply:
                declared = reply.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > _REPLY_LIMIT:
                    raise EndpointError(
                        f"embeddings endpoint {self.shown}: reply of {declared} bytes, over {_REPLY_LIMIT}"
                    )
                if reply.status_code != 200:
                    raise self._refusal(reply, deadline)
                chunks: list[bytes] = []
                size = 0
                for chunk in reply.iter_bytes():
                    size += len(chunk)
                    if size > _REPLY_LIMIT:
                        raise EndpointError(
                            f"embeddings endpoint {self.shown}: reply over {_REPLY_LIMIT} bytes (not read further)"
                        )
                    if time.monotonic() > deadline:
                        raise late
                    chunks.append(chunk)
        except httpx.TimeoutException:
            raise late from None
        except httpx.HTTPError as exc:
            raise EndpointError(f"embeddings endpoint {self.shown}: {type(exc).__name__}: {redact(str(exc))}") from None
        try:
            return json.loads(b"".join(chunks))
        except ValueError as exc:
            raise EndpointError(f"embeddings endpoint {self.shown}: not an embeddings reply ({exc})") from None

    def _refusal(self, reply: Any, deadline: float) -> EndpointError:
        """An error reply: its status for the error (which clients may see), the start of its body (read until
        the deadline at most) for the operator's log only (it may quote a client's query)."""
        excerpt = b""
        for chunk in reply.iter_bytes():
            excerpt += chunk
            if len(excerpt) >= _BODY_LOGGED or time.monotonic() > deadline:
                break
        status = reply.status_code
        text = excerpt[:_BODY_LOGGED].decode("utf-8", "replace")
        logger.warning("embeddings endpoint %s answered HTTP %d: %r", self.shown, status, text)
        if status in _REFUSED_INPUT:
            return EndpointError(
                f"embeddings endpoint {self.shown} refused this input (HTTP {status}); other queries still use it",
                fault=False,
            )
        return EndpointError(f"embeddings endpoint {self.shown} answered HTTP {status}")

    def _vectors(self, data: Any, texts: list[str]) -> Vectors:
        np = self._np
        try:
            items = sorted(data["data"], key=lambda item: int(item.get("index", 0)))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EndpointError(f"embeddings endpoint {self.shown}: not an embeddings reply ({exc})") from None
        if len(vectors) != len(texts):
            raise EndpointError(f"embeddings endpoint {self.shown}: {len(vectors)} vectors for {len(texts)} texts")
        sizes = {len(v) for v in vectors}
        expected = self.dimensions
        if len(sizes) != 1 or (expected is not None and sizes != {expected}):
            raise EndpointError(
                f"embeddings endpoint {self.shown}: vectors of size {sorted(sizes)}, expected {expected or 'one size'}"
            )
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not all(math.isfinite(float(n)) and float(n) > 0 for n in norms.ravel()):
            raise EndpointError(f"embeddings endpoint {self.shown}: a vector is zero or not finite")
        if self.dimensions is None:
            self.dimensions = matrix.shape[1]  # every later reply must match the vectors already indexed
        out: Vectors = matrix / norms
        return out

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._client.close()


def _host(parts: Any) -> str:
    """`host[:port]` of a split URL, without its user and password."""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port is not None else host


def add_flags(parser: Any) -> None:
    """`--embeddings-url`, `--embeddings-model`, `--embeddings-key-env`, `--embeddings-timeout` (an argparse parser)."""
    parser.add_argument(
        "--embeddings-url",
        metavar="URL",
        help="catalog mode: rank with the vectors of an OpenAI-compatible /v1/embeddings endpoint (Ollama, llama.cpp, "
        "vLLM, text-embeddings-inference, LM Studio, a hosted API) instead of the bundled model; when it fails, "
        "search answers from cached vectors or lexically",
    )
    parser.add_argument("--embeddings-model", metavar="NAME", help="the model the endpoint should run (required)")
    parser.add_argument(
        "--embeddings-key-env",
        metavar="VAR",
        help="the environment variable holding the endpoint's API key (sent as a Bearer token)",
    )
    parser.add_argument(
        "--embeddings-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds a search waits for the endpoint to embed its query (default 10; a batch of tools gets 120); "
        "after a failure the endpoint is left alone for 30 s",
    )


def from_flags(args: Any, command: str) -> OpenAIEmbedder | None:
    """The endpoint embedder the flags ask for (None without `--embeddings-url`); SystemExit on a bad value."""
    url, model = getattr(args, "embeddings_url", None), getattr(args, "embeddings_model", None)
    if url is None:
        if model is not None or getattr(args, "embeddings_key_env", None) is not None:
            raise SystemExit(f"mcp-pd {command}: --embeddings-model and --embeddings-key-env need --embeddings-url")
        return None
    if not model:
        raise SystemExit(f"mcp-pd {command}: --embeddings-url needs --embeddings-model NAME (the model to run)")
    try:
        return OpenAIEmbedder(url, model, key_env=args.embeddings_key_env, timeout=args.embeddings_timeout)
    except ValueError as exc:
        raise SystemExit(f"mcp-pd {command}: {exc}") from None
