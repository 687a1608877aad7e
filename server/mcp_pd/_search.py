"""Tool search for catalog mode: weighted-field BM25, a domain vocabulary, fuzzy repair, optional embeddings.

What a query goes through (each step can be switched off in `SearchConfig`, which is how the benchmark's
ablation table is made):

1. Unicode-aware tokens: NFKC, case folding, accents folded (`Schlüssel` = `schlussel`), snake/camel/kebab
   names split (`listPullRequests` = `list pull requests`), a light English stemmer, CJK runs cut into
   character bigrams (Chinese and Japanese have no spaces).
2. The vocabulary (`_search_data/vocabulary.json`): domain synonyms (PR = pull request, ticket = issue,
   pager = on-call alert ...) added to the query at a lower weight, and a glossary of other languages'
   words for the domain's terms (German, French, Spanish, Portuguese, Italian, Japanese, Chinese, Korean).
3. Unknown words are repaired against the index's own terms (rapidfuzz), so `kubernets` finds `kubernetes`.
4. BM25 over fields weighted by what they say: the name's words count most, then title and summary, then
   parameter names and examples, then the long description and parameter descriptions.
5. With an `Embedder` (the `semantic` extra), cosine similarity of all-MiniLM vectors, fused with BM25 by a
   weighted sum of normalized scores (vectors are cached by document version: only changed tools re-embed).
6. Abstention: the best hit's confidence (the IDF-weighted share of the query it explains, blended with its
   cosine similarity) below a calibrated threshold gives an empty result, with the categories to browse.

`allowed` is applied before ranking and before counting: a tool it rejects never appears in hits, totals,
similar tools, close names or category counts. Knows tools and text, nothing of sessions, transports or the SDK.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rapidfuzz import fuzz, process
from rapidfuzz.distance import DamerauLevenshtein

if TYPE_CHECKING:
    from ._embeddings import Embedder
    from ._vector_store import VectorStore

__all__ = [
    "SearchConfig",
    "SearchDocument",
    "SearchHit",
    "SearchIndex",
    "SearchResult",
    "tokenize",
]

Allowed = Callable[[str], bool] | None

# A query is read up to this many characters and words (longer ones are cut, not refused).
_QUERY_CHARS: Final = 1_000
_QUERY_WORDS: Final = 64

_DATA: Final = Path(__file__).resolve().parent / "_search_data"

# -- tokens ---------------------------------------------------------------------------------------------

_HUMP: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_RUN: Final = re.compile(r"[^\W_]+")
_COMBINING: Final = re.compile(r"[\u0300-\u036f]")
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "from",
        "by",
        "with",
        "without",
        "at",
        "as",
        "is",
        "are",
        "be",
        "been",
        "being",
        "was",
        "were",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "and",
        "or",
        "not",
        "no",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "they",
        "them",
        "their",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "some",
        "each",
        "every",
        "into",
        "onto",
        "about",
        "over",
        "under",
        "than",
        "then",
        "so",
        "if",
        "else",
        "also",
        "just",
        "only",
        "via",
        "per",
        "using",
        "use",
        "used",
        "please",
        "want",
        "need",
        "let",
        "lets",
        "like",
        "get",
        "gets",
        "show",
        "shows",
        "give",
        "tell",
        "find",
        "me",
        "one",
        "ones",
        "thing",
        "things",
        "something",
    ]
)
# A few words of other languages that carry no meaning for search (the glossary maps the ones that do).
_STOP_OTHER: Final = frozenset(
    [
        "der",
        "die",
        "das",
        "den",
        "dem",
        "des",
        "ein",
        "eine",
        "einen",
        "einem",
        "einer",
        "und",
        "oder",
        "mit",
        "von",
        "zu",
        "im",
        "am",
        "auf",
        "fur",
        "ist",
        "sind",
        "alle",
        "meine",
        "meinen",
        "mein",
        "ich",
        "wir",
        "bitte",
        "le",
        "la",
        "les",
        "un",
        "une",
        "des",
        "du",
        "de",
        "et",
        "ou",
        "avec",
        "pour",
        "dans",
        "sur",
        "est",
        "sont",
        "mes",
        "mon",
        "ma",
        "tous",
        "toutes",
        "el",
        "los",
        "las",
        "una",
        "unos",
        "y",
        "o",
        "con",
        "para",
        "por",
        "en",
        "es",
        "son",
        "mis",
        "mi",
        "todos",
        "todas",
        "il",
        "lo",
        "gli",
        "uno",
        "e",
        "per",
        "di",
        "da",
        "um",
        "uma",
        "os",
        "as",
        "do",
        "da",
        "dos",
        "das",
        "em",
        "no",
        "na",
    ]
)
_IRREGULAR: Final = {"ran": "run", "running": "run", "wrote": "write", "written": "write", "children": "child"}


def _is_cjk(ch: str) -> bool:
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
    text = _HUMP.sub(" ", unicodedata.normalize("NFKC", text)).casefold()
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


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, *, stop: bool = True) -> list[str]:
    """Index terms of `text`: stemmed words, stop words dropped, CJK runs as bigrams."""
    out: list[str] = []
    for run in _RUN.findall(normalize(text)):
        if run.isascii():
            if not stop or (run not in _STOP and run not in _STOP_OTHER):
                out.append(stem(run))
            continue
        # Split a mixed run (`pod一覧`) into its CJK and non-CJK parts.
        start = 0
        for i in range(1, len(run) + 1):
            if i == len(run) or _is_cjk(run[i]) != _is_cjk(run[start]):
                part = run[start:i]
                if _is_cjk(part[0]):
                    out.extend(_cjk_terms(part))
                elif not stop or (part not in _STOP and part not in _STOP_OTHER):
                    out.append(stem(part))
                start = i
    return out


def _plain_tokens(text: str) -> list[str]:
    """Words without stemming (the ablation's tokenizer; CJK runs stay whole)."""
    return [w for w in _RUN.findall(normalize(text)) if w not in _STOP]


@lru_cache(maxsize=65_536)
def _analyze(text: str, stemming: bool) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """((index term, count) pairs, surface words for spelling repair) of a text; cached because definitions
    repeat themselves (every GitHub tool has an `owner` and a `repo` described the same way)."""
    terms = tokenize(text) if stemming else _plain_tokens(text)
    counts: dict[str, int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    words = tuple(w for w in _RUN.findall(normalize(text)) if len(w) >= 3 and w.isascii() and w.isalpha())
    return tuple(counts.items()), words


# -- documents ------------------------------------------------------------------------------------------


_CLAUSE: Final = re.compile(
    r"[.;!?\u3002\uff1b\uff01\uff1f]\s+|,\s+|\s+(?:and then|then|and|also|after that|before|so that|including)\s+",
    re.IGNORECASE,
)


def clauses(query: str, *, min_words: int = 10, most: int = 4) -> list[str]:
    """The steps of a long task (sentences, comma- and `and`/`then`-joined parts of 2 words or more), or [] for a
    query shorter than `min_words` words or of one step."""
    if len(query.split()) < min_words:
        return []
    parts = [p.strip() for p in _CLAUSE.split(query[:_QUERY_CHARS]) if p and len(p.split()) >= 2]
    return parts[:most] if len(parts) >= 2 else []


def _first_sentence(text: str) -> str:
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)[.!?](\s|$)", paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """What the index knows of one tool. `version` keys the vector cache: same version, same text."""

    name: str
    category: str = ""
    summary: str = ""
    description: str = ""
    title: str = ""
    parameters: Mapping[str, str] = field(default_factory=dict)
    examples: Sequence[str] = ()
    version: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("SearchDocument needs a non-empty tool name")
        if not self.version:
            object.__setattr__(self, "version", self.digest())

    def digest(self) -> str:
        payload = json.dumps(
            [
                self.name,
                self.category,
                self.summary,
                self.description,
                self.title,
                dict(self.parameters),
                list(self.examples),
            ],
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any], category: str = "", version: str = "") -> SearchDocument:
        """From a tool definition as served (MCP fields, plus this project's `minimal_description`, `examples`,
        `usage_guidance` and `category` when present)."""
        description = str(definition.get("description") or "")
        annotations = definition.get("annotations")
        title = str(definition.get("title") or (annotations or {}).get("title") or "")
        summary = str(definition.get("minimal_description") or _first_sentence(description))
        guidance = definition.get("usage_guidance")
        if isinstance(guidance, Mapping) and guidance.get("when_to_use"):
            description = f"{description}\n{guidance['when_to_use']}"
        schema = definition.get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        parameters: dict[str, str] = {}
        if isinstance(properties, Mapping):
            for pname, prop in properties.items():
                text = str(prop.get("description") or "") if isinstance(prop, Mapping) else ""
                if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list):
                    text += " " + " ".join(str(v) for v in prop["enum"][:30])
                parameters[str(pname)] = text
        examples = []
        for example in definition.get("examples") or ():
            if isinstance(example, Mapping) and example.get("description"):
                examples.append(str(example["description"]))
            elif isinstance(example, str):
                examples.append(example)
        return cls(
            name=str(definition["name"]),
            category=category or str(definition.get("category") or ""),
            summary=summary,
            description=description,
            title=title,
            parameters=parameters,
            examples=tuple(examples),
            version=version,
        )

    def embedding_text(self) -> str:
        """The text embedded for semantic search: name words, title, summary, the description's opening."""
        words = " ".join(_RUN.findall(_HUMP.sub(" ", self.name).replace("_", " ")))
        head = " ".join(self.description.split())[:400]
        return ". ".join(p.rstrip(" .") for p in (words, self.title, self.summary, head) if p)


# -- configuration --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Every knob of the ranking; the defaults are the calibrated ones (benchmarks/search.py, dev set only)."""

    k1: float = 1.2
    b: float = 0.75
    # Field weights (term frequency multipliers).
    name_weight: float = 4.0
    title_weight: float = 2.0
    summary_weight: float = 2.0
    description_weight: float = 0.5
    parameter_name_weight: float = 1.0
    parameter_description_weight: float = 0.2
    example_weight: float = 1.0
    category_weight: float = 0.5
    fields: bool = True  # False: one bag of words (name counted twice), the classic tool BM25
    stemming: bool = True
    synonyms: bool = True
    synonym_weight: float = 0.4
    translations: bool = True
    spelling: bool = True
    fuzzy_names: bool = True
    semantic_weight: float = 0.7  # share of the fused score given to the cosine (hybrid; chosen on LiveMCPBench)
    cjk_unknown_importance: float = 0.3
    # A long task ("find X, then write Y") is also embedded clause by clause: a tool's cosine is this share of its
    # best clause's plus the rest of the whole query's (a multi-step task's one vector blurs its steps).
    clause_weight: float = 0.5
    # Hits whose fused scores are within this share of the best one are near-ties (SearchResult.ties).
    tie_margin: float = 0.05
    abstain: bool = True
    # Abstain when the best hit explains less than this share of the query (IDF-weighted words) and fewer than
    # this many of its words (a long task spreads its words over several tools: a share alone abstains on it) ...
    abstain_coverage_lexical: float = 0.14
    abstain_words_lexical: int = 2
    # ... or, with vectors, less than this share while no visible tool's cosine similarity reaches the other.
    abstain_coverage: float = 0.3
    abstain_cosine: float = 0.25


# -- vocabulary -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Expansion:
    terms: tuple[str, ...]
    weight_scale: float  # 1.0 for a translation (the original word matches nothing), synonym_weight otherwise


class _Vocabulary:
    """Phrase -> extra query terms. Latin phrases match whole token sequences; CJK ones match substrings."""

    def __init__(self, data: Mapping[str, Any], stemming: bool) -> None:
        self.synonyms: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.translations: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        self.cjk: dict[str, set[tuple[str, ...]]] = {}

        def key(phrase: str) -> tuple[str, ...]:
            words = _RUN.findall(normalize(phrase))
            return tuple(stem(w) if stemming else w for w in words)

        for group in data.get("synonyms", []):
            keys = [key(p) for p in group]
            for k in keys:
                self.synonyms.setdefault(k, set()).update(o for o in keys if o != k)
        for english, foreign in data.get("translations", {}).items():
            target = key(english)
            for phrase in foreign:
                if any(_is_cjk(ch) for ch in phrase):
                    self.cjk.setdefault(normalize(phrase), set()).add(target)
                else:
                    self.translations.setdefault(key(phrase), set()).add(target)
        self.max_len = max((len(k) for k in (*self.synonyms, *self.translations)), default=1)
        self.cjk_keys = sorted(self.cjk, key=len, reverse=True)

    @staticmethod
    def load(stemming: bool) -> _Vocabulary:
        data = json.loads((_DATA / "vocabulary.json").read_text(encoding="utf-8"))
        return _Vocabulary(data, stemming)


_VOCAB_LOCK = threading.Lock()
_VOCABS: dict[bool, _Vocabulary] = {}


def _vocabulary(stemming: bool) -> _Vocabulary:
    with _VOCAB_LOCK:
        if stemming not in _VOCABS:
            _VOCABS[stemming] = _Vocabulary.load(stemming)
        return _VOCABS[stemming]


# -- results --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    category: str
    summary: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits best first; `total` visible tools matched; on abstention no hits, a reason and categories to browse.

    `ties`: when the best hits score within `SearchConfig.tie_margin` of each other, each of them (three at most)
    with the words of its name and one-liner that the others lack: what tells them apart.
    """

    hits: list[SearchHit]
    total: int
    abstained: bool = False
    reason: str = ""
    browse: list[str] = field(default_factory=list)
    confidence: float = 0.0
    ties: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _Query:
    terms: dict[str, float]  # term -> query weight
    # Per query word: ([importance, known to the index], the terms that answer it), for coverage.
    groups: list[tuple[list[float], set[str]]]
    words: int


# -- the index ------------------------------------------------------------------------------------------


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
        self.embedder = embedder
        # Vectors on disk by (model, text): read before embedding, written after (None: memory only).
        self.store = store
        self._lock = threading.RLock()
        self._vocab = _vocabulary(self.config.stemming)
        self._docs: list[SearchDocument | None] = []
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        self._postings: dict[str, dict[int, float]] = {}
        self._doc_terms: list[dict[str, float]] = []  # slot -> term -> weighted tf
        self._lengths: list[float] = []
        self._avgdl = 1.0
        self._avgdl_n = 0
        self._corrections: dict[str, str | None] = {}
        # Surface words (lower case, unstemmed) -> their term, for repairing misspelled query words.
        self._words: dict[str, str] = {}
        self._registered: set[str] = set()  # texts whose words are in _words already
        self._words_cache: list[str] | None = None
        # Vectors: slot -> row; cache by (model, version) so a re-upsert of the same version costs nothing.
        self._vector_cache: dict[str, Any] = {}
        self._matrix: Any = None
        self._matrix_dirty = True
        # numpy (installed with the semantic extra, and nearly everywhere else) scores postings as arrays:
        # 10x faster at 10,000 tools. Without it the same scores come from dictionaries.
        self._np: Any = None
        self._arrays: dict[str, tuple[Any, Any]] = {}
        try:
            import numpy

            self._np = numpy
        except ModuleNotFoundError:
            if embedder is not None:
                raise
        self._by_category: dict[str, set[str]] = {}
        self.embedded = 0  # texts this index had to embed (the rest came from memory or the store)

    # -- maintenance ------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    def names(self) -> list[str]:
        return sorted(self._slots)

    def document(self, name: str) -> SearchDocument:
        slot = self._slots.get(name)
        doc = self._docs[slot] if slot is not None else None
        if doc is None:
            raise KeyError(name)
        return doc

    def upsert(self, docs: Iterable[SearchDocument]) -> int:
        """Add or replace documents; unchanged versions are skipped. Returns how many changed."""
        docs = list(docs)
        if self.embedder is not None:
            # Outside the index lock: embedding takes ~30 ms a tool, and searches keep answering meanwhile.
            self._embed_missing(docs)
        changed: list[tuple[int, SearchDocument]] = []
        with self._lock:
            for doc in docs:
                slot = self._slots.get(doc.name)
                if slot is not None:
                    old = self._docs[slot]
                    if old is not None and old.version == doc.version and old == doc:
                        continue
                    self._unindex(slot)
                else:
                    slot = self._free.pop() if self._free else len(self._docs)
                    if slot == len(self._docs):
                        self._docs.append(None)
                        self._doc_terms.append({})
                        self._lengths.append(0.0)
                    self._slots[doc.name] = slot
                self._docs[slot] = doc
                changed.append((slot, doc))
            if not changed:
                return 0
            for slot, doc in changed:
                terms = self._weighted_terms(doc)
                self._doc_terms[slot] = terms
                self._lengths[slot] = sum(terms.values())
            n = len(self._slots)
            # Saturation depends on the mean length: recompute every posting only when the catalog moved by
            # a fifth (a hot reload of a few files re-weights just those files).
            if self._avgdl_n == 0 or abs(n - self._avgdl_n) > 0.2 * self._avgdl_n:
                self._reweight_all()
            else:
                for slot, _ in changed:
                    self._index(slot)
            self._words_cache = None
            self._corrections.clear()
            if self.embedder is not None:
                self._matrix_dirty = True
            return len(changed)

    def remove(self, names: Iterable[str]) -> int:
        """Drop documents by name (unknown names are ignored). Returns how many were removed."""
        removed = 0
        with self._lock:
            for name in names:
                slot = self._slots.pop(name, None)
                if slot is None:
                    continue
                self._unindex(slot)
                self._docs[slot] = None
                self._doc_terms[slot] = {}
                self._lengths[slot] = 0.0
                self._free.append(slot)
                removed += 1
            if removed:
                self._words_cache = None
                self._corrections.clear()
                self._matrix_dirty = True
        return removed

    def _weighted_terms(self, doc: SearchDocument) -> dict[str, float]:
        c = self.config
        terms: dict[str, float] = {}

        words = self._words
        registered = self._registered
        stemming = c.stemming

        def add(text: str, weight: float) -> None:
            if not text:
                return
            found, surface = _analyze(text, stemming)
            for t, n in found:
                terms[t] = terms.get(t, 0.0) + weight * n
            if c.spelling and text not in registered:
                registered.add(text)
                for w in surface:
                    if w not in words:
                        words[w] = stem(w) if stemming else w

        name_text = doc.name.replace("_", " ").replace("-", " ")
        if not c.fields:
            add(name_text, 2.0)
            add(doc.description or doc.summary, 1.0)
            return terms
        add(name_text, c.name_weight)
        add(doc.title, c.title_weight)
        add(doc.summary, c.summary_weight)
        add(doc.description, c.description_weight)
        for pname, ptext in doc.parameters.items():
            add(pname.replace("_", " "), c.parameter_name_weight)
            add(ptext, c.parameter_description_weight)
        for example in doc.examples:
            add(example, c.example_weight)
        add(doc.category.replace("-", " ").replace("_", " "), c.category_weight)
        return terms

    def _tokens(self, text: str) -> list[str]:
        return tokenize(text) if self.config.stemming else _plain_tokens(text)

    def _saturation(self, tf: float, length: float) -> float:
        k1, b = self.config.k1, self.config.b
        return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / self._avgdl))

    def _index(self, slot: int) -> None:
        k1, b = self.config.k1, self.config.b
        norm = k1 * (1 - b + b * self._lengths[slot] / self._avgdl)
        postings, arrays = self._postings, self._arrays
        for term, tf in self._doc_terms[slot].items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = {}
            posting[slot] = tf * (k1 + 1) / (tf + norm)  # BM25 saturation, as _saturation
            if arrays:
                arrays.pop(term, None)
        doc = self._docs[slot]
        if doc is not None:
            self._by_category.setdefault(doc.category, set()).add(doc.name)

    def _unindex(self, slot: int) -> None:
        for term in self._doc_terms[slot]:
            self._arrays.pop(term, None)
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(slot, None)
                if not posting:
                    del self._postings[term]
        doc = self._docs[slot]
        if doc is not None:
            members = self._by_category.get(doc.category)
            if members is not None:
                members.discard(doc.name)
                if not members:
                    del self._by_category[doc.category]

    def _reweight_all(self) -> None:
        live = [s for s in self._slots.values()]
        self._avgdl = max(1.0, sum(self._lengths[s] for s in live) / max(1, len(live)))
        self._avgdl_n = len(live)
        self._postings = {}
        self._arrays = {}
        self._by_category = {}
        for slot in live:
            self._index(slot)

    # -- vectors ------------------------------------------------------------------------------------------

    def _embed_missing(self, docs: Sequence[SearchDocument]) -> None:
        assert self.embedder is not None
        model = self.embedder.model_id
        todo: dict[str, SearchDocument] = {}
        for d in docs:
            key = f"{model}:{d.version}"
            if key not in self._vector_cache:
                todo.setdefault(key, d)
        if not todo:
            return
        texts = {key: d.embedding_text() for key, d in todo.items()}
        if self.store is not None:
            from ._vector_store import text_key

            keys = {key: text_key(text) for key, text in texts.items()}
            stored = self.store.load(model, keys.values())
            for key, tkey in keys.items():
                row = stored.get(tkey)
                if row is not None:
                    self._vector_cache[key] = row
                    del texts[key]
        if texts:
            vectors = self.embedder.embed(list(texts.values()))
            for key, row in zip(texts, vectors, strict=True):
                self._vector_cache[key] = row  # one dict store each: safe beside a reader
            if self.store is not None:
                self.store.save(model, {keys[key]: row for key, row in zip(texts, vectors, strict=True)})
        self.embedded += len(texts)

    def cached_vectors(self) -> dict[str, Any]:
        """Document version -> vector for the current model (to save, or to seed another index with)."""
        if self.embedder is None:
            return {}
        prefix = f"{self.embedder.model_id}:"
        with self._lock:
            return {k[len(prefix) :]: v for k, v in self._vector_cache.items() if k.startswith(prefix)}

    def seed_vectors(self, vectors: Mapping[str, Any]) -> None:
        """Pre-fill the vector cache (version -> vector), e.g. from a previous run saved by the caller."""
        if self.embedder is None:
            return
        model = self.embedder.model_id
        with self._lock:
            for version, row in vectors.items():
                self._vector_cache[f"{model}:{version}"] = row

    def _vectors(self) -> Any:
        if self._matrix_dirty:
            np = self._np
            model = self.embedder.model_id if self.embedder is not None else ""
            matrix = np.zeros((max(1, len(self._docs)), 384), dtype=np.float32)
            for slot, doc in enumerate(self._docs):
                if doc is not None:
                    row = self._vector_cache.get(f"{model}:{doc.version}")
                    if row is not None:
                        if matrix.shape[1] != len(row):
                            matrix = np.zeros((max(1, len(self._docs)), len(row)), dtype=np.float32)
                        matrix[slot] = row
            self._matrix = matrix
            self._matrix_dirty = False
        return self._matrix

    def _cosines(self, vector: Any) -> Any:
        # einsum, not `@`: a matrix-vector product through multi-threaded BLAS waits for a second core, which
        # costs 5x the wall time (8 ms against 1.4 ms at 10,000 tools) on a busy 2-core machine.
        return self._np.einsum("ij,j->i", self._vectors(), vector)

    # -- queries ------------------------------------------------------------------------------------------

    def _word_list(self) -> list[str]:
        if self._words_cache is None:
            self._words_cache = [w for w, t in self._words.items() if t in self._postings]
        return self._words_cache

    def _correct(self, word: str) -> str | None:
        """The index term of the closest known word to an unknown query word (one edit in four letters,
        transpositions count one), the more frequent term on a tie; None when nothing is that close."""
        if word in self._corrections:
            return self._corrections[word]
        found = None
        if word.isascii() and word.isalpha() and 4 <= len(word) <= 40:
            cutoff = 0.74 if len(word) <= 5 else 0.8
            best: tuple[float, int] | None = None
            for candidate, similarity, _ in process.extract(
                word, self._word_list(), scorer=DamerauLevenshtein.normalized_similarity, limit=8, score_cutoff=cutoff
            ):
                term = self._words[candidate]
                rank = (round(similarity, 3), len(self._postings.get(term, ())))
                if best is None or rank > best:
                    best, found = rank, term
        if len(self._corrections) > 10_000:
            self._corrections.clear()
        self._corrections[word] = found
        return found

    def _idf(self, term: str) -> float:
        n = len(self._slots)
        df = len(self._postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def _parse(self, query: str) -> _Query:
        c = self.config
        # Bounded work whatever the caller sends: a task description needs no more than this.
        query = query[:_QUERY_CHARS]
        words = self._tokens(query)[:_QUERY_WORDS]
        terms: dict[str, float] = {}
        groups: list[tuple[list[float], set[str]]] = []
        unknown_idf = math.log(1 + (len(self._slots) + 0.5) / 0.5)

        def bump(term: str, weight: float) -> None:
            if weight > terms.get(term, 0.0):
                terms[term] = weight

        surface = [w for w in _RUN.findall(normalize(query)) if w.isascii()]
        raw_of = {(stem(w) if c.stemming else w): w for w in surface}
        for word in words:
            answer = {word}
            if word not in self._postings and c.spelling:
                fixed = self._correct(raw_of.get(word, word))
                if fixed is not None:
                    answer.add(fixed)
                    bump(fixed, 0.9)
            bump(word, 1.0)
            if word in self._postings:
                importance = self._idf(word)
            elif _is_cjk(word[0]):
                # Unknown CJK bigrams are mostly particles and word boundaries (`を作`, `一个`), not content.
                importance = unknown_idf * c.cjk_unknown_importance
            else:
                importance = unknown_idf
            groups.append(([importance, float(word in self._postings)], answer))
        # Vocabulary phrases over the (unstemmed-then-stemmed) word sequence of the query.
        seq = [stem(x) if c.stemming else x for x in _RUN.findall(normalize(query))][: _QUERY_WORDS * 2]
        vocab = self._vocab
        for i in range(len(seq)):
            for n in range(1, min(vocab.max_len, len(seq) - i) + 1):
                key = tuple(seq[i : i + n])
                targets: list[tuple[tuple[str, ...], float]] = []
                if c.synonyms:
                    targets += [(t, c.synonym_weight) for t in vocab.synonyms.get(key, ())]
                if c.translations:
                    targets += [(t, 1.0) for t in vocab.translations.get(key, ())]
                self._expand(key, targets, terms, groups, unknown_idf)
        if c.translations and any(_is_cjk(ch) for ch in query):
            text = normalize(query)
            for phrase in vocab.cjk_keys:
                if phrase in text:
                    targets = [(t, 1.0) for t in vocab.cjk[phrase]]
                    self._expand(tuple(_cjk_terms(phrase)), targets, terms, groups, unknown_idf)
                    text = text.replace(phrase, " ")
        return _Query(terms, groups, len(words))

    def _expand(
        self,
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
                if t in _STOP:
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

    def _visible(self, slot: int, allowed: Allowed, category: str | None) -> bool:
        doc = self._docs[slot]
        if doc is None:
            return False
        if category is not None and doc.category != category:
            return False
        return allowed is None or allowed(doc.name)

    def _lexical(self, q: _Query) -> dict[int, float]:
        """BM25 score per matching slot (dictionary accumulation: the path without numpy)."""
        scores: dict[int, float] = {}
        get = scores.get
        for term, qw in q.terms.items():
            posting = self._postings.get(term)
            if not posting:
                continue
            w = qw * self._idf(term)
            for slot, sat in posting.items():
                scores[slot] = get(slot, 0.0) + w * sat
        return scores

    def _posting_arrays(self, term: str) -> tuple[Any, Any] | None:
        found = self._arrays.get(term)
        if found is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            np = self._np
            found = (
                np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                np.fromiter(posting.values(), dtype=np.float32, count=len(posting)),
            )
            self._arrays[term] = found
        return found

    def _candidates(self, q: _Query, allowed: Allowed, category: str | None, keep: int) -> tuple[dict[int, float], int]:
        """The `keep` best visible slots by BM25 with their scores, and how many visible slots matched at all."""
        filtered = allowed is not None or category is not None
        if self._np is None:
            raw = self._lexical(q)
            visible = {s: v for s, v in raw.items() if self._visible(s, allowed, category)} if filtered else raw
            if len(visible) <= keep:
                return visible, len(visible)
            return dict(heapq.nlargest(keep, visible.items(), key=lambda kv: kv[1])), len(visible)
        np = self._np
        scores = np.zeros(len(self._docs), dtype=np.float32)
        for term, qw in q.terms.items():
            arrays = self._posting_arrays(term)
            if arrays is not None:
                slots, sats = arrays
                scores[slots] += np.float32(qw * self._idf(term)) * sats  # slots are unique within a term
        matched = np.flatnonzero(scores)
        if filtered:
            matched = np.fromiter((s for s in matched.tolist() if self._visible(s, allowed, category)), dtype=np.int64)
        total = len(matched)
        if total > keep:
            matched = matched[np.argpartition(-scores[matched], keep)[:keep]]
        return dict(zip(matched.tolist(), scores[matched].tolist(), strict=True)), total

    def _answered(self, q: _Query, slot: int) -> int:
        """How many of the query's words the index knows are answered by the tool in `slot`."""
        return sum(
            1
            for importance, answer in q.groups
            if importance[1] and any(slot in self._postings.get(t, ()) for t in answer)
        )

    def _coverage(self, q: _Query, slot: int) -> float:
        total = sum(importance[0] for importance, _ in q.groups)
        if total <= 0:
            return 0.0
        got = 0.0
        for importance, answer in q.groups:
            if any(slot in self._postings.get(t, ()) for t in answer):
                got += importance[0]
        return got / total

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
        query = query[:_QUERY_CHARS]
        with self._lock:
            q = self._parse(query)
            # Only the best few hundred lexical matches can reach the top `limit` after fusion.
            visible, total = self._candidates(q, allowed, category, max(100, limit * 20))
            cosines: dict[int, float] = {}
            use_vectors = semantic and self.embedder is not None and len(self._slots) > 0
            if use_vectors:
                assert self.embedder is not None
                # A model that embeds queries differently from documents (e5's "query: ") says so by embed_query.
                embed_query = getattr(self.embedder, "embed_query", None) or self.embedder.embed
                parts = clauses(query) if c.clause_weight > 0 else []
                vectors = embed_query([query, *parts])  # one batch: the clauses cost little more than the query
                sims = self._cosines(vectors[0])
                if parts:
                    best_clause = self._np.max(self._np.stack([self._cosines(v) for v in vectors[1:]]), axis=0)
                    sims = (1 - c.clause_weight) * sims + c.clause_weight * best_clause
                # Candidates: the lexical matches plus the semantic top few hundred.
                top = self._np.argpartition(-sims, min(len(sims) - 1, 200))[:200]
                for s in (*visible.keys(), *(int(x) for x in top)):
                    if s < len(self._docs) and self._visible(s, allowed, category):
                        cosines[s] = float(sims[s])
            name_bonus = self._name_matches(query, allowed, category) if c.fuzzy_names else {}
            candidates = set(visible) | set(cosines) | set(name_bonus)
            if not candidates:
                return self._abstain(query, 0, "no tool matches any word of the query", allowed, 0.0)
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
            coverage = max(self._coverage(q, top_slot), min(1.0, name_bonus.get(top_slot, 0.0)))
            # The best cosine any visible tool reaches: a task no tool is close to in meaning is unanswerable
            # here, whichever tool the fusion put first.
            cosine = max(cosines.values(), default=0.0) if use_vectors else None
            if cosine is None:
                unsure = coverage < c.abstain_coverage_lexical and self._answered(q, top_slot) < c.abstain_words_lexical
            else:
                unsure = coverage < c.abstain_coverage and cosine < c.abstain_cosine
            if c.abstain and unsure:
                return self._abstain(query, total, "no tool explains the query well", allowed, coverage)
            confidence = coverage if cosine is None else max(coverage, cosine)
            hits = []
            for slot, score in ranked:
                doc = self._docs[slot]
                assert doc is not None
                hits.append(SearchHit(doc.name, doc.category, doc.summary, round(score, 4)))
            return SearchResult(hits, total, confidence=round(confidence, 4), ties=self._ties(ranked))

    def _ties(self, ranked: Sequence[tuple[int, float]]) -> dict[str, list[str]]:
        """For near-tied best hits: the words of each one's name and one-liner that the others lack."""
        if len(ranked) < 2 or ranked[0][1] <= 0:
            return {}
        floor = ranked[0][1] * (1 - self.config.tie_margin)
        band = [slot for slot, score in ranked[:3] if score >= floor]
        if len(band) < 2:
            return {}
        words: dict[int, dict[str, str]] = {}  # slot -> term -> the word as written
        for slot in band:
            doc = self._docs[slot]
            assert doc is not None
            name = _HUMP.sub(" ", doc.name).replace("_", " ").replace("-", " ")
            found: dict[str, str] = {}
            for word in _RUN.findall(f"{name} {doc.summary} {doc.category.replace('-', ' ').replace('_', ' ')}"):
                lowered = word.casefold()  # as written (normalize would split GitHub into two words)
                if lowered in _STOP or len(lowered) < 3:
                    continue
                found.setdefault(stem(lowered) if self.config.stemming else lowered, lowered)
            words[slot] = found
        ties: dict[str, list[str]] = {}
        for slot in band:
            others = set().union(*(words[o] for o in band if o != slot))
            own = [t for t in words[slot] if t not in others]
            own.sort(key=lambda t: -self._idf(t))
            doc = self._docs[slot]
            assert doc is not None
            if own:
                ties[doc.name] = [words[slot][t] for t in own[:4]]
        return ties if len(ties) >= 2 else {}

    def _name_matches(self, query: str, allowed: Allowed, category: str | None) -> dict[int, float]:
        """A query that looks like a tool name (one word with `_`, `-` or humps) ranks close names first."""
        text = query.strip()
        if not text or " " in text or not re.search(r"[_\-]|[a-z][A-Z]", text):
            return {}
        bonus: dict[int, float] = {}
        exact = self._slots.get(text)
        if exact is not None and self._visible(exact, allowed, category):
            bonus[exact] = 2.0
        for name, score, _ in process.extract(
            text.lower(), self._slots.keys(), scorer=fuzz.ratio, limit=20, score_cutoff=75
        ):
            slot = self._slots[name]
            if self._visible(slot, allowed, category):
                bonus[slot] = max(bonus.get(slot, 0.0), (score - 70) / 30)
        return bonus

    def _abstain(self, query: str, total: int, reason: str, allowed: Allowed, confidence: float) -> SearchResult:
        browse = [name for name, _ in self.categories(allowed)]
        return SearchResult([], total, True, reason, browse, round(confidence, 4))

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
            if self.embedder is not None:
                sims = self._cosines(self._vectors()[slot])
                order = self._np.argsort(-sims)[: limit * 20 + 1]
                scores = {int(s): float(sims[s]) for s in order}
            else:
                weights = self._doc_terms[slot]
                top_terms = heapq.nlargest(24, weights, key=lambda t: weights[t] * self._idf(t))
                q = _Query({t: 1.0 for t in top_terms}, [], len(top_terms))
                scores = self._lexical(q)
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
            counts: dict[str, int] = {}
            for cat, members in self._by_category.items():
                n = len(members) if allowed is None else sum(1 for name in members if allowed(name))
                if n:
                    counts[cat] = n
            return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def with_config(self, config: SearchConfig) -> SearchIndex:
        """A new index with `config` over the same documents (shares the vector cache: nothing re-embeds)."""
        other = SearchIndex(self.embedder, config, store=self.store)
        other._vector_cache = self._vector_cache
        other.upsert(d for d in self._docs if d is not None)
        return other


def default_config(**changes: Any) -> SearchConfig:
    """The calibrated configuration with some fields changed (used by the benchmark's ablations)."""
    return replace(SearchConfig(), **changes)
