"""Issue 42 item 6: `mcp-pd check --url` against a protected server. Credentials go in headers (`--header`, or from
the environment with `--header-env` / `--bearer-env`, so a token stays out of the shell history); a 401 or 403 is
reported as such, with the server's WWW-Authenticate challenge, and exits 3; a token never appears in a report.

The server is the real `mcp-pd serve --transport http --bearer-tokens FILE` on a loopback port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_pd_conformance import main
from pdtest import http_subprocess

TOKEN = "alice-token-0123456789abcdef"
STATIC = "tools-list,resource-listing,resource-read,missing-selection"


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference server behind one bearer token; yields its /mcp URL."""
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.json"
    tokens.write_text(json.dumps({TOKEN: {"client_id": "suite", "subject": "alice"}}))
    with http_subprocess("--no-watch", "--bearer-tokens", str(tokens)) as url:
        yield url


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.req("PD-2-01")
def test_without_credentials_a_401_is_reported_as_such(protected: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "is this an MCP server?" and exit 1. Now: the status, the challenge, the way to pass a token; exit 3."""
    code, out = _check(capsys, "--url", protected, "-q")
    assert code == 3, out
    assert "VERDICT: ERROR (exit 3): not authorized: HTTP 401 Unauthorized: the server requires credentials" in out
    assert 'WWW-Authenticate: Bearer error="invalid_token"' in out
    assert "--bearer-env VAR" in out and "is this an MCP server" not in out


def test_a_wrong_token_is_refused_and_never_shown(
    protected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    wrong = "wrong-token-that-must-not-leak-42"
    monkeypatch.setenv("PD_SUITE_TOKEN", wrong)
    report = tmp_path / "report.json"
    code, out = _check(capsys, "--url", protected, "--bearer-env", "PD_SUITE_TOKEN", "-q", "--json", str(report))
    assert code == 3, out
    assert "the server refused the credentials" in out and "check the value of Authorization" in out
    assert wrong not in out and wrong not in report.read_text()
    assert json.loads(report.read_text())["fatal_kind"] == "unauthorized"


@pytest.mark.req("PD-2-01", "PD-3.1-01", "PD-4.1-01")
@pytest.mark.parametrize("how", ["--bearer-env", "--header-env", "--header"])
def test_with_the_token_the_protected_server_is_checked(
    how: str, protected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PD_SUITE_TOKEN", TOKEN)
    given = {
        "--bearer-env": ["--bearer-env", "PD_SUITE_TOKEN"],
        "--header-env": ["--header-env", "Authorization=PD_SUITE_BEARER"],
        "--header": ["--header", f"Authorization: Bearer {TOKEN}", "--header", "X-Team: search"],
    }[how]
    monkeypatch.setenv("PD_SUITE_BEARER", f"Bearer {TOKEN}")
    report = tmp_path / "report.json"
    code, out = _check(capsys, "--url", protected, *given, "--only", STATIC, "-q", "--json", str(report))
    assert code == 0, out
    document = json.loads(report.read_text())
    assert document["verdict"] == "PASS" and document["fatal"] is None, out
    statuses = {c["id"]: c["status"] for c in document["checks"]}
    assert statuses["tools-list/listed"] == "SUCCESS"
    assert statuses["resource-read/single-tool"] == "SUCCESS"
    # The header names are shown, never their values.
    assert "headers: Authorization" in document["target"]
    assert TOKEN not in out and TOKEN not in report.read_text()


@pytest.mark.parametrize(
    "argv",
    [
        ["--stdio", "x", "--header", "Authorization: Bearer abc"],
        ["--url", "http://127.0.0.1:1/mcp", "--header", "no colon here"],
        ["--url", "http://127.0.0.1:1/mcp", "--header", "Bad Name: value"],
        ["--url", "http://127.0.0.1:1/mcp", "--header", "X-Empty:"],
        ["--url", "http://127.0.0.1:1/mcp", "--header-env", "Authorization"],
        ["--url", "http://127.0.0.1:1/mcp", "--bearer-env", "PD_SUITE_UNSET_VARIABLE"],
        ["--url", "http://127.0.0.1:1/mcp", "--header", "A: 1", "--header", "a: 2"],
    ],
)
def test_bad_credentials_options_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(capsys, *argv)
    assert code == 2 and "mcp-pd check:" in out, out


def test_an_unset_variable_is_named_and_its_absence_said(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PD_SUITE_EMPTY", "")
    code, out = _check(capsys, "--url", "http://127.0.0.1:1/mcp", "--bearer-env", "PD_SUITE_EMPTY")
    assert code == 2 and "the environment variable PD_SUITE_EMPTY is empty" in out, out
