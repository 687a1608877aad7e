"""The token ledger, the catalog merge, and `mcp-pd demo` end to end (offline planner)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from mcp_pd_agent import (
    ENCODINGS,
    TASKS,
    PlannerBackend,
    ServerSpec,
    TokenCounter,
    build_ledger,
    connect,
    eager_definitions,
    main,
    merge_catalogs,
    render_svg,
    render_table,
    run_agent,
    system_prompt_guidance,
)

CATALOGS = Path(__file__).resolve().parents[3] / "shared" / "catalogs"


async def _runs(keys):
    runs = []
    for task in [t for t in TASKS if t.key in keys]:
        async with connect(ServerSpec.reference()) as server:
            runs.append((task.key, await run_agent(server, PlannerBackend(task.missteps), task.prompt)))
    return runs


def test_token_counts_are_offline_and_match_known_values():
    counter = TokenCounter()
    assert counter.problem is None and counter.units == list(ENCODINGS)
    # "hello world" is 2 tokens in both encodings (tiktoken gives the same ids)
    assert counter.count("hello world") == {"chars": 11, "o200k_base": 2, "cl100k_base": 2}


@pytest.mark.anyio
async def test_reference_ledger_progressive_is_smaller_for_every_task():
    definitions = await eager_definitions(ServerSpec.reference())
    assert len(definitions) == 20 and all("inputSchema" in d for d in definitions.values())
    runs = await _runs({"percent", "create-assign", "call-first"})
    ledger = build_ledger("reference server", definitions, runs)
    assert [row.key for row in ledger.rows] == ["percent", "create-assign", "call-first"]
    for row in ledger.rows:
        for unit in ("chars", *ENCODINGS):
            assert 0 < row.progressive[unit] < row.eager[unit]
    by_key = {row.key: row for row in ledger.rows}
    # more tools fetched, more context; an error document seen is counted too
    assert by_key["create-assign"].progressive["o200k_base"] > by_key["percent"].progressive["o200k_base"]
    assert by_key["create-assign"].fetched == ["create_task", "assign_task", "list_projects"]
    assert by_key["call-first"].errors == ["TOOL_DESCRIPTION_REQUIRED"]
    assert by_key["call-first"].parts["error documents"]["o200k_base"] > 0
    assert by_key["percent"].parts["error documents"]["o200k_base"] == 0
    # the whole system prompt (with the spec-8 guidance) is on the progressive side
    assert by_key["percent"].parts["system prompt"]["chars"] > len(system_prompt_guidance())
    totals = ledger.as_json()["totals"]
    assert totals["eager"]["o200k_base"] == 3 * ledger.rows[0].eager["o200k_base"]
    assert 0.5 < totals["saved"]["o200k_base"] < 1

    table = render_table(ledger)
    assert "eager o200k" in table and "PD cl100k" in table and "TOOL_DESCRIPTION_REQUIRED" in table
    svg = ET.fromstring(render_svg([ledger]))
    assert svg.tag.endswith("svg")
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}rect")) >= 2 * len(ledger.rows)


def _definition(name: str, description: str) -> dict:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }


def _write(folder: Path, *definitions: dict) -> None:
    folder.mkdir(parents=True)
    for definition in definitions:
        (folder / f"{definition['name']}.json").write_text(json.dumps(definition))
    (folder / "SOURCE.md").write_text("where the definitions came from\n")


@pytest.mark.anyio
async def test_catalogs_merge_with_collisions_prefixed_and_serve_in_simulation(tmp_path):
    source = tmp_path / "catalogs"
    _write(source / "alpha", _definition("echo", "Echo a text back. Alpha's version."), _definition("shout", "Shout."))
    _write(source / "beta-server", _definition("echo", "Echo a text back. Beta's version."))
    merged = merge_catalogs(source, tmp_path / "merged")
    assert merged.tools == 3 and merged.per_catalog == {"alpha": 2, "beta-server": 1}
    assert merged.renamed == {"alpha_echo": "alpha/echo", "beta-server_echo": "beta-server/echo"}
    assert json.loads((tmp_path / "merged" / "beta-server_echo.json").read_text())["name"] == "beta-server_echo"

    spec = ServerSpec.simulation(tmp_path / "merged")
    async with connect(spec) as server:
        assert sorted(server.tool_names) == ["alpha_echo", "beta-server_echo", "shout"]
        run = await run_agent(server, PlannerBackend(), "Shout the text 'hello'.")
    assert [s.kind for s in run.steps] == ["read", "call", "answer"]
    assert run.calls("shout", ok=True)[0].reply.data["arguments"] == {"text": "hello"}


def test_demo_cli_runs_one_task_and_writes_json_and_svg(tmp_path, capsys):
    report, chart = tmp_path / "demo.json", tmp_path / "ledger.svg"
    assert main(["--task", "create-assign", "--task", "1", "--json", str(report), "--svg", str(chart)]) == 0
    out = capsys.readouterr().out
    assert "offline planner (deterministic rules, not a model)" in out
    assert "read    create_task, assign_task  -> ok" in out
    assert "Token ledger: reference server (20 tools)" in out and "2 of 2 task(s) passed." in out
    data = json.loads(report.read_text())
    assert [r["task"] for r in data["runs"]] == ["create-assign", "percent"]
    assert all(r["passed"] for r in data["runs"])
    (ledger,) = data["ledgers"]
    assert ledger["tools"] == 20 and ledger["totals"]["saved"]["o200k_base"] > 0.5
    ET.fromstring(chart.read_text())


def test_demo_cli_lists_tasks_and_rejects_unknown_ones(capsys):
    assert main(["--list-tasks"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == len(TASKS)
    with pytest.raises(SystemExit, match="no task 'nope'"):
        main(["--task", "nope", "--no-ledger"])


@pytest.mark.skipif(not CATALOGS.is_dir(), reason="needs ../shared/catalogs beside the checkout")
def test_demo_cli_builds_the_combined_catalog_ledger(tmp_path, capsys):
    report = tmp_path / "demo.json"
    assert main(["--task", "percent", "--ledger-catalog", str(CATALOGS), "--json", str(report), "--quiet"]) == 0
    data = json.loads(report.read_text())
    reference, catalog = data["ledgers"]
    assert catalog["tools"] == 322
    assert all(r["passed"] for r in data["catalog_runs"])
    for row in catalog["rows"]:
        assert 0 < row["progressive"]["o200k_base"] < row["eager"]["o200k_base"]
    assert reference["tools"] == 20
