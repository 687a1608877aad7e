"""Confidence bands of search hits (issue 35): each row says "strong", "possible" or "weak", over the real catalogs.

Behaviour only; how often a band is right on each public set is benchmarks/search_bands.py's job (docs/search.md).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from mcp import Client
from mcp_pd._search import SearchDocument, SearchIndex
from mcp_pd._search.bands import BANDS
from mcp_pd._search.embeddings import default_embedder
from mcp_pd._search.store import VectorStore
from pdtest import CATALOGS, serve_params

EXTENSION = "io.github.mcp-pd/progressive-disclosure"
# Requests no catalog tool answers (issue 35's new user), and ones a tool clearly answers.
FAR = ("what's the weather tomorrow", "send a slack message", "delete an old git branch", "order a pizza")
CLEAR = {
    "open a pull request": "create_pull_request",
    "read a text file": "read_text_file",
    "take a screenshot of the page": "take_screenshot",
    "list the pods in the default namespace": "pods_list_in_namespace",
}


@pytest.fixture(scope="module")
def hybrid() -> SearchIndex:
    model = default_embedder()
    assert model is not None, "the dev extras include the semantic extra"
    index = SearchIndex(model, store=VectorStore.default())
    docs: dict[str, SearchDocument] = {}
    for path in sorted(CATALOGS.glob("*/*.json")):
        definition = json.loads(path.read_text(encoding="utf-8"))
        docs.setdefault(definition["name"], SearchDocument.from_definition(definition, category=path.parent.name))
    index.upsert(docs.values())
    return index


@pytest.mark.req("PDX-CATALOG-07")
def test_every_row_has_a_band_and_only_a_leading_first_hit_is_strong(hybrid: SearchIndex) -> None:
    for query in (*FAR, *CLEAR, "remove old stuff", "find the dashboard about latency"):
        for semantic in (True, False):
            result = hybrid.search(query, semantic=semantic)
            assert result.ranking == ("hybrid" if semantic else "lexical")
            for rank, hit in enumerate(result.hits):
                assert hit.match in BANDS
                assert (hit.cosine is None) == (not semantic)
                assert rank == 0 or hit.match != "strong", (query, result.hits)


@pytest.mark.req("PDX-CATALOG-07")
def test_a_clear_request_is_strong_and_a_far_one_never_is(hybrid: SearchIndex) -> None:
    for query, tool in CLEAR.items():
        first = hybrid.search(query).hits[0]
        assert (first.name, first.match) == (tool, "strong"), query
    for query in FAR:
        result = hybrid.search(query)
        assert not any(h.match == "strong" for h in result.hits), (query, result.hits)
    # Far from everything: weak rows (the cosine and the words both low), not merely "possible".
    slack = hybrid.search("send a slack message")
    assert [h.match for h in slack.hits].count("weak") >= 3, slack.hits


def test_the_band_reads_the_cosine_not_the_rank(hybrid: SearchIndex) -> None:
    # The same first hit, asked clearly and vaguely: strong, then not.
    clear = hybrid.search("delete the repository").hits[0]
    vague = hybrid.search("delete an old git branch")
    assert clear.name == "delete_repository" and clear.match == "strong"
    by_name = {h.name: h for h in vague.hits}
    assert by_name["delete_repository"].match != "strong"
    assert by_name["delete_repository"].cosine is not None
    assert clear.cosine is not None and by_name["delete_repository"].cosine < clear.cosine


async def _rows(client: Client, query: str) -> tuple[dict[str, Any], dict[str, Any]]:
    result = await client.call_tool("search_tools", {"query": query})
    assert not result.is_error and result.structured_content is not None and result.meta is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content  # the model reads the same document
    return result.structured_content, result.meta[EXTENSION]


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.req("PDX-CATALOG-07")
async def test_the_served_answer_says_when_no_tool_clearly_fits_and_flags_destructive_guesses() -> None:
    args = ["--simulate", "--descriptions", str(CATALOGS), "--mode", "catalog"]
    async with Client(serve_params(*args), mode="legacy", cache=None) as client:
        deadline = time.monotonic() + 240
        while True:  # a cold cache: the process embeds the catalog in the background, lexical meanwhile
            answer, ranking = await _rows(client, "open a pull request")
            if ranking["ranking"] == "hybrid":
                break
            assert time.monotonic() < deadline, ranking
            time.sleep(0.5)
        assert answer["results"][0] == {**answer["results"][0], "name": "create_pull_request", "match": "strong"}
        assert "note" not in answer
        answer, _ = await _rows(client, "delete an old git branch")
        assert next(iter(answer)) == "note" and "No tool here clearly does this" in answer["note"]
        assert {r["match"] for r in answer["results"]} <= {"possible", "weak"}
        # delete_file is destructive (destructiveHint) and only a weak match for compressing a file.
        answer, _ = await _rows(client, "compress a file with gzip")
        rows = {r["name"]: r for r in answer["results"]}
        assert rows["delete_file"]["match"] == "weak" and "destructive" in rows["delete_file"]["warning"]
        assert all("warning" not in r for r in answer["results"] if r["name"] != "delete_file")


# -- the study (benchmarks/search_bands.py --study): its figures are what docs/search.md's negative result rests on --


@pytest.fixture
def study(monkeypatch: pytest.MonkeyPatch) -> Any:
    from pdtest import ROOT

    monkeypatch.syspath_prepend(str(ROOT))  # the benchmarks package sits beside the server, not installed
    import benchmarks.search_bands as module

    return module


def test_the_study_reads_the_first_hit_the_search_answers(hybrid: SearchIndex, study: Any) -> None:
    # The study reads the index's internals (the single rankings); it must describe the hit users get.
    hubs = study.hubness(hybrid)
    for query, tool in CLEAR.items():
        first = hybrid.search(query).hits[0]
        record = study.first_hit(hybrid, query, None, hubs, True)
        assert (record["first"], record["cosine"], record["coverage"]) == (tool, first.cosine, first.coverage)
        assert record["dense_rank"] == 0 and record["agree"] >= 1, record  # a clear request: the model's own first
        assert 0.0 <= record["stability"] <= 1.0 and 0.0 <= record["category_agree"] <= 1.0
        lexical = study.first_hit(hybrid, query, None, hubs, False)
        assert lexical["first"] == hybrid.search(query, semantic=False).hits[0].name
    hidden = study.first_hit(hybrid, "open a pull request", lambda n: n != "create_pull_request", hubs, True)
    assert hidden["first"] not in (None, "create_pull_request")


def test_the_study_scores_separation_and_the_goals_as_defined(study: Any) -> None:
    def record(kind: str, right: bool, cosine: float) -> dict[str, Any]:
        return {"kind": kind, "relevant": ["t"], "first": "t" if right else "u", "cosine": cosine}

    # 8 right first hits (cosine 0.55-0.9), 4 wrong ones of answerable queries and 3 of unanswerable ones
    # (0.2-0.6), one abstention.
    records = [record("task", True, c) for c in (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)]
    records += [record("task", False, c) for c in (0.2, 0.3, 0.4, 0.6)]
    records += [record("none", False, c) for c in (0.25, 0.35, 0.6)]
    records.append({"kind": "none", "relevant": [], "first": None})
    scored = study.Scored(records, ("cosine",))
    assert scored.unanswerable == 4 and int(scored.right.sum()) == 8 and len(scored.right) == 15
    # 56 pairs: the 5 wrong hits under 0.55 lose to all 8; each wrong 0.6 loses to 6 and ties 1.
    assert study.auc(scored.x[:, 0], scored.right) == pytest.approx((5 * 8 + 2 * 6.5) / 56)
    # Strong from 0.6: 7 right, 2 wrong (one unanswerable): 22% wrong, too many; from 0.65: 6 right, none wrong.
    assert scored.goals(scored.x[:, 0] >= 0.6) == pytest.approx((7 / 8, 2 / 9, 3 / 4))
    threshold, reach = study.best_threshold([scored.x[:, 0]], [scored])
    assert (threshold, reach) == (pytest.approx(0.65), pytest.approx(6 / 8))
    # A logistic model over a separating feature ranks every right first hit above every wrong one.
    fitted = study.fit_logistic([scored])(scored.x)
    assert study.auc(fitted, scored.right) > 0.9
    assert study.auc(-scored.x[:, 0], scored.right) == pytest.approx(1 - study.auc(scored.x[:, 0], scored.right))
