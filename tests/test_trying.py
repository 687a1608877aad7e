"""Trying things by hand (issue 32): `mcp-pd search DIR QUERY` answers as catalog mode's search_tools does, with the
ranking's figures, and `mcp-pd call` describes then calls a tool in one session, over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pdtest import CATALOGS, http_subprocess

pytestmark = pytest.mark.slow


def _mcp_pd(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_pd", *argv], capture_output=True, text=True, timeout=240)


def test_search_shows_the_answer_and_its_figures() -> None:
    done = _mcp_pd("search", str(CATALOGS / "github-mcp-server"), "open a pull request", "--limit", "3", "--no-cache")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    rows = found["answer"]["results"]
    assert rows[0]["name"] == "create_pull_request" and len(rows) == 3
    assert [r["name"] for r in found["ranking"]] == [r["name"] for r in rows]  # the same ranking, with its figures
    assert all({"score", "match", "coverage"} <= set(r) for r in found["ranking"])
    assert found["answered_by"]["ranking"] in ("hybrid", "lexical")


def test_call_describes_then_calls_in_one_session_over_stdio_and_http() -> None:
    serve = f"{sys.executable} -m mcp_pd serve"
    done = _mcp_pd("call", "--stdio", serve, "list_projects", "{}")
    assert done.returncode == 0, done.stderr
    called = json.loads(done.stdout)
    assert called["described_by"] == "resource" and "list_projects" in called["definition"]
    assert not called["result"].get("isError") and called["result"]["content"]
    with http_subprocess() as url:
        done = _mcp_pd("call", "--url", url, "list_projects")
    assert done.returncode == 0, done.stderr
    assert not json.loads(done.stdout)["result"].get("isError")


def test_call_says_what_is_wrong_with_its_arguments() -> None:
    done = _mcp_pd("call", "--stdio", "true", "x", "[1]")
    assert done.returncode != 0 and "ARGUMENTS must be a JSON object" in done.stderr
    done = _mcp_pd("call", "--stdio", "true", "x", "{nope")
    assert done.returncode != 0 and "ARGUMENTS is not JSON" in done.stderr
