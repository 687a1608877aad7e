"""Export, enrich by hand, then serve from the cache: tools/list and descriptions without starting any upstream,
and each upstream started on its first call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gateway.gwtest import connect, describe, error_of, gateway_params, marked_pids, stdio, write_config

pytestmark = pytest.mark.anyio


def _export(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    params = gateway_params()
    argv = [sys.executable, "-m", "mcp_pd", "export", "--quiet-upstreams", "--config", str(config), "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=params.env)


def _running(mark: str, needle: str) -> bool:
    return any(
        needle in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") for pid in marked_pids(mark)
    )


async def test_export_enrich_then_serve_lazily_from_the_cache(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    servers = {
        "memory": stdio("node", str(npm["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}),
        "everything": stdio("node", str(npm["everything"]), mark=mark, category="testing"),
        "reference": stdio(sys.executable, "-m", "mcp_pd", "serve", "--no-watch", mark=mark),
    }
    config = write_config(tmp_path / "servers.json", servers)
    out = tmp_path / "definitions"
    done = _export(config, out)
    assert done.returncode == 0, done.stderr
    assert "written" in done.stderr
    files = {p.stem for p in out.glob("*.json")}
    assert {"create_entities", "get-sum", "calculate"} <= files
    assert "describe_tools" not in files  # the reference server's own describe tool is not an upstream tool
    get_sum = json.loads((out / "get-sum.json").read_text())
    assert get_sum["category"] == "testing" and get_sum["examples"] == []
    assert json.loads((out / "read_graph.json").read_text())["category"] == "memory"
    # An upstream that serves full definitions itself gives its examples to the export.
    assert json.loads((out / "calculate.json").read_text())["examples"]

    # Enrich by hand, then export again: what was written by hand stays.
    example = {"description": "Two and forty", "input": {"a": 2, "b": 40}}
    get_sum.update(examples=[example], usage_guidance="Use for sums of two numbers.")
    (out / "get-sum.json").write_text(json.dumps(get_sum, indent=2))
    again = _export(config, out)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "get-sum.json").read_text())["examples"] == [example]
    assert not marked_pids(mark)

    # Serve from the cache: nothing starts until a tool is called, and then only its upstream.
    servers["memory"] = stdio("definitely-not-a-command-mcp-pd", mark=mark)  # broken, but only used if called
    write_config(config, servers)
    async with connect(gateway_params("--config", str(config), "--cache", str(out))) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"create_entities", "get-sum", "calculate"} <= names
        document = await describe(client, "get-sum", "read_graph")
        assert document["get-sum"]["examples"] == [example]
        assert document["get-sum"]["usage_guidance"] == "Use for sums of two numbers."
        assert not marked_pids(mark), "an upstream was started to list or describe"

        result = await client.call_tool("get-sum", {"a": 2, "b": 40})
        assert not result.is_error and "42" in str(result.content)
        assert _running(mark, "server-everything")
        assert not _running(mark, "mcp_pd")  # the reference server was never needed

        error = error_of(await client.call_tool("read_graph", {}))
        assert error["server"] == "memory"
        assert "command not found: definitely-not-a-command-mcp-pd" in error["message"]
        assert not (await client.call_tool("get-sum", {"a": 1, "b": 1})).is_error  # the others keep serving


@pytest.mark.parametrize("mode", ["eager", "progressive"])
async def test_the_live_gateway_keeps_task_support_as_export_does(
    tmp_path: Path, npm: dict[str, Path], mark: str, mode: str
) -> None:
    # Issue 23.5: an upstream tool's `execution` (task support) reached export and --cache but not the live listing.
    config = write_config(tmp_path / "servers.json", {"everything": stdio("node", str(npm["everything"]), mark=mark)})
    out = tmp_path / "definitions"
    assert _export(config, out).returncode == 0
    direct: dict[str, Any] = {}  # what export wrote: the upstream's own fields
    for path in out.glob("*.json"):
        definition = json.loads(path.read_text())
        if definition.get("execution"):
            direct[definition["name"]] = definition["execution"]
    assert direct.get("simulate-research-query") == {"taskSupport": "required"}, direct
    async with connect(gateway_params("--config", str(config), "--mode", mode)) as client:
        listed = {
            t.name: t.execution.model_dump(by_alias=True, exclude_none=True)
            for t in (await client.list_tools()).tools
            if t.execution is not None
        }
        # A task-only tool too: the gateway carries task-augmented calls for this 2025-11-25 client (issue 41.5).
        assert listed == direct
        if mode == "progressive":
            described = await describe(client, "echo")
            assert described["echo"]["execution"] == direct["echo"]
