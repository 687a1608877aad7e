"""The token ledger, the catalog merge, and `mcp-pd demo` end to end (offline planner)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from mcp_pd_agent import (
    ENCODINGS,
    TASKS,
    ContextRecord,
    Ledger,
    PlannerBackend,
    Reply,
    Run,
    ServerSpec,
    Step,
    TokenCounter,
    build_ledger,
    connect,
    main,
    merge_catalogs,
    render_svg,
    render_table,
    run_agent,
    system_prompt,
    system_prompt_guidance,
    update_markdown,
)
from pdtest import CATALOGS


def test_token_counts_are_offline_and_match_known_values():
    counter = TokenCounter()
    assert counter.problem is None and counter.units == list(ENCODINGS)
    # "hello world" is 2 tokens in both encodings (tiktoken gives the same ids)
    assert counter.count("hello world") == {"chars": 11, "o200k_base": 2, "cl100k_base": 2}


def _run(prompt: str, fetched: dict, errors: list[str], host: str = "resources") -> Run:
    """A finished run as the loop records it (no server needed for the arithmetic)."""
    run = Run(prompt, "test", host)
    reader = {"name": "read_tool_descriptions", "description": "Reads definitions.", "parameters": {}}
    run.context = ContextRecord(
        system_prompt=system_prompt("Server instructions.", host=host, read_function="describe_tools"),
        minimal_list=[{"name": n, "description": "One line.", "inputSchema": {"type": "object"}} for n in "abc"],
        read_function=reader if host == "resources" else {},
        fetched=[json.dumps(fetched)] if fetched else [],
        errors=errors,
    )
    reply = Reply(json.dumps(fetched), data=fetched)
    run.steps.append(Step("read", "read_tool_descriptions", {"tools": list(fetched)}, reply, tuple(fetched)))
    if errors:
        run.steps.append(Step("call", "a", {}, Reply(errors[0], True, "TOOL_DESCRIPTION_REQUIRED")))
    return run


def test_ledger_arithmetic():
    definitions = {
        n: {"name": n, "description": "A long description. " * 300, "inputSchema": {"type": "object"}} for n in "abc"
    }
    runs = [
        ("one", _run("first", {"a": definitions["a"]}, [])),
        ("two", _run("second", {"a": definitions["a"], "b": definitions["b"]}, ['{"error":{"code":"X"}}'])),
    ]
    ledger = build_ledger("test", definitions, runs)
    one, two = ledger.rows
    assert one.eager == two.eager and one.eager["o200k_base"] > 0
    assert one.fetched == ["a"] and two.fetched == ["a", "b"] and two.errors == ["TOOL_DESCRIPTION_REQUIRED"]
    assert two.parts["error documents"]["chars"] == len('{"error":{"code":"X"}}')
    assert one.parts["error documents"]["chars"] == 0
    for row in ledger.rows:
        assert 0 < row.progressive["o200k_base"] < row.eager["o200k_base"]
        assert row.progressive["chars"] == sum(part["chars"] for part in row.parts.values())
    assert two.progressive["o200k_base"] > one.progressive["o200k_base"]
    assert ledger.total("eager")["cl100k_base"] == 2 * one.eager["cl100k_base"]
    assert ledger.saved("o200k_base") == pytest.approx(
        1 - ledger.total("progressive")["o200k_base"] / ledger.total("eager")["o200k_base"]
    )
    table = render_table(ledger)
    assert "eager o200k" in table and "resources cl100k" in table and "(+TOOL_DESCRIPTION_REQUIRED)" in table
    svg = ET.fromstring(render_svg([ledger, ledger]))
    assert svg.tag.endswith("svg")
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}rect")) >= 4 * len(ledger.rows)


def test_ledger_puts_the_hosts_side_by_side():
    definitions = {
        n: {"name": n, "description": "A long description. " * 300, "inputSchema": {"type": "object"}} for n in "abc"
    }
    runs = [
        ("one", _run("first", {"a": definitions["a"]}, [])),
        ("one", _run("first", {"a": definitions["a"]}, [], host="tools-only")),
        ("two", _run("second", {"b": definitions["b"]}, [])),
        ("two", _run("second", {"b": definitions["b"]}, [], host="tools-only")),
        ("three", _run("third", {"c": definitions["c"]}, [])),  # no tools-only run: cannot be compared
    ]
    ledger = build_ledger("test", definitions, runs, passed={"resources": 3, "tools-only": 2})
    assert ledger.hosts == ["resources", "tools-only"]
    assert [row.key for row in ledger.rows] == ["one", "two"] and "left out" in (ledger.note or "")
    for row in ledger.rows:
        resources, tools_only = row.hosts["resources"], row.hosts["tools-only"]
        assert resources.fetched == tools_only.fetched
        # no reader function in the tools-only host (its describe tool is in the listed minimal list)
        assert tools_only.parts["read function"]["chars"] == 0 < resources.parts["read function"]["chars"]
        assert tools_only.parts["minimal list"] == resources.parts["minimal list"]
        assert row.saved("o200k_base", "tools-only") > row.saved("o200k_base", "resources") > 0
    total = ledger.total("tools-only")["cl100k_base"]
    assert total == sum(row.hosts["tools-only"].total["cl100k_base"] for row in ledger.rows)
    table = render_table(ledger)
    assert "resources o200k" in table and "tools-only cl100k" in table
    assert "passed: 3 of 2 (resources host), 2 of 2 (tools-only host)" in table
    markdown = update_markdown("<!-- BEGIN GENERATED: ledger tables -->\n<!-- END GENERATED -->", [ledger])
    assert "| eager o200k | resources o200k | saved | tools-only o200k | saved |" in markdown
    assert Ledger.from_json(json.loads(json.dumps(ledger.as_json()))).as_json() == ledger.as_json()
    svg = ET.fromstring(render_svg([ledger]))
    # per task: one eager bar and two bars (fixed + per-task part) per host
    bars = svg.findall(".//{http://www.w3.org/2000/svg}rect")
    assert len(bars) >= len(ledger.rows) * 5


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
    assert json.loads((tmp_path / "merged" / "beta-server" / "beta-server_echo.json").read_text())["name"] == (
        "beta-server_echo"
    )

    spec = ServerSpec.simulation(tmp_path / "merged")
    for host in ("resources", "tools-only"):
        async with connect(spec) as server:
            assert sorted(server.task_tool_names) == ["alpha_echo", "beta-server_echo", "shout"]
            assert server.describe_tool == "describe_tools" and server.tool_names[0] == "describe_tools"
            run = await run_agent(server, PlannerBackend(), "Shout the text 'hello'.", host=host)
        assert [s.kind for s in run.steps] == ["read", "call", "answer"]
        assert run.calls("shout", ok=True)[0].reply.data["arguments"] == {"text": "hello"}


def test_demo_cli_runs_tasks_and_writes_the_ledger(tmp_path, capsys):
    report, chart = tmp_path / "demo.json", tmp_path / "ledger.svg"
    argv = ["--task", "create-assign", "--task", "12", "--host", "both", "--json", str(report), "--svg", str(chart)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "offline planner (deterministic rules, not a model)" in out
    assert "read    create_task, assign_task  -> ok" in out
    assert "read    create_task, assign_task  (via describe_tools)  -> ok" in out
    assert "error path TOOL_DESCRIPTION_REQUIRED: seen and recovered from" in out
    assert "Token ledger: reference server (20 tools)" in out and "4 of 4 task(s) passed." in out
    data = json.loads(report.read_text())
    assert data["hosts"] == ["resources", "tools-only"]
    assert [(r["task"], r["host"]) for r in data["runs"]] == [
        ("create-assign", "resources"),
        ("call-first", "resources"),
        ("create-assign", "tools-only"),
        ("call-first", "tools-only"),
    ]
    assert all(r["passed"] for r in data["runs"])
    (ledger,) = data["ledgers"]
    assert ledger["tools"] == 20 and ledger["passed"] == {"resources": 2, "tools-only": 2}
    for host in ledger["hosts"]:
        assert 0.5 < ledger["totals"]["saved"][host]["o200k_base"] < 1
    assert ledger["eager_parts"]["full definitions"]["o200k_base"] > ledger["plain_tools_list"]["o200k_base"]
    create, call_first = ledger["rows"]
    for host, cost in create["hosts"].items():
        assert cost["fetched"] == ["create_task", "assign_task", "list_projects"], host
        assert call_first["hosts"][host]["errors"] == ["TOOL_DESCRIPTION_REQUIRED"]
        assert call_first["hosts"][host]["parts"]["error documents"]["o200k_base"] > 0
        assert create["hosts"][host]["total"]["o200k_base"] > call_first["hosts"][host]["total"]["o200k_base"]
    for row in ledger["rows"]:
        resources, tools_only = row["hosts"]["resources"], row["hosts"]["tools-only"]
        for unit in ("o200k_base", "cl100k_base"):
            assert 0 < tools_only["total"][unit] < resources["total"][unit] < row["eager"][unit]
        # the whole system prompt (base + spec-8 guidance + server instructions) is on the progressive side
        assert resources["parts"]["system prompt"]["chars"] > len(system_prompt_guidance())
        # both hosts carry the same listing (the describe tool's entry included); only resources has a reader
        assert tools_only["parts"]["minimal list"] == resources["parts"]["minimal list"]
        assert (
            tools_only["parts"]["read function"]["o200k_base"] == 0 < resources["parts"]["read function"]["o200k_base"]
        )
    ET.fromstring(chart.read_text())


def test_demo_cli_lists_tasks_and_rejects_unknown_ones(capsys):
    assert main(["--list-tasks"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == len(TASKS)
    with pytest.raises(SystemExit, match="no task 'nope'"):
        main(["--task", "nope", "--no-ledger"])


def test_demo_cli_builds_the_combined_catalog_ledger(tmp_path, capsys):
    report = tmp_path / "demo.json"
    argv = ["--task", "percent", "--no-ledger", "--ledger-catalog", str(CATALOGS), "--json", str(report), "--quiet"]
    assert main([*argv, "--host", "tools-only"]) == 0
    data = json.loads(report.read_text())
    (catalog,) = data["ledgers"]
    assert catalog["tools"] == 322 and catalog["hosts"] == ["tools-only"]
    assert all(r["passed"] and r["host"] == "tools-only" for r in data["catalog_runs"])
    for row in catalog["rows"]:
        assert 0 < row["hosts"]["tools-only"]["total"]["o200k_base"] < row["eager"]["o200k_base"]


def test_markdown_blocks_are_rewritten_in_place_and_bad_pages_are_refused(tmp_path):
    ledger = build_ledger("tiny", {"add": {"name": "add", "inputSchema": {"type": "object"}}}, [])
    page = "intro\n<!-- BEGIN GENERATED: ledger summary -->\nstale\n<!-- END GENERATED -->\noutro\n"
    updated = update_markdown(page, [ledger])
    assert updated.startswith(
        "intro\n<!-- BEGIN GENERATED: ledger summary -->\n| server | tools | tasks (passed: resources) |"
    )
    assert "stale" not in updated and updated.endswith("<!-- END GENERATED -->\noutro\n")
    assert "| tiny | 1 | 0 |" in updated
    assert update_markdown(updated, [ledger]) == updated
    with pytest.raises(ValueError, match="no '<!-- BEGIN GENERATED"):
        update_markdown("no blocks here", [ledger])
    with pytest.raises(ValueError, match="has no '<!-- END GENERATED -->'"):
        update_markdown("<!-- BEGIN GENERATED: ledger tables -->\n", [ledger])
    # The CLI refuses, before running any task, a page without blocks and a partial run.
    bare = tmp_path / "bare.md"
    bare.write_text("nothing to rewrite\n")
    with pytest.raises(SystemExit, match=r"--markdown .*bare\.md: no '<!-- BEGIN GENERATED"):
        main(["--host", "both", "--mode", "both", "--ledger-catalog", str(CATALOGS), "--markdown", str(bare)])
    with pytest.raises(SystemExit, match="run the whole task set"):
        main(
            [
                "--task",
                "percent",
                "--host",
                "both",
                "--mode",
                "both",
                "--ledger-catalog",
                str(CATALOGS),
                "--markdown",
                str(bare),
            ]
        )
    page = tmp_path / "page.md"
    page.write_text(updated)
    with pytest.raises(SystemExit, match="in both hosts and both modes"):  # the documented ledger shows them all
        main(["--ledger-catalog", str(CATALOGS), "--markdown", str(page), "--quiet"])
    with pytest.raises(SystemExit, match="in both hosts and both modes"):  # ... catalog mode included
        main(["--host", "both", "--ledger-catalog", str(CATALOGS), "--markdown", str(page), "--quiet"])
    assert page.read_text() == updated
    assert bare.read_text() == "nothing to rewrite\n"
