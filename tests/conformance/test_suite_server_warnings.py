"""The suite shows what the server it started said was wrong with itself (issue 32): a definition file the server
could not use is named on the server's stderr, which the suite otherwise hides."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pdtest import ROOT

pytestmark = pytest.mark.slow


def test_the_report_carries_the_servers_own_warnings(tmp_path: Path) -> None:
    for path in (ROOT / "tool_descriptions").glob("*.json"):
        shutil.copy(path, tmp_path)
    broken = tmp_path / "list_projects.json"
    broken.write_text(json.dumps({"examples": [{"arguments": {}}], "bogus": 1}))
    serve = f"{sys.executable} -m mcp_pd serve --descriptions {tmp_path}"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "check", "--stdio", serve, "--only", "connection/handshake"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    report = done.stdout + done.stderr
    assert "the server warned on stderr" in report, report[-2000:]
    assert f"{broken}: not a valid tool definition: bogus" in report
