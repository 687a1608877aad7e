"""Catalog mode (issue 14): a fixed tools/list of meta-tools over a searchable catalog, with the describe-before-call
guarantee of spec v2.1 (spec/interpretations.md I-16). Real servers, the real client, stdio and HTTP, both eras.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_pd import Caller, DescriptionStore, ProgressiveDisclosure
from mcp_pd.reference import serve_simulation
from pdtest import CATALOGS, http_in_process, serve_params
from pdtest_servers import ADD_DEFINITION, make_mcpserver, write_definitions

pytestmark = pytest.mark.anyio
META = ["search_tools", "browse_tools", "describe_tools", "call_tool"]


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def categorized(root: Path, *servers: str) -> Path:
    """A definitions directory with one category folder per catalog server."""
    for server in servers:
        shutil.copytree(CATALOGS / server, root / server)
    return root


@pytest.mark.req("PDX-CATALOG-01")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_list_is_fixed_and_the_workflow_is_search_describe_call(tmp_path: Path, mode: str) -> None:
    defs = categorized(tmp_path, "github-mcp-server", "mcp-server-filesystem", "playwright-mcp")
    params = serve_params("--simulate", "--descriptions", str(defs), "--mode", "catalog", "--lexical")
    async with Client(params, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert [t.name for t in (await client.list_tools()).tools] == META
        assert "search_tools" in (client.instructions or "") and "github-mcp-server (" in (client.instructions or "")
        found = structured(await client.call_tool("search_tools", {"query": "open a new pull request"}))
        assert found["results"][0] == {
            "name": "create_pull_request",
            "category": "github-mcp-server",
            "description": "Create a new pull request in a GitHub repository.",
            "match": "strong",
        }
        # Describe-before-call holds for call_tool exactly as for a direct call.
        args = {"owner": "o", "repo": "r", "title": "t", "head": "h", "base": "main"}
        refused = structured(await client.call_tool("call_tool", {"name": "create_pull_request", "arguments": args}))
        assert refused["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert refused["error"]["describe_tool_call"]["arguments"] == {"tools": ["create_pull_request"]}
        described = structured(await client.call_tool("describe_tools", {"tools": ["create_pull_request"]}))
        assert described["create_pull_request"]["inputSchema"]["required"]
        result = await client.call_tool("call_tool", {"name": "create_pull_request", "arguments": args})
        assert not result.is_error and structured(result)["arguments"] == args
        direct = await client.call_tool("create_pull_request", args)  # direct calls by name keep working
        assert not direct.is_error


@pytest.mark.req("PDX-CATALOG-01")
async def test_the_list_does_not_grow_with_the_catalog(tmp_path: Path) -> None:
    small = write_definitions(tmp_path / "small", ADD_DEFINITION)
    large = categorized(tmp_path / "large", "github-mcp-server", "mcp-grafana", "kubernetes-mcp-server")
    listings = []
    for directory in (small, large):
        server, _ = serve_simulation(directory, mode="catalog", semantic="off", watch=False)
        async with Client(server, mode="legacy", cache=None) as client:
            listings.append([t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools])
    assert listings[0] == listings[1]
    assert [t["name"] for t in listings[0]] == META


@pytest.mark.req("PDX-CATALOG-02")
async def test_search_abstains_browses_filters_and_finds_similar(tmp_path: Path) -> None:
    defs = categorized(tmp_path, "github-mcp-server", "kubernetes-mcp-server", "mcp-server-memory")
    server, _ = serve_simulation(defs, mode="catalog", semantic="off", watch=False)
    async with Client(server, mode="legacy", cache=None) as client:
        nothing = structured(await client.call_tool("search_tools", {"query": "what is the weather in Paris tomorrow"}))
        assert nothing["results"] == [] and nothing["abstained"] is True
        assert "kubernetes-mcp-server" in nothing["hint"]
        pods = structured(
            await client.call_tool("search_tools", {"query": "pods", "category": "kubernetes-mcp-server"})
        )
        assert pods["results"] and all(r["category"] == "kubernetes-mcp-server" for r in pods["results"])
        many = structured(await client.call_tool("search_tools", {"query": "issue", "limit": 12}))
        assert len(many["results"]) == 12
        like = structured(await client.call_tool("search_tools", {"like": "create_issue", "limit": 3}))
        assert len(like["results"]) == 3 and "create_issue" not in [r["name"] for r in like["results"]]
        wrong = structured(await client.call_tool("search_tools", {"query": "x", "category": "gitlab"}))
        assert wrong["error"]["code"] == "UNKNOWN_CATEGORY"
        assert "github-mcp-server" in wrong["error"]["valid_categories"]
        bad_limit = structured(await client.call_tool("search_tools", {"query": "x", "limit": 99}))
        assert bad_limit["error"]["code"] == "INVALID_ARGUMENTS" and "1 to 20" in bad_limit["error"]["message"]
        categories = structured(await client.call_tool("browse_tools", {}))["categories"]
        assert {c["name"]: c["count"] for c in categories} == {
            "github-mcp-server": 117,
            "kubernetes-mcp-server": 45,
            "mcp-server-memory": 9,
        }
        pages, cursor, seen = 0, None, []
        while True:
            arguments = {"category": "github-mcp-server", **({"cursor": cursor} if cursor else {})}
            page = structured(await client.call_tool("browse_tools", arguments))
            seen += [t["name"] for t in page["tools"]]
            pages += 1
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert pages == 3 and len(seen) == len(set(seen)) == 117
        unknown = structured(await client.call_tool("browse_tools", {"category": "github"}))
        assert unknown["error"]["code"] == "UNKNOWN_CATEGORY"


@pytest.mark.req("PDX-CATALOG-03", "PD-10.2-01")
async def test_search_and_browse_never_reveal_a_hidden_tool(tmp_path: Path) -> None:
    defs = categorized(tmp_path, "github-mcp-server")

    def permission(caller: Caller, name: str) -> bool:
        return "pull_request" not in name

    server, _ = serve_simulation(defs, mode="catalog", semantic="off", watch=False, permission=permission)
    async with Client(server, mode="legacy", cache=None) as client:
        found = structured(await client.call_tool("search_tools", {"query": "create pull request", "limit": 20}))
        assert found["results"] and all("pull_request" not in r["name"] for r in found["results"])
        like = structured(await client.call_tool("search_tools", {"like": "create_pull_request"}))
        assert like["error"]["code"] == "TOOL_NOT_FOUND"
        assert all("pull_request" not in n for n in like["error"]["closest_names"])
        listed = structured(await client.call_tool("browse_tools", {}))["categories"]
        total = sum(c["count"] for c in listed)
        assert total == 117 - sum("pull_request" in p.stem for p in (defs / "github-mcp-server").glob("*.json"))
        call = structured(await client.call_tool("call_tool", {"name": "create_pull_request", "arguments": {}}))
        assert call["error"]["code"] == "TOOL_NOT_FOUND"


@pytest.mark.req("PDX-CATALOG-03", "PDX-CATALOG-09")
async def test_browse_pages_walk_only_what_the_caller_may_see(tmp_path: Path) -> None:
    defs = categorized(tmp_path, "github-mcp-server", "mcp-server-memory")
    every = sorted(p.stem for p in (defs / "github-mcp-server").glob("*.json"))

    def permission(caller: Caller, name: str) -> bool:
        # Every third github tool hidden, and the whole memory category: it must not exist for this caller.
        return name in every and every.index(name) % 3 != 0

    server, _ = serve_simulation(defs, mode="catalog", semantic="off", watch=False, permission=permission)
    async with Client(server, mode="legacy", cache=None) as client:
        listed = structured(await client.call_tool("browse_tools", {}))["categories"]
        assert [(c["name"], c["count"]) for c in listed] == [("github-mcp-server", 78)]
        visible = [n for i, n in enumerate(every) if i % 3 != 0]
        assert listed[0]["description"] == "e.g. " + ", ".join(visible[:3])
        pages, cursor = [], None
        while True:
            arguments = {"category": "github-mcp-server", **({"cursor": cursor} if cursor else {})}
            page = structured(await client.call_tool("browse_tools", arguments))
            pages.append([t["name"] for t in page["tools"]])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        # Full pages of visible tools only, in name order, none twice, and a cursor only while one remains.
        assert [len(p) for p in pages] == [50, 28]
        seen = [n for p in pages for n in p]
        assert seen == visible
        hidden = structured(await client.call_tool("browse_tools", {"category": "mcp-server-memory"}))
        assert hidden["error"]["code"] == "UNKNOWN_CATEGORY"
        assert hidden["error"]["valid_categories"] == ["github-mcp-server"]


@pytest.mark.req("PDX-CATALOG-04")
async def test_call_tool_checks_arguments_and_suggests_names(tmp_path: Path) -> None:
    server, _ = serve_simulation(write_definitions(tmp_path, ADD_DEFINITION), mode="catalog", semantic="off")
    async with Client(server, mode="legacy", cache=None) as client:
        await client.call_tool("describe_tools", {"tools": ["add"]})
        bad = structured(await client.call_tool("call_tool", {"name": "add", "arguments": {"a": "two"}}))["error"]
        assert bad["code"] == "INVALID_ARGUMENTS" and bad["tool"] == "add"
        rules = {(p["field"], p["rule"]) for p in bad["problems"]}
        assert ("a", "type") in rules and ("(arguments)", "required") in rules
        type_problem = next(p for p in bad["problems"] if p["rule"] == "type")
        assert type_problem["schema"]["type"] == "integer"
        typo = structured(await client.call_tool("call_tool", {"name": "ad", "arguments": {}}))["error"]
        assert typo["code"] == "TOOL_NOT_FOUND" and typo["available_tools"][0] == "add"
        malformed = structured(await client.call_tool("call_tool", {"arguments": {}}))["error"]
        assert malformed["code"] == "INVALID_ARGUMENTS" and '"name"' in malformed["message"]
        good = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert not good.is_error


@pytest.mark.req("PDX-CATALOG-02")
async def test_the_index_follows_hot_reloads(tmp_path: Path) -> None:
    defs = write_definitions(tmp_path, ADD_DEFINITION)
    server, pd = serve_simulation(defs, mode="catalog", semantic="off", watch=False)
    async with Client(server, mode="legacy", cache=None) as client:
        assert structured(await client.call_tool("search_tools", {"query": "add integers"}))["results"]
        write_definitions(defs, {**ADD_DEFINITION, "name": "rotate_keys", "description": "Rotate the API keys."})
        pd.store.rescan()
        await client.list_tools()
        found = structured(await client.call_tool("search_tools", {"query": "rotate api keys"}))
        assert found["results"][0]["name"] == "rotate_keys"
        (defs / "rotate_keys.json").unlink()
        pd.store.rescan()
        await client.list_tools()
        gone = structured(await client.call_tool("search_tools", {"query": "rotate api keys"}))
        assert all(r["name"] != "rotate_keys" for r in gone["results"])


@pytest.mark.req("PDX-CATALOG-05")
def test_a_name_in_two_category_folders_is_served_once_and_reported(tmp_path: Path) -> None:
    write_definitions(tmp_path / "alpha", ADD_DEFINITION)
    write_definitions(tmp_path / "beta", {**ADD_DEFINITION, "description": "Another add."})
    store = DescriptionStore(tmp_path)
    assert store.names() == {"add"} and store.category("add") == "alpha"
    (problem,) = store.problems
    assert str(tmp_path / "beta" / "add.json") in problem.source and str(tmp_path / "alpha" / "add.json") in (
        problem.reason
    )
    (tmp_path / "alpha" / "add.json").unlink()
    assert store.rescan() == {"add"}
    definition = store.get("add")
    assert definition is not None and definition.description == "Another add." and store.category("add") == "beta"


async def test_catalog_mode_over_http_with_the_semantic_model(tmp_path: Path) -> None:
    # The dev extras install the semantic model: the index swaps in vectors once they are built.
    app, pd = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION), mode="catalog")
    assert pd.metatools is not None
    async with http_in_process(app._lowlevel_server) as url, Client(url, mode="legacy", cache=None) as client:
        assert [t.name for t in (await client.list_tools()).tools] == META
        structured(await client.call_tool("search_tools", {"query": "sum of two numbers"}))
        with anyio.fail_after(120):
            while not pd.metatools.index.semantic:
                await anyio.sleep(0.1)
        found = structured(await client.call_tool("search_tools", {"query": "sum of two numbers"}))
        assert found["results"][0]["name"] == "add"


@pytest.mark.req("PDX-CATALOG-01", "PDX-CATALOG-04")
async def test_catalog_mode_over_sessionless_http_in_the_2026_era(tmp_path: Path) -> None:
    # Sessionless 2026-07-28 HTTP: grants follow the key the operator names (here a header), not a connection.
    app, _ = make_mcpserver(
        write_definitions(tmp_path, ADD_DEFINITION),
        mode="catalog",
        semantic="off",
        session_key=lambda ctx: ctx.request.headers.get("x-user") if ctx.request is not None else None,
    )
    async with (
        http_in_process(app._lowlevel_server) as url,
        httpx2.AsyncClient(headers={"x-user": "alice"}) as alice_http,
        httpx2.AsyncClient(headers={"x-user": "bob"}) as bob_http,
        Client(streamable_http_client(url, http_client=alice_http), mode="2026-07-28", cache=None) as alice,
        Client(streamable_http_client(url, http_client=bob_http), mode="2026-07-28", cache=None) as bob,
    ):
        assert alice.protocol_version == "2026-07-28"
        assert [t.name for t in (await alice.list_tools()).tools] == META
        found = structured(await alice.call_tool("search_tools", {"query": "add two integers"}))
        assert found["results"][0]["name"] == "add"
        call = {"name": "add", "arguments": {"a": 2, "b": 40}}
        assert structured(await alice.call_tool("call_tool", call))["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        structured(await alice.call_tool("describe_tools", {"tools": ["add"]}))
        ran = await alice.call_tool("call_tool", call)
        assert not ran.is_error and "42" in ran.content[0].text  # type: ignore[union-attr]
        # Bob's requests carry another key: Alice's describe authorizes nothing for him.
        assert structured(await bob.call_tool("call_tool", call))["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"


def test_pinned_tools_are_listed_and_still_gated() -> None:
    async def scenario() -> None:
        app, _ = make_mcpserver(mode="catalog", semantic="off", pinned=["add"])
        async with Client(app, mode="legacy", cache=None) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == [*META, "add"]
            refused = structured(await client.call_tool("add", {"a": 1, "b": 2}))
            assert refused["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"

    anyio.run(scenario)


def test_catalog_mode_is_constructible() -> None:
    pd = ProgressiveDisclosure(mode="catalog", semantic="off")
    assert pd.describe_tool == "describe_tools" and pd.metatools is not None
