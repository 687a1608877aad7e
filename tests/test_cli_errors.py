"""A person's mistake on any `mcp-pd` command is one clear line and a non-zero exit, never a traceback (issue 40.6).

Each mistake is made for real: a server that wants a bearer token called without one and with a wrong one, a port
nothing listens on, a URL without its scheme, a path that serves nothing, a command that does not exist or exits at
once, a database in a folder that does not exist, a port already taken.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pdtest import free_port, http_subprocess
from pdtest_redis import ALICE, token_file

pytestmark = [pytest.mark.slow]


def _mcp_pd(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_pd", *argv], capture_output=True, text=True, timeout=240, cwd=cwd, stdin=None
    )


def _one_line(done: subprocess.CompletedProcess[str], command: str) -> str:
    """The single line a refused command printed (it must exit non-zero and show no traceback)."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and "Error Group" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith(f"mcp-pd {command}:")]
    assert len(said) == 1, done.stderr
    return said[0]


@pytest.mark.req("PDX-CLI-01")
def test_call_without_a_token_or_with_a_wrong_one_says_so(tmp_path: Path) -> None:
    tokens = token_file(tmp_path)
    with http_subprocess("--bearer-tokens", str(tokens)) as url:
        missing = _one_line(_mcp_pd("call", "--url", url, "calculate", '{"expression": "1+1"}'), "call")
        assert "requires a bearer token (401 Unauthorized)" in missing
        assert "--header 'Authorization: Bearer TOKEN'" in missing
        wrong = _mcp_pd("call", "--url", url, "--header", "Authorization: Bearer nope", "calculate")
        assert "refused the bearer token (401 Unauthorized)" in _one_line(wrong, "call")
        assert "nope" not in wrong.stderr  # a token, even a wrong one, is never echoed
        elsewhere = _mcp_pd(
            "call",
            "--url",
            url.removesuffix("/mcp") + "/nothing",
            "--header",
            f"Authorization: Bearer {ALICE}",
            "calculate",
        )
        assert "(404 Not Found)" in _one_line(elsewhere, "call")
        right = _mcp_pd(
            "call", "--url", url, "--header", f"Authorization: Bearer {ALICE}", "calculate", '{"expression": "6*7"}'
        )
    assert right.returncode == 0, right.stderr
    assert json.loads(right.stdout)["result"]["structuredContent"]["result"] == 42


@pytest.mark.req("PDX-CLI-01")
def test_call_to_no_server_a_bad_url_or_a_missing_command_says_so() -> None:
    port = free_port()  # nothing listens there
    refused = _mcp_pd("call", "--url", f"http://127.0.0.1:{port}/mcp", "calculate")
    assert "is the server running" in _one_line(refused, "call")
    schemeless = _mcp_pd("call", "--url", f"127.0.0.1:{port}/mcp", "calculate")
    assert "is not an http:// or https:// URL" in _one_line(schemeless, "call")
    missing = _mcp_pd("call", "--stdio", "no-such-command-40 --flag", "calculate")
    assert "command not found: no-such-command-40" in _one_line(missing, "call")
    exits = _mcp_pd("call", "--stdio", f"{sys.executable} -c pass", "calculate")
    assert "the server exited before answering" in _one_line(exits, "call")


@pytest.mark.req("PDX-CLI-01")
def test_demo_against_an_unreachable_server_stops_with_one_line() -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "demo", "--url", f"http://127.0.0.1:{port}/mcp", "--task", "call-first"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 2
    line = _one_line(done, "demo")
    assert "cannot be reached" in line and "no task was run" in line
    exits = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "demo", "--stdio", "no-such-command-40", "--task", "call-first"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "command not found: no-such-command-40" in _one_line(exits, "demo")


@pytest.mark.req("PDX-CLI-01")
def test_serve_with_a_database_in_a_missing_folder_says_so(tmp_path: Path) -> None:
    done = _mcp_pd("serve", "--database", str(tmp_path / "missing" / "tracker.db"))
    assert "unable to open database file" in _one_line(done, "serve")


@pytest.mark.req("PDX-CLI-01")
def test_proxy_on_a_taken_port_says_so_without_a_traceback(tmp_path: Path) -> None:
    with http_subprocess() as url:
        port = url.split(":")[2].split("/")[0]
        done = subprocess.run(
            [
                *(sys.executable, "-m", "mcp_pd", "proxy", "--transport", "http", "--port", port),
                *("--upstream-stdio", f"ref={sys.executable} -m mcp_pd serve"),
            ],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,
        )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "address already in use" in done.stderr
    assert f"mcp-pd proxy: could not serve HTTP on 127.0.0.1:{port}" in done.stderr
