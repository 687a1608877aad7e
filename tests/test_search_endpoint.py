"""Search through a deployment's model server: an OpenAI-compatible /v1/embeddings endpoint (issue 35).

The endpoint is tests/search_embeddings_server.py, a real HTTP server (starlette + uvicorn, in a subprocess) that
serves the bundled model, so a ranking through it must equal the in-process one; the same server can fail, hang or
answer vectors of the wrong size. Searches go through real `mcp-pd serve` processes and the real MCP client.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_pd._search import SearchDocument, SearchIndex
from mcp_pd._search.embeddings import default_embedder
from mcp_pd._search.remote import EndpointError, OpenAIEmbedder, endpoint_url
from pdtest import CATALOGS, ROOT, _wait_for_port, free_port, http_command, serve_params, stop_process

pytestmark = pytest.mark.slow  # model servers and mcp-pd processes

EXTENSION = "io.github.mcp-pd/progressive-disclosure"
SERVER = ROOT / "tests" / "search_embeddings_server.py"
MODEL = "all-minilm-l6-v2"


class Endpoint:
    """A running embeddings server: its base URL and the batch sizes it was asked for."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc, self.url = proc, url
        self.batches: list[int] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("batch "):
                self.batches.append(int(line.split()[1]))

    def stop(self) -> None:
        stop_process(self.proc)
        self._reader.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@contextmanager
def endpoint(mode: str = "ok", good: int = 0) -> Iterator[Endpoint]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), mode, str(good)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_port(port, proc)  # type: ignore[arg-type]  # reads only poll() and stderr
    running = Endpoint(proc, f"http://127.0.0.1:{port}")
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.stop()


def _docs(*folders: str) -> list[SearchDocument]:
    return [
        SearchDocument.from_definition(json.loads(path.read_text(encoding="utf-8")), category=folder)
        for folder in folders
        for path in sorted((CATALOGS / folder).glob("*.json"))
    ]


def small_catalog(target: Path) -> Path:
    """The memory server's 9 tools and the filesystem server's 14, as `mcp-pd serve --simulate` reads them."""
    for folder in ("mcp-server-memory", "mcp-server-filesystem"):
        (target / folder).mkdir(parents=True)
        for path in (CATALOGS / folder).glob("*.json"):
            (target / folder / path.name).write_bytes(path.read_bytes())
    return target


def test_endpoint_url_accepts_what_operators_type() -> None:
    assert endpoint_url("http://h:11434") == "http://h:11434/v1/embeddings"
    assert endpoint_url("http://h:8080/v1/") == "http://h:8080/v1/embeddings"
    assert endpoint_url("https://api.example.com/v1/embeddings") == "https://api.example.com/v1/embeddings"
    with pytest.raises(ValueError, match="expected http"):
        endpoint_url("localhost:11434")
    with pytest.raises(ValueError, match="EMBED_KEY_NOT_SET"):
        OpenAIEmbedder("http://h:1", MODEL, key_env="EMBED_KEY_NOT_SET")


def test_an_endpoint_serving_the_bundled_model_ranks_as_the_model_does_in_process() -> None:
    docs = _docs("mcp-server-memory", "mcp-server-filesystem", "mcp-server-everything")
    bundled = default_embedder()
    assert bundled is not None
    local = SearchIndex(bundled)
    local.upsert(docs)
    with endpoint() as server:
        remote = OpenAIEmbedder(server.url, MODEL, batch=8)
        index = SearchIndex(remote)
        index.upsert(docs)
        # Batched: every request at most 8 texts, all the tools in ceil(n / 8) requests.
        assert server.batches == [8] * (len(docs) // 8) + ([len(docs) % 8] if len(docs) % 8 else [])
        assert remote.model_id.startswith(f"openai:{MODEL}@127.0.0.1:")
        for query in ("remember that Alice prefers tea", "read a text file", "add two numbers", "send an email"):
            ours, theirs = local.search(query), index.search(query)
            assert theirs.ranking == "hybrid" and not theirs.degraded
            assert [(h.name, h.match) for h in theirs.hits] == [(h.name, h.match) for h in ours.hits], query
            for a, b in zip(ours.hits, theirs.hits, strict=True):
                assert math.isclose(a.score, b.score, abs_tol=2e-3), (query, a, b)
        remote.close()


@pytest.mark.parametrize("mode", ["fail", "hang", "wrong-size"])
@pytest.mark.req("PDX-CATALOG-08")
def test_a_broken_endpoint_costs_the_vectors_never_the_answer(mode: str) -> None:
    docs = _docs("mcp-server-memory")
    # The first request (the 9 tools) is served; the endpoint breaks after it.
    with endpoint(mode, good=1) as server:
        remote = OpenAIEmbedder(server.url, MODEL, timeout=1.0, batch_timeout=60.0, retry_after=60.0)
        index = SearchIndex(remote)
        index.upsert(docs)
        t0 = time.monotonic()
        broken = index.search("remember that Alice prefers tea")
        first = time.monotonic() - t0
        t0 = time.monotonic()
        again = index.search("delete what you know about Bob")
        second = time.monotonic() - t0
        remote.close()
    for result in (broken, again):
        assert result.ranking == "lexical" and result.hits, (mode, result)
        assert all(h.cosine is None and h.match in ("strong", "possible", "weak") for h in result.hits)
    assert "EndpointError" in broken.degraded
    expected = {"fail": "HTTP 500", "hang": "timed out", "wrong-size": "size [7]"}[mode]
    assert expected in broken.degraded, broken.degraded
    # Bounded: the hanging endpoint costs its 1 s timeout once; then it is left alone and searches answer at once.
    assert first < 5.0 and second < 0.5, (first, second)
    assert "left alone" in again.degraded
    with pytest.raises(EndpointError):
        remote.embed(["anything"])


async def _search(client: Client, query: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = await client.call_tool("search_tools", {"query": query})
    assert not result.is_error, result
    assert result.meta is not None and result.structured_content is not None
    rows: list[dict[str, Any]] = result.structured_content["results"]
    ranking: dict[str, Any] = result.meta[EXTENSION]
    return rows, ranking


async def _hybrid(client: Client, query: str, deadline: float = 60.0) -> list[dict[str, Any]]:
    """Search until the process ranks with the endpoint's vectors (it embeds the catalog in the background)."""
    stop = time.monotonic() + deadline
    while True:
        rows, ranking = await _search(client, query)
        if ranking["ranking"] == "hybrid":
            assert ranking["model"].startswith(f"openai:{MODEL}@"), ranking
            return rows
        assert time.monotonic() < stop, f"never hybrid: {ranking}"
        time.sleep(0.2)


@pytest.mark.anyio
@pytest.mark.req("PDX-CATALOG-08")
async def test_a_search_served_through_the_endpoint_then_served_on_while_it_is_down(tmp_path: Path) -> None:
    defs = small_catalog(tmp_path / "defs")
    cache = tmp_path / "cache"
    query = "read the contents of a text file"
    with endpoint() as server:
        flags = ["--embeddings-url", server.url + "/v1", "--embeddings-model", MODEL, "--embeddings-timeout", "2"]
        args = ["--simulate", "--descriptions", str(defs), "--mode", "catalog", "--cache", str(cache), *flags]
        async with Client(serve_params(*args), mode="legacy", cache=None) as client:
            served = await _hybrid(client, query)
            assert served[0]["name"] in ("read_text_file", "read_file"), served
            assert all(row["match"] in ("strong", "possible", "weak") for row in served)
            server.stop()  # the model server goes away
            # A query asked before: its vector is remembered; a new one: answered lexically, and _meta says why.
            rows, ranking = await _search(client, "list the files in a folder")
            assert ranking["ranking"] == "lexical" and "failed" in ranking["why"], ranking
            assert rows and rows[0]["name"].startswith("list_"), rows
            again, ranking = await _search(client, query)
            assert ranking["ranking"] == "hybrid" and ranking["query_vector"] == "cache", ranking
            assert [r["name"] for r in again] == [r["name"] for r in served]
        # A new process while the endpoint is still down: the catalog's vectors and the query asked before come from
        # the vector cache on disk (hybrid, as served before); a new query falls back to the lexical ranking.
        async with Client(serve_params(*args), mode="legacy", cache=None) as client:
            again, ranking = await _search(client, query)
            assert ranking["ranking"] == "hybrid" and ranking["query_vector"] == "cache", ranking
            assert [r["name"] for r in again] == [r["name"] for r in served]
            rows, ranking = await _search(client, "move a file")
            assert rows and rows[0]["name"] == "move_file", rows
            assert ranking["ranking"] == "lexical" and "failed" in ranking["why"], ranking


def test_cli_refuses_half_configured_endpoints(tmp_path: Path) -> None:
    serve = [
        sys.executable,
        "-m",
        "mcp_pd",
        "serve",
        "--simulate",
        "--descriptions",
        str(tmp_path),
        "--mode",
        "catalog",
    ]
    proxy = [sys.executable, "-m", "mcp_pd", "proxy", "--upstream-stdio", "true", "--mode", "catalog"]
    for base, extra, said in (
        (proxy, ["--embeddings-model", MODEL], "need --embeddings-url"),
        (proxy, ["--embeddings-url", "http://127.0.0.1:1"], "--embeddings-model"),
        (serve, ["--embeddings-url", "http://127.0.0.1:1"], "--embeddings-model"),
        (serve, ["--embeddings-model", MODEL], "need --embeddings-url"),
        (serve, ["--embeddings-url", "ftp://x", "--embeddings-model", MODEL], "expected http"),
    ):
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and said in done.stderr, (extra, done.stderr)


def _answer_within(seconds: float, work: Any) -> tuple[list[Any], float]:
    """`work()` on a thread of its own: what it returned (nothing if it did not return within `seconds`), and how
    long it took."""
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(work()), daemon=True)
    began = time.monotonic()
    worker.start()
    worker.join(timeout=seconds)
    return done, time.monotonic() - began


@pytest.mark.req("PDX-EMBED-01")
def test_a_dripping_endpoint_is_given_up_at_the_deadline_of_the_whole_reply() -> None:
    docs = _docs("mcp-server-memory")
    # The catalog is embedded; then every reply sends its headers and a space every 0.2 s, for ever.
    with endpoint("drip", good=1) as server:
        remote = OpenAIEmbedder(server.url, MODEL, timeout=1.0, retry_after=60.0)
        index = SearchIndex(remote)
        index.upsert(docs)
        done, took = _answer_within(20.0, lambda: index.search("remember that Alice prefers tea"))
        remote.close()
    assert done, "the search never answered: a read timeout that each dripped byte renews is no deadline"
    assert took < 2.5, took  # the deadline of 1 s, for the whole reply
    assert done[0].ranking == "lexical" and done[0].hits
    assert "timed out after 1 s" in done[0].degraded, done[0].degraded


@pytest.mark.req("PDX-EMBED-02")
def test_a_huge_reply_is_given_up_at_the_cap_while_it_is_read() -> None:
    with endpoint("huge") as server:
        remote = OpenAIEmbedder(server.url, MODEL, timeout=120.0, retry_after=0.0)
        tracemalloc.start()
        try:
            with pytest.raises(EndpointError, match="reply over 67108864 bytes"):
                remote.embed(["anything"])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            remote.close()
    # Read up to the cap (64 MiB), never the 400 MB whole.
    assert peak < 100 << 20, f"{peak / (1 << 20):.0f} MiB held while reading"


@pytest.mark.anyio
@pytest.mark.req("PDX-EMBED-03")
async def test_one_clients_refused_query_costs_no_other_client_its_vectors_or_its_privacy(tmp_path: Path) -> None:
    defs = small_catalog(tmp_path / "defs")
    secret = "alice-private-phrase-73"
    with endpoint("picky") as server:
        serve = [sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--descriptions", str(defs)]
        flags = ["--mode", "catalog", "--no-cache", "--embeddings-url", server.url, "--embeddings-model", MODEL]
        with http_command([*serve, *flags, "--transport", "http", "--port"]) as url:
            async with Client(url, cache=None) as alice, Client(url, cache=None) as bob:
                await _hybrid(alice, "read the contents of a text file")
                # The endpoint refuses alice's query (HTTP 400), quoting it: her search is answered lexically.
                rows, ranking = await _search(alice, f"forbidden {secret} read a file")
                assert rows and ranking["ranking"] == "lexical", ranking
                assert "refused this input (HTTP 400)" in ranking["why"], ranking
                assert secret not in json.dumps(ranking)  # what the endpoint said stays in the operator's log
                # Bob's searches still rank with vectors, and nothing of alice's query reaches him.
                for query in ("list the files in a folder", "move a file"):
                    rows, ranking = await _search(bob, query)
                    assert ranking["ranking"] == "hybrid", ranking
                    assert secret not in json.dumps(rows) + json.dumps(ranking)


@pytest.mark.anyio
@pytest.mark.req("PDX-SECRET-03")
async def test_credentials_in_the_endpoint_url_reach_no_client_and_no_cache(tmp_path: Path) -> None:
    defs = small_catalog(tmp_path / "defs")
    cache = tmp_path / "cache"
    password = "pw-s3cret-9f2c41"
    with endpoint() as server:
        with_credentials = server.url.replace("http://", f"http://operator:{password}@")
        flags = ["--embeddings-url", with_credentials, "--embeddings-model", MODEL, "--cache", str(cache)]
        args = ["--simulate", "--descriptions", str(defs), "--mode", "catalog", *flags]
        async with Client(serve_params(*args), cache=None) as alice, Client(serve_params(*args), cache=None) as bob:
            for client in (alice, bob):
                await _hybrid(client, "read the contents of a text file")
                rows, ranking = await _search(client, "move a file")
                assert ranking["model"] == f"openai:{MODEL}@{server.url.removeprefix('http://')}/v1/embeddings"
                assert password not in json.dumps(rows) + json.dumps(ranking)
                assert "operator" not in ranking["model"]
    stored = b"".join(path.read_bytes() for path in cache.rglob("*") if path.is_file())
    assert stored and password.encode() not in stored and b"operator:" not in stored


@pytest.mark.anyio
@pytest.mark.req("PDX-EMBED-04")
async def test_searches_a_dripping_endpoint_stalls_never_hold_up_another_clients_big_result(tmp_path: Path) -> None:
    from gateway.gwtest import http_gateway, stdio, write_config
    from mcp.client.streamable_http import streamable_http_client

    big = stdio(sys.executable, str(ROOT / "tests" / "gateway" / "big_server.py"), mark="search-endpoint")
    config = write_config(tmp_path / "servers.json", {"big": big})
    # The catalog and the first query are embedded; every later reply drips for ever.
    with endpoint("drip", good=2) as server:
        flags = ["--mode", "catalog", "--embeddings-url", server.url, "--embeddings-model", MODEL]
        gateway = http_gateway(config, tmp_path / "gateway.log", *flags, "--embeddings-timeout", "10")
        async with (
            gateway as url,
            Client(url, cache=None) as alice,
            Client(streamable_http_client(url, max_sse_event_size=64 << 20), cache=None) as bob,
        ):
            await _hybrid(alice, "return a big text")
            described = await bob.call_tool("describe_tools", {"tools": ["big"]})
            assert not described.is_error, described
            answers: list[dict[str, Any]] = []

            async def search(i: int) -> None:
                answers.append((await _search(alice, f"a text of {i} megabytes, please"))[1])

            async with anyio.create_task_group() as tg:
                for i in range(41):  # more than the worker threads of the gateway's process (40)
                    tg.start_soon(search, i)
                await anyio.sleep(1.0)
                began = time.monotonic()
                with anyio.fail_after(30):
                    result = await bob.call_tool("call_tool", {"name": "big", "arguments": {"mb": 8}})
                took = time.monotonic() - began
            assert not result.is_error, result
            assert took < 5.0, f"bob's 8 MiB result waited {took:.1f} s for a worker thread"
            assert len(answers) == 41 and all(a["ranking"] == "lexical" for a in answers), answers[:3]
