"""The offline planner against catalog-mode servers (spec/interpretations.md I-16): search, describe, then call.

Every test talks to a real server process over stdio (`mcp-pd serve --mode catalog`, the reference server or a
simulated catalog with category folders) through the real `mcp` client.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp_pd_agent import (
    TASKS,
    PlannerBackend,
    ServerSpec,
    check_run,
    connect,
    find_mode,
    main,
    merge_catalogs,
    run_agent,
    system_prompt_guidance,
)
from pdtest import CATALOGS

pytestmark = pytest.mark.anyio

META_TOOLS = ["search_tools", "browse_tools", "describe_tools", "call_tool"]


def _trace(run) -> list[tuple[str, str, dict, str | None]]:
    return [(s.kind, s.name, s.arguments, s.error_code) for s in run.steps]


@pytest.mark.parametrize("task", TASKS, ids=[t.key for t in TASKS])
async def test_task_outcome_holds_in_catalog_mode(task):
    async with connect(ServerSpec.reference(mode="catalog")) as server:
        assert server.mode == "catalog" and server.tool_names == META_TOOLS and server.task_tool_names == []
        run = await run_agent(server, PlannerBackend(task.missteps), task.prompt)
    assert run.mode == "catalog" and run.host == "tools-only" and run.setup == "catalog"
    assert check_run(task, run) is None, _trace(run)
    for code in task.expect_errors:
        assert code in run.error_codes()
    if not task.expect_errors:
        assert run.error_codes() == []
    assert {s.name for s in run.calls(ok=True)} == set(task.tools)
    # the host lists only the meta-tools: every call of a task's tool goes through call_tool
    assert all(s.via == "call_tool" for s in run.calls())
    # every tool is searched for (or named by the user, or pointed to by a definition) before it is described,
    # and described before a call of it succeeds
    found: set[str] = set(re.findall(r"`([a-z_]+)`", task.prompt))
    described: set[str] = set()
    for step in run.steps:
        data = step.reply.data if step.reply is not None else None
        if step.kind == "search" and isinstance(data, dict):
            found |= {r["name"] for r in data.get("results") or data.get("tools") or []}
        elif step.kind == "read":
            assert set(step.tools) <= found, (step.tools, found)
            if isinstance(data, dict):
                entries = {n: e for n, e in data.items() if isinstance(e, dict) and "inputSchema" in e}
                described |= set(entries)
                found |= set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", json.dumps(entries)))
        elif step.kind == "call" and step.ok:
            assert step.name in described
    first_search = next(i for i, s in enumerate(run.steps) if s.kind == "search")
    assert run.steps[first_search].name == "search_tools"
    if task.key == "call-first":
        # found, called too early, then the describe_tool_call the error spells out, then the call
        refused = run.steps[first_search + 1]
        assert (refused.kind, refused.name, refused.error_code) == ("call", "calculate", "TOOL_DESCRIPTION_REQUIRED")
        how = refused.reply.data["error"]["describe_tool_call"]
        recovery = run.steps[first_search + 2]
        assert (
            (recovery.name, recovery.arguments)
            == (how["name"], how["arguments"])
            == (
                "describe_tools",
                {"tools": ["calculate"]},
            )
        )
    if task.key == "unknown-name":
        # the named tool is described first; it does not exist, so the step is searched for
        assert run.steps[0].kind == "read" and run.steps[0].reply.not_found == ("unit_converter",)
        assert run.steps[1].kind == "search" and "unit_converter" not in run.steps[1].arguments["query"]
    if task.key == "new-project":
        # one describe names every step's tool, after one search per step (made in one turn)
        assert run.reads()[0].tools == ("create_project", "create_task", "complete_task")
    # search answers are what the ledger counts on top of the definitions
    assert len(run.context.searched) == len(run.searches()) > 0


async def test_invalid_arguments_are_fixed_from_the_problems_listed():
    task = next(t for t in TASKS if t.key == "marathon")
    async with connect(ServerSpec.reference(mode="catalog")) as server:
        run = await run_agent(server, PlannerBackend(["numbers_as_strings"]), task.prompt)
    assert check_run(task, run) is None, _trace(run)
    refused, retried = run.calls("convert_units")
    assert refused.error_code == "INVALID_ARGUMENTS" and refused.arguments["value"] == "26.2"
    problem = refused.reply.data["error"]["problems"][0]
    assert (problem["field"], problem["rule"]) == ("value", "type")
    # nothing ran; the retry changed only the field the problem named, to the type its schema fragment gives
    assert retried.ok and retried.arguments == {**refused.arguments, "value": 26.2}
    assert run.error_codes() == ["INVALID_ARGUMENTS"]


def _catalog(root: Path) -> Path:
    """Two category folders: a search in words no tool uses abstains, and the category still fits."""
    tools = {
        "weather": [("get_forecast", "Get the forecast for a city.")],
        "finance": [
            ("convert_currency", "Convert an amount between currencies."),
            ("stock_quote", "Latest price of a stock ticker."),
        ],
    }
    for category, items in tools.items():
        (root / category).mkdir(parents=True)
        for name, description in items:
            schema = {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"],
            }
            definition = {"name": name, "description": description, "inputSchema": schema}
            (root / category / f"{name}.json").write_text(json.dumps(definition), encoding="utf-8")
    return root


async def test_a_poor_search_is_recovered_from_by_rephrasing_then_browsing(tmp_path):
    # Only the category's name matches ("weather"): the search offers the one tool in it, whose one-liner says
    # nothing of umbrellas; the planner rephrases, gets the same, and browses the categories instead.
    # ("Will it rain tomorrow?" is no test of this any more: the forecast tool is found by it directly.)
    prompt = "Umbrella or raincoat in 'Berlin' tomorrow? Ask the weather desk."
    async with connect(ServerSpec.simulation(_catalog(tmp_path / "catalog"), mode="catalog")) as server:
        run = await run_agent(server, PlannerBackend(), prompt)
    searches = run.searches()
    first, rephrased, categories, weather = searches
    assert first.arguments == {"query": "Umbrella or raincoat in tomorrow? Ask the weather desk"}
    assert [r["name"] for r in first.reply.data["results"]] == ["get_forecast"]
    assert rephrased.arguments == {"query": "umbrella raincoat tomorrow ask weather desk"}
    assert [r["name"] for r in rephrased.reply.data["results"]] == ["get_forecast"]
    assert categories.arguments == {} and weather.arguments == {"category": "weather"}
    assert [(s.kind, s.name) for s in run.steps[len(searches) :]] == [
        ("read", "describe_tools"),
        ("call", "get_forecast"),
        ("answer", ""),
    ]
    assert run.calls("get_forecast", ok=True)[0].reply.data["arguments"] == {"city": "Berlin"}


async def test_nothing_found_ends_with_a_clear_answer(tmp_path):
    async with connect(ServerSpec.simulation(_catalog(tmp_path / "catalog"), mode="catalog")) as server:
        run = await run_agent(server, PlannerBackend(), "Umbrella needed tomorrow?")
    assert run.stopped == "answer" and run.calls() == [] and run.reads() == []
    assert "no tool found for 'Umbrella needed tomorrow?'" in (run.answer or "")


async def test_mode_is_read_from_the_capabilities_and_the_listing(tmp_path):
    async with connect(ServerSpec.reference()) as progressive:
        assert progressive.mode == "progressive"
        assert find_mode(progressive.client.server_capabilities, progressive.tools) == "progressive"
        definitions = await progressive.fetch_all_definitions()
    async with connect(ServerSpec.reference(mode="catalog")) as catalog:
        assert find_mode(catalog.client.server_capabilities, catalog.tools) == "catalog"
        # without capability settings, the listed meta-tools say it
        assert find_mode(None, catalog.tools) == "catalog"
        assert find_mode(None, progressive.tools) == "progressive"
        # an eager client's view of a catalog-mode server: every category browsed, every page, then described
        assert await catalog.fetch_all_definitions() == definitions
    assert len(definitions) == 20


async def test_merged_catalogs_keep_a_category_per_server(tmp_path):
    merged = merge_catalogs(CATALOGS, tmp_path / "merged")
    assert merged.renamed == {
        "github-mcp-server_projects_list": "github-mcp-server/projects_list",
        "kubernetes-mcp-server_projects_list": "kubernetes-mcp-server/projects_list",
    }
    async with connect(ServerSpec.simulation(tmp_path / "merged", mode="catalog")) as server:
        listing = await server.call_tool("browse_tools", {})
        counts = {c["name"]: c["count"] for c in listing.data["categories"]}
        assert counts == merged.per_catalog and sum(counts.values()) == 322
        assert len(await server.catalog_names()) == 322


def test_the_catalog_guidance_covers_the_four_points():
    text = system_prompt_guidance(read_function="describe_tools", mode="catalog")
    points = text.splitlines()[1:]
    assert [p[:2] for p in points] == ["1.", "2.", "3.", "4."]
    for word in ("search_tools", "browse_tools", "describe_tools", "call_tool", "MISSING_TOOL_SELECTION"):
        assert word in text
    for code in ("TOOL_DESCRIPTION_REQUIRED", "INVALID_ARGUMENTS", "describe_tool_call"):
        assert code in points[3]


def test_demo_cli_puts_catalog_mode_next_to_the_hosts(tmp_path, capsys):
    report = tmp_path / "demo.json"
    argv = ["--task", "summary", "--host", "tools-only", "--mode", "both", "--json", str(report), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "[1/1, catalog mode] summary" in out and "2 of 2 task(s) passed." in out
    data = json.loads(report.read_text())
    assert data["hosts"] == ["tools-only"] and data["modes"] == ["progressive", "catalog"]
    assert [(r["host"], r["mode"]) for r in data["runs"]] == [("tools-only", "progressive"), ("tools-only", "catalog")]
    (ledger,) = data["ledgers"]
    assert ledger["hosts"] == ["tools-only", "catalog"] and ledger["passed"] == {"tools-only": 1, "catalog": 1}
    (row,) = ledger["rows"]
    catalog, tools_only = row["hosts"]["catalog"], row["hosts"]["tools-only"]
    assert catalog["fetched"] == tools_only["fetched"] == ["project_summary", "list_projects"]
    assert catalog["parts"]["search results"]["o200k_base"] > 0 == tools_only["parts"]["search results"]["o200k_base"]
    assert catalog["parts"]["read function"]["o200k_base"] == 0
    # four meta-tools instead of twenty minimal entries and the describe tool
    assert catalog["parts"]["minimal list"]["o200k_base"] < tools_only["parts"]["minimal list"]["o200k_base"]


def test_demo_cli_refuses_mode_choices_it_cannot_honour(capsys):
    with pytest.raises(SystemExit, match="run as a tools-only host"):
        main(["--mode", "catalog", "--host", "resources", "--no-ledger"])
    with pytest.raises(SystemExit, match="a --stdio or --url server has its own"):
        main(["--mode", "catalog", "--url", "http://127.0.0.1:9/mcp", "--no-ledger"])
