"""`mcp-pd serve` start-up: problems and orphan definitions are reported before the first client."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mcp_pd.reference import DEFAULT_DESCRIPTIONS


def start_and_close(*args: str) -> subprocess.CompletedProcess[str]:
    # stdin at EOF: the stdio server starts, reports, and ends cleanly.
    return subprocess.run(
        [sys.executable, "-m", "mcp_pd", "serve", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_reference_server_starts_clean() -> None:
    proc = start_and_close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # stdout belongs to the protocol
    tools = len(list(DEFAULT_DESCRIPTIONS.glob("*.json")))
    assert f"mcp-pd: {tools} tools, {tools} JSON definitions" in proc.stderr
    assert "problem" not in proc.stderr
    assert "orphan" not in proc.stderr


def test_orphans_and_broken_files_are_reported_at_start(tmp_path: Path) -> None:
    defs = tmp_path / "defs"
    shutil.copytree(DEFAULT_DESCRIPTIONS, defs)
    victim = sorted(defs.glob("*.json"))[0]
    victim.write_text(victim.read_text()[:40])  # half-written
    ghost = json.loads(sorted(defs.glob("*.json"))[1].read_text())
    ghost["name"] = "ghost_tool"
    (defs / "ghost_tool.json").write_text(json.dumps(ghost))
    proc = start_and_close("--descriptions", str(defs))
    assert proc.returncode == 0, proc.stderr
    assert f"problem: {victim}: invalid JSON" in proc.stderr
    assert proc.stderr.count(f"{victim}: invalid JSON") == 1, proc.stderr  # said once, not once per layer
    assert "1 problem above" in proc.stderr  # counted as a person reads it (issue 40.7)
    assert "orphan: ghost_tool.json describes a tool this server does not have (not served)" in proc.stderr


def test_missing_descriptions_directory_still_serves(tmp_path: Path) -> None:
    proc = start_and_close("--descriptions", str(tmp_path / "missing"))
    assert proc.returncode == 0, proc.stderr
    assert "describing tools from their registered schemas" in proc.stderr


def test_help_lists_the_commands() -> None:
    proc = subprocess.run([sys.executable, "-m", "mcp_pd", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for word in ("serve", "check", "demo"):
        assert word in proc.stdout
