"""A FastMCP version selector reaches another tool (issue 39.2, I-42): describing the listed v2 authorizes v2 only.

The unlisted v1 (destructive, another schema) is reachable through `_meta.fastmcp.version`; a call that selects it
(or any version but the described one) is refused with what to do, before FastMCP runs anything. The gateway's
side (a FastMCP upstream behind `mcp-pd proxy`) is tests/gateway/test_fastmcp_versions.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp_versions_app import build
from mcp_pd import ProgressiveDisclosure, selection_uri

pytestmark = pytest.mark.anyio


def ran(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def document(result: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(result.content[0].text)
    return body


@pytest.mark.parametrize("mode", ["progressive", "catalog"])
@pytest.mark.req("PDX-FASTMCP-02")
async def test_a_version_nobody_described_is_not_run(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "ran.jsonl"
    app = build(log)
    ProgressiveDisclosure(mode=mode).install(app)  # type: ignore[arg-type]
    v1 = {"fastmcp": {"version": "1.0"}}
    async with Client(app) as client:
        before = document(await client.call_tool_mcp("notes", {"note_id": 1}, meta=v1))
        assert before["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        (content,) = await client.read_resource(selection_uri(["notes"]))
        described = json.loads(content.text)["notes"]  # type: ignore[union-attr]
        assert described["annotations"] == {"readOnlyHint": True} and "query" in described["inputSchema"]["properties"]
        refused = await client.call_tool_mcp("notes", {"note_id": 1}, meta=v1)
        assert refused.is_error
        error = document(refused)["error"]
        assert error["code"] == "IMPLEMENTATION_NOT_DESCRIBED"
        assert (error["selector"], error["selected"], error["described"]) == ("fastmcp.version", "1.0", "2.0")
        assert "without _meta.fastmcp.version" in error["message"]
        assert ran(log) == []  # the destructive v1 never ran
        # A version that does not exist at all, and a non-string selector, are refused the same way.
        for other in ({"fastmcp": {"version": "9"}}, {"fastmcp": {"version": 2}}):
            again = await client.call_tool_mcp("notes", {"query": "x"}, meta=other)
            assert document(again)["error"]["code"] == "IMPLEMENTATION_NOT_DESCRIBED"
        # The described version, named or not, runs.
        named = await client.call_tool_mcp("notes", {"query": "milk"}, meta={"fastmcp": {"version": "2.0"}})
        plain = await client.call_tool_mcp("notes", {"query": "eggs"})
        assert not named.is_error and not plain.is_error
        if mode == "catalog":  # call_tool's inner call carries the same `_meta`
            inner = await client.call_tool_mcp("call_tool", {"name": "notes", "arguments": {"note_id": 2}}, meta=v1)
            assert document(inner)["error"]["code"] == "IMPLEMENTATION_NOT_DESCRIBED"
    assert ran(log) == [
        {"version": "2.0", "arguments": {"query": "milk"}},
        {"version": "2.0", "arguments": {"query": "eggs"}},
    ]


@pytest.mark.req("PDX-FASTMCP-02")
async def test_an_unversioned_tool_refuses_any_version(tmp_path: Path) -> None:
    from fastmcp import FastMCP

    app: FastMCP[Any] = FastMCP("plain")

    @app.tool
    def hello() -> str:
        """Say hello."""
        return "hello"

    ProgressiveDisclosure().install(app)
    async with Client(app) as client:
        await client.read_resource(selection_uri(["hello"]))
        refused = await client.call_tool_mcp("hello", {}, meta={"fastmcp": {"version": "1.0"}})
        error = document(refused)["error"]
        assert error["code"] == "IMPLEMENTATION_NOT_DESCRIBED" and error["described"] is None
        assert not (await client.call_tool_mcp("hello", {})).is_error


@pytest.mark.req("PDX-FASTMCP-02", "PDX-OVERLAY-02")
async def test_a_definition_file_cannot_name_another_version(tmp_path: Path) -> None:
    """A file whose `_meta` names v1 would make v1 "the described one": the tool's own version is served instead."""
    log = tmp_path / "ran.jsonl"
    definitions = tmp_path / "defs"
    definitions.mkdir()
    overlay = {"description": "Find notes by a word.", "_meta": {"fastmcp": {"version": "1.0"}, "team": "notes"}}
    (definitions / "notes.json").write_text(json.dumps(overlay))
    app = build(log)
    pd = ProgressiveDisclosure(definitions).install(app)  # type: ignore[arg-type]
    async with Client(app) as client:
        listed = {t.name: t for t in await client.list_tools()}
        assert listed["notes"].meta is not None and listed["notes"].meta["fastmcp"]["version"] == "2.0"
        assert listed["notes"].meta["team"] == "notes"  # the rest of the file's _meta is served
        await client.read_resource(selection_uri(["notes"]))
        refused = await client.call_tool_mcp("notes", {"note_id": 1}, meta={"fastmcp": {"version": "1.0"}})
        assert document(refused)["error"]["code"] == "IMPLEMENTATION_NOT_DESCRIBED"
    (problem,) = pd.store.problems
    assert problem.source == str(definitions / "notes.json") and "fastmcp.version" in problem.reason
    assert ran(log) == []
