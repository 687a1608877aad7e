"""Search vectors kept across processes (issue 19): a catalog-mode server spawned per conversation ranks with
vectors from its first search once any earlier process (or `mcp-pd index`) embedded that catalog. Real files, a
real SQLite store, real `mcp-pd` subprocesses and the real client.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client
from mcp_pd._search import SearchDocument, SearchIndex
from mcp_pd._search.embeddings import default_embedder
from mcp_pd._search.store import VectorStore, text_key
from pdtest import CATALOGS, serve_params

EXTENSION = "io.github.mcp-pd/progressive-disclosure"


def small_catalog(root: Path) -> Path:
    # 75 tools (77 files, two names shared): more than a first build embeds inline, so a cold start answers
    # lexically at first.
    for server in ("mcp-server-filesystem", "mcp-server-memory", "chrome-devtools-mcp", "playwright-mcp"):
        shutil.copytree(CATALOGS / server, root / server)
    return root


def documents() -> list[SearchDocument]:
    out = []
    for path in sorted((CATALOGS / "mcp-server-filesystem").glob("*.json")):
        out.append(SearchDocument.from_definition(json.loads(path.read_text()), category="fs"))
    return out


def run_cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_pd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "MCP_PD_CACHE_DIR": str(cache)},
    )


def unit(n: int, seed: int) -> Any:
    row = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return row / np.linalg.norm(row)


def test_the_store_round_trips_and_counts_by_model(tmp_path: Path) -> None:
    store = VectorStore(tmp_path / "cache")
    vectors = {text_key(f"t{i}"): unit(384, i) for i in range(3)}
    assert store.save("m1", vectors) == 3
    assert store.present("m1", [*vectors, text_key("other")]) == 3
    assert store.present("m2", vectors) == 0  # vectors of two models never mix
    again = VectorStore(tmp_path / "cache").load("m1", vectors)  # another process's view of the same file
    assert set(again) == set(vectors)
    for key, row in again.items():
        assert np.allclose(row, vectors[key])


def test_a_damaged_row_is_never_ranked_with(tmp_path: Path) -> None:
    store = VectorStore(tmp_path)
    good, bad = text_key("good"), text_key("bad")
    store.save("m", {good: unit(8, 1), bad: unit(8, 2) * 3})  # not a unit vector: damaged or another model's
    assert set(store.load("m", [good, bad])) == {good}


def test_an_unusable_cache_turns_itself_off_and_search_still_answers(tmp_path: Path, caplog: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = VectorStore(blocker / "cache")  # its directory cannot be made
    with caplog.at_level(logging.WARNING, logger="mcp_pd.search"):
        assert store.load("m", ["k"]) == {}
        assert store.save("m", {"k": unit(4, 0)}) == 0
    assert not store.available
    assert "vector cache off" in caplog.text and str(blocker) in caplog.text
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "vectors-v1.sqlite3").write_bytes(b"this is not a database" * 100)
    broken = VectorStore(garbage)
    assert broken.load("m", ["k"]) == {} and not broken.available
    embedder = default_embedder()
    assert embedder is not None, "the tests install the semantic extra"
    index = SearchIndex(embedder, store=broken)
    index.upsert(documents())
    assert index.embedded == len(index)  # embedded in memory instead
    hits = [h.name for h in index.search("read the contents of a text file").hits]
    assert {"read_file", "read_text_file"} & set(hits[:3]), hits


def test_a_second_index_embeds_nothing_and_ranks_the_same(tmp_path: Path) -> None:
    embedder = default_embedder()
    assert embedder is not None
    docs = documents()
    first = SearchIndex(embedder, store=VectorStore(tmp_path))
    first.upsert(docs)
    assert first.embedded == len(docs)
    second = SearchIndex(embedder, store=VectorStore(tmp_path))
    second.upsert(docs)
    assert second.embedded == 0
    for query in ("list the files in a folder", "move a file", "how big is this file"):
        assert [h.name for h in first.search(query).hits] == [h.name for h in second.search(query).hits]
    # A changed definition is the only one embedded again.
    edited = [*docs[1:], SearchDocument.from_definition({"name": docs[0].name, "description": "Something new."})]
    third = SearchIndex(embedder, store=VectorStore(tmp_path))
    third.upsert(edited)
    assert third.embedded == 1


async def first_search_ranking(defs: Path, cache: Path) -> dict[str, Any]:
    params = serve_params("--simulate", "--descriptions", str(defs), "--mode", "catalog", "--cache", str(cache))
    async with Client(params, mode="legacy", cache=None) as client:
        result = await client.call_tool("search_tools", {"query": "read the contents of a text file"})
        assert not result.is_error
        assert result.meta is not None
        ranking: dict[str, Any] = result.meta[EXTENSION]
        return ranking


@pytest.mark.anyio
async def test_a_new_process_ranks_with_vectors_from_its_first_search(tmp_path: Path) -> None:
    defs = small_catalog(tmp_path / "defs")
    cache = tmp_path / "cache"
    cold = await first_search_ranking(defs, cache)
    assert cold["ranking"] == "lexical" and "being built" in cold["why"]
    indexed = run_cli("index", str(defs), "--cache", str(cache), cache=tmp_path / "unused")
    assert indexed.returncode == 0, indexed.stderr
    # The cold server may have embedded some in the background before it stopped: together they are all of them.
    counts = re.search(r"(\d+) tools: (\d+) embedded, (\d+) already cached", indexed.stdout)
    assert counts is not None, indexed.stdout
    tools = int(counts[1])
    assert tools > 64 and int(counts[2]) + int(counts[3]) == tools
    warm = await first_search_ranking(defs, cache)
    assert warm["ranking"] == "hybrid" and warm["model"].startswith("minilm")
    # Indexing again embeds nothing; an edited definition is the only one embedded again.
    again = run_cli("index", str(defs), "--cache", str(cache), cache=tmp_path / "unused")
    assert again.returncode == 0 and ": 0 embedded," in again.stdout, again.stdout
    target = next((defs / "mcp-server-memory").glob("*.json"))
    definition = json.loads(target.read_text())
    definition["description"] = "Edited: " + definition["description"]
    target.write_text(json.dumps(definition))
    edited = run_cli("index", str(defs), "--cache", str(cache), cache=tmp_path / "unused")
    assert edited.returncode == 0 and ": 1 embedded," in edited.stdout, edited.stdout


def test_the_cli_says_what_the_cache_flags_apply_to(tmp_path: Path) -> None:
    defs = small_catalog(tmp_path / "defs")
    wrong_mode = run_cli("serve", "--simulate", "--descriptions", str(defs), "--cache", str(tmp_path), cache=tmp_path)
    assert wrong_mode.returncode != 0 and "apply to --mode catalog only" in wrong_mode.stderr
    both = run_cli("index", str(defs), "--cache", str(tmp_path), "--no-cache", cache=tmp_path)
    assert both.returncode != 0 and "--no-cache" in both.stderr
    missing = run_cli("index", str(tmp_path / "nowhere"), cache=tmp_path)
    assert missing.returncode != 0 and "is not a directory" in missing.stderr


def test_processes_sharing_one_cache_lose_nothing(tmp_path: Path) -> None:
    # Two deployments index into one cache at the same time (SQLite in WAL mode, a busy timeout): both finish,
    # and every vector of both is there afterwards.
    first, second = tmp_path / "a", tmp_path / "b"
    shutil.copytree(CATALOGS / "mcp-server-filesystem", first / "fs")
    shutil.copytree(CATALOGS / "chrome-devtools-mcp", second / "chrome")
    cache = tmp_path / "cache"
    env = {"PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mcp_pd", "index", str(d), "--cache", str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for d in (first, second)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    embedded = [int(re.search(r"(\d+) tools: (\d+) embedded", out)[2]) for out, _ in outputs]  # type: ignore[index]
    store = VectorStore(cache)
    model = default_embedder().model_id  # type: ignore[union-attr]
    assert store.count(model) == sum(embedded) > 40
