"""The description store on real files: validation, last-good, deletion, watching (spec 7)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp_pd import DescriptionStore
from mcp_pd._store import Catalog
from pdtest_servers import ADD_DEFINITION, write_definitions

pytestmark = pytest.mark.anyio


def code_tool(name: str = "add") -> dict[str, object]:
    return {
        "name": name,
        "description": "Add two integers. Returns the sum.",
        "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
    }


@pytest.mark.req("PD-7.1-01", "PD-7.2-01")
def test_problems_are_reported_and_never_take_a_tool_down(tmp_path: Path) -> None:
    write_definitions(tmp_path, ADD_DEFINITION)
    (tmp_path / "broken.json").write_text("{ not json")
    (tmp_path / "wrong_name.json").write_text(json.dumps({**ADD_DEFINITION, "name": "other"}))
    (tmp_path / "bad_name.json").write_text(json.dumps({**ADD_DEFINITION, "name": "../evil"}))
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "notes.txt").write_text("ignored")
    store = DescriptionStore(tmp_path)
    assert store.names() == {"add"}
    reasons = {Path(p.source).name: p.reason for p in store.problems}
    assert reasons.keys() == {"broken.json", "wrong_name.json", "bad_name.json", "list.json"}
    assert "invalid JSON" in reasons["broken.json"]
    assert "must match" in reasons["wrong_name.json"]
    assert "SEP-986" in reasons["bad_name.json"]

    # A half-written file keeps the last good version.
    (tmp_path / "add.json").write_text('{"name": "add", "descr')
    assert store.reload([tmp_path / "add.json"]) == frozenset()
    definition = store.get("add")
    assert definition is not None
    assert definition.description == ADD_DEFINITION["description"]
    assert "keeping the last good version" in next(p.reason for p in store.problems if p.source.endswith("add.json"))
    # Deleting the file removes the definition.
    (tmp_path / "add.json").unlink()
    assert store.reload([tmp_path / "add.json"]) == {"add"}
    assert store.get("add") is None


def test_missing_directory_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    store = DescriptionStore(tmp_path / "nope")
    assert len(store) == 0
    assert "does not exist" in store.problems[0].reason


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_text(json.dumps({**ADD_DEFINITION, "name": "big", "description": "x" * (1 << 20)}))
    store = DescriptionStore(tmp_path)
    assert store.get("big") is None
    assert "limited to" in store.problems[0].reason


def test_catalog_merges_and_reports_orphans(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_definitions(tmp_path, ADD_DEFINITION, {**ADD_DEFINITION, "name": "ghost"})
    catalog = Catalog(DescriptionStore(tmp_path))
    catalog.update([code_tool("add"), code_tool("plain")], complete=True)
    assert catalog.orphans() == ["ghost"]
    assert "ghost.json describes a tool this server does not have" in caplog.text
    assert "ghost" not in catalog
    plain = catalog.full("plain")
    assert plain is not None
    assert plain["examples"] == []
    minimal = catalog.minimal("plain")
    assert minimal is not None
    assert minimal["description"] == "Add two integers."


def test_catalog_keeps_listed_models_and_sees_changed_ones(tmp_path: Path) -> None:
    catalog = Catalog(DescriptionStore(tmp_path))
    first = types.Tool.model_validate(code_tool("add"))
    catalog.update([first], complete=True)
    before = catalog.full("add")
    before_text = catalog.full_text("add")
    assert before_text is not None and json.loads(before_text) == before
    # An equal tool listed as a new object (as MCPServer does on every listing) keeps the merged entry.
    catalog.update([types.Tool.model_validate(code_tool("add"))], complete=True)
    assert catalog.full("add") is before
    changed = types.Tool.model_validate({**code_tool("add"), "description": "Add two numbers. New wording."})
    catalog.update([changed], complete=True)
    full, minimal = catalog.full("add"), catalog.minimal("add")
    assert full is not None and minimal is not None
    assert full["description"] == "Add two numbers. New wording."
    assert minimal["description"] == "Add two numbers."
    assert catalog.full_text("add") == json.dumps(full, ensure_ascii=False) != before_text
    # A server that changes the model it listed and lists that same object again is seen too.
    changed.description = "Add two integers exactly. Changed in place."
    catalog.update([changed], complete=True)
    assert (catalog.minimal("add") or {})["description"] == "Add two integers exactly."
    assert catalog.complete and catalog.names() == ["add"]


def test_drifted_schema_serves_the_registered_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    drifted = {**ADD_DEFINITION, "inputSchema": {"type": "object", "properties": {"x": {}}, "required": ["x"]}}
    write_definitions(tmp_path, drifted)
    catalog = Catalog(DescriptionStore(tmp_path))
    catalog.update([code_tool("add")], complete=True)
    full = catalog.full("add")
    assert full is not None
    assert full["inputSchema"]["required"] == ["a", "b"]
    assert full["examples"] == ADD_DEFINITION["examples"]
    assert "changes the tool's parameters" in caplog.text and "the registered inputSchema is served" in caplog.text


@pytest.mark.req("PD-7.2-02", "PD-4.4-04")
async def test_watch_picks_up_edits_renames_and_deletes(tmp_path: Path) -> None:
    write_definitions(tmp_path, ADD_DEFINITION)
    store = DescriptionStore(tmp_path)
    catalog = Catalog(store)
    catalog.update([code_tool("add")], complete=True)
    events: list[frozenset[str]] = []

    async def listener(changed: frozenset[str]) -> None:
        events.append(changed)

    store.add_listener(listener)

    async def wait_for(predicate: object, what: str) -> None:
        with anyio.fail_after(3, shield=False):
            while not predicate():  # type: ignore[operator]
                await anyio.sleep(0.02)

    async with anyio.create_task_group() as tg:
        tg.start_soon(store.watch)
        await anyio.sleep(0.3)  # let the watcher start
        (tmp_path / "add.json").write_text(json.dumps({**ADD_DEFINITION, "minimal_description": "Sum two ints."}))
        await wait_for(lambda: (catalog.minimal("add") or {}).get("description") == "Sum two ints.", "in-place edit")

        tmp = tmp_path / ".add.json.tmp"
        tmp.write_text(json.dumps({**ADD_DEFINITION, "minimal_description": "Renamed in."}))
        os.replace(tmp, tmp_path / "add.json")
        await wait_for(lambda: (catalog.minimal("add") or {}).get("description") == "Renamed in.", "atomic rename")

        (tmp_path / "add.json").write_text("{ half")
        await anyio.sleep(0.4)
        assert (catalog.minimal("add") or {}).get("description") == "Renamed in."  # last good kept

        (tmp_path / "add.json").unlink()
        await wait_for(lambda: store.get("add") is None, "delete")
        assert (catalog.minimal("add") or {}).get("description") == "Add two integers."  # derived again
        tg.cancel_scope.cancel()
    assert all(e == {"add"} for e in events)
    assert len(events) >= 3
