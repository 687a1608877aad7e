"""Tool search for catalog mode: weighted-field BM25, a domain vocabulary, fuzzy repair, optional embeddings.

One concept per module, the data path in one direction:

    text ─► vocabulary ─► query ─┐
    documents ─► postings ───────┼─► index (the facade: fuse, abstain, band, tell near-ties apart) ─► results
    embeddings, remote ─► vectors ◄─ store (vectors on disk, across processes)

`text`: tokens (NFKC, case and accents folded, snake/camel split, a light stemmer, CJK bigrams) and a long task's
steps; `vocabulary`: the hand-written synonyms and glossary (`data/`); `documents`: what the index knows of a tool;
`config`: every knob; `postings`: field-weighted BM25; `spelling`: repair of unknown words; `query`: a query read
into weighted terms; `embeddings`: the shipped model; `remote`: a model server's OpenAI-compatible endpoint;
`vectors`: vectors per document version; `store`: vectors kept on disk; `bands`: how sure each hit is (strong,
possible, weak); `index`: `SearchIndex`. Each step can be switched off in `SearchConfig`, which is how the benchmark's
ablation table is made. Knows tools and text, nothing of sessions, transports or the SDK.
"""

from .config import SearchConfig, default_config
from .documents import SearchDocument
from .index import Allowed, SearchIndex
from .results import SearchHit, SearchResult
from .text import clauses, tokenize

__all__ = [
    "Allowed",
    "SearchConfig",
    "SearchDocument",
    "SearchHit",
    "SearchIndex",
    "SearchResult",
    "clauses",
    "default_config",
    "tokenize",
]
