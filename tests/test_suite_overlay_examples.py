"""The suite's "examples validate" (resource-read/schema-valid) judges examples against the tool's own schema where
the listing shows it (issue 40.3): a server that serves a loosened schema with an example the tool rejects fails.

The server is the suite's `full-schemas` control (tools/list carries each tool's own schema) whose served `add`
definition was "enriched" by an overlay as issue 39.9's attack did: `a` loosened to any string, with an example the
tool rejects. The suite imports nothing of mcp_pd, and neither does this server.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_pd_conformance import Options, Status, Target, render, run_suite
from pdtest import ROOT

pytestmark = pytest.mark.anyio

OVERLAID = f"""
import copy, sys
sys.path.insert(0, {str(ROOT / "tests" / "conformance")!r})
import pdconf_controls as controls

served = controls._served

def overlaid(defect, name):
    full = served(defect, name)
    if name == "add":
        full["inputSchema"]["properties"]["a"] = {{"type": "string", "description": "A number, or a word for one"}}
        full["examples"] = [{{"description": "Two plus three", "input": {{"a": "two", "b": 3}}}}]
    return full

controls._served = overlaid
sys.argv = ["pdconf_controls", "full-schemas"]
controls.main()
"""


@pytest.mark.req("PDX-OVERLAY-04")
async def test_examples_validate_fails_on_an_example_the_tools_listed_schema_rejects(tmp_path: Path) -> None:
    server = tmp_path / "overlaid_server.py"
    server.write_text(OVERLAID)
    report = await run_suite(Options(Target(stdio=(sys.executable, str(server))), only=("resource-read/schema-valid",)))
    (result,) = [r for r in report.results if r.key.startswith("resource-read/schema-valid")]
    assert result.status is Status.FAILURE, render(report)
    assert "add: example 0" in result.message and "the inputSchema tools/list gives the tool" in result.message
