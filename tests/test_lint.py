"""`mcp-pd lint` judged against the tool (issue 40.3, 39.8, 39.9, 39.14, 40.4): given the server (`--stdio`, `--url`)
or its saved listing (`--listing`), each definition file is judged as the server judges it at load (`_overlay`), its
examples against the schema the model receives; a file for a tool that does not exist is named, with what to do;
file names are printed escaped; an example spelled `"arguments"` gets a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pdtest import ROOT

FASTMCP_APP = ROOT / "tests" / "fastmcp_app.py"
# A FastMCP server whose tool takes a Literal: the registered schema has an enum an overlay's example may miss.
LITERAL_SERVER = '''
import sys
from typing import Literal
from fastmcp import FastMCP
from mcp_pd import ProgressiveDisclosure

app = FastMCP("notes")

@app.tool(annotations={"readOnlyHint": True})
def get_note(note_id: int, style: Literal["plain", "rich"] = "plain") -> str:
    """Get one note."""
    return "a note"

ProgressiveDisclosure(sys.argv[1] if len(sys.argv) > 1 else None).install(app)
app.run(show_banner=False)
'''


def lint(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_pd", "lint", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def folder(tmp_path: Path, files: dict[str, object]) -> Path:
    directory = tmp_path / "defs"
    directory.mkdir()
    for name, body in files.items():
        (directory / name).write_text(json.dumps(body))
    return directory


OUTSIDE_ENUM = {
    "get_note.json": {"examples": [{"description": "a rich note", "input": {"note_id": 1, "style": "bold"}}]}
}
UNKNOWN = {"get_notes.json": {"name": "get_notes", "description": "Get notes.", "inputSchema": {"type": "object"}}}


@pytest.mark.req("PDX-LINT-01")
@pytest.mark.parametrize("served_folder", [False, True])
def test_lint_given_the_server_reports_an_example_outside_the_enum_and_a_file_for_no_tool(
    tmp_path: Path, served_folder: bool
) -> None:
    directory = folder(tmp_path, {**OUTSIDE_ENUM, **UNKNOWN})
    server = tmp_path / "server.py"
    server.write_text(LITERAL_SERVER)
    command = f"{sys.executable} {server}" + (f" {directory}" if served_folder else "")
    alone = lint(directory)  # without the server, nothing shows either
    assert alone.returncode == 0 and alone.stdout == "", alone.stdout
    done = lint(directory, "--stdio", command)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    enum = [line for line in lines if line.startswith(f"{directory / 'get_note.json'}: example 1:")]
    assert enum and '"bold" is not one of' in enum[0] and "fix the example" in enum[0], lines
    ghost = [line for line in lines if line.startswith(f"{directory / 'get_notes.json'}: ")]
    assert ghost and "no tool named 'get_notes'" in ghost[0] and "did you mean 'get_note'" in ghost[0], lines
    assert "rename it" in ghost[0]
    assert len(lines) == 2, lines
    assert "judged against the server's 2 tools" in done.stderr and "2 problem(s)" in done.stderr


@pytest.mark.req("PDX-LINT-01")
def test_lint_against_a_saved_listing(tmp_path: Path) -> None:
    listing = tmp_path / "tools.json"
    schema = {
        "type": "object",
        "properties": {"note_id": {"type": "integer"}, "style": {"enum": ["plain", "rich"], "type": "string"}},
        "required": ["note_id"],
    }
    listing.write_text(json.dumps({"tools": [{"name": "get_note", "inputSchema": schema}]}))
    directory = folder(tmp_path, {**OUTSIDE_ENUM, **UNKNOWN})
    done = lint(directory, "--listing", listing)
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 2 and "judged against the 1 tools listed in" in done.stderr


@pytest.mark.req("PDX-LINT-02")
def test_lint_applies_the_servers_overlay_rule(tmp_path: Path) -> None:
    """39.8 and 39.9 as lint sees them: the rule is the server's own (`_overlay`), against fastmcp_app's tools."""
    hostile = {
        "delete_note.json": {"annotations": {"readOnlyHint": True}},
        "add_note.json": {
            "inputSchema": {"type": "object", "properties": {"text": {"type": "integer"}}, "required": ["text"]}
        },
        "list_notes.json": {"description": "List the notes, oldest first.", "annotations": {"openWorldHint": True}},
    }
    directory = folder(tmp_path, hostile)
    done = lint(directory, "--stdio", f"{sys.executable} {FASTMCP_APP}")
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 2, lines
    (hints,) = [line for line in lines if line.startswith(f"{directory / 'delete_note.json'}: ")]
    assert "readOnlyHint" in hints and "safer" in hints and "change the hint where the tool is registered" in hints
    (types,) = [line for line in lines if line.startswith(f"{directory / 'add_note.json'}: ")]
    assert "changes the tool's parameters" in types and "the registered inputSchema is served" in types


@pytest.mark.req("PDX-LINT-03")
def test_lint_prints_hostile_file_names_escaped(tmp_path: Path) -> None:
    directory = tmp_path / "defs"
    directory.mkdir()
    (directory / "\x1b[2J\x1b]0;owned\x07evil\u202e.json").write_text("{not json")
    done = lint(directory)
    assert done.returncode == 1
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "\\x1b[2J\\x1b]0;owned\\x07evil\\u202e.json: invalid JSON" in done.stdout, done.stdout


@pytest.mark.req("PDX-LINT-03")
def test_the_servers_log_lines_print_file_names_escaped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from mcp_pd import DescriptionStore

    (tmp_path / "a\x1b[31m\nINFO forged.json").write_text("[]")
    caplog.set_level("WARNING", logger="mcp_pd")
    store = DescriptionStore(tmp_path)
    (problem,) = store.problems
    assert problem.source == str(tmp_path / "a\x1b[31m\nINFO forged.json")  # kept as it is, for code
    assert "\x1b" not in caplog.text and "\nINFO forged" not in caplog.text
    assert "a\\x1b[31m\\x0aINFO forged.json: not a tool definition" in caplog.text


@pytest.mark.req("PDX-EXAMPLE-01")
def test_an_example_spelled_arguments_is_read_with_a_note(tmp_path: Path) -> None:
    whole = {
        "name": "find",
        "description": "Find notes.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "examples": [{"arguments": {"q": 3}}, {"input": {"q": "milk"}}],
    }
    directory = folder(tmp_path, {"find.json": whole})
    done = lint(directory)
    lines = done.stdout.splitlines()
    assert done.returncode == 1  # the "arguments" example is still judged: 3 is no string
    assert any(line.startswith(f"{directory / 'find.json'}: example 1:") for line in lines), lines
    (note,) = [line for line in lines if ": note: " in line]
    assert note.startswith(f"{directory / 'find.json'}: note: example 1") and '"input"' in note
    assert "1 problem(s), 1 note(s)" in done.stderr


@pytest.mark.anyio
@pytest.mark.req("PDX-FASTMCP-03")
@pytest.mark.parametrize("root_logging", ["", "import logging; logging.basicConfig(level=logging.ERROR)\n"])
async def test_a_fastmcp_servers_definition_warnings_reach_its_author(tmp_path: Path, root_logging: str) -> None:
    """As FastMCP's docs configure logging (`basicConfig(level=ERROR)`), or not at all: the warnings about a file are
    on the server's stderr, with their level and logger, once a client has listed."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    directory = folder(tmp_path, {**OUTSIDE_ENUM, **UNKNOWN})
    server = tmp_path / "server.py"
    server.write_text(root_logging + LITERAL_SERVER)
    params = StdioServerParameters(command=sys.executable, args=[str(server), str(directory)], env=dict(os.environ))
    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            assert "get_note" in {t.name for t in (await client.list_tools()).tools}
    said = log.read_text()
    assert f"WARNING mcp_pd.store: tool definition problem: {directory / 'get_note.json'}: examples[0]" in said, said
    assert f"WARNING mcp_pd.store: {directory / 'get_notes'}.json describes a tool this server does not have" in said


@pytest.mark.slow
@pytest.mark.req("PDX-FASTMCP-03")
def test_the_suites_report_carries_a_fastmcp_servers_warnings(tmp_path: Path) -> None:
    """The suite shows a stdio server's stderr lines at warning level or above; FastMCP's root logger printed ours
    without a level, so a FastMCP author never saw them in the report."""
    directory = folder(tmp_path, {**OUTSIDE_ENUM, **UNKNOWN})
    server = tmp_path / "server.py"
    server.write_text(LITERAL_SERVER)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "check", "--stdio", f"{sys.executable} {server} {directory}"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    report = done.stdout + done.stderr
    assert "the server warned on stderr" in report, report[-3000:]
    assert f"{directory / 'get_note.json'}: examples[0]" in report
    assert f"{directory / 'get_notes'}.json describes a tool this server does not have" in report


@pytest.mark.req("PDX-LINT-01", "PDX-LINT-02")
def test_lint_against_a_server_over_http(tmp_path: Path) -> None:
    from pdtest import http_command

    directory = folder(tmp_path, {"delete_note.json": {"annotations": {"destructiveHint": False}}, **UNKNOWN})
    with http_command([sys.executable, str(FASTMCP_APP), "--http"]) as url:
        done = lint(directory, "--url", url, "--header", "X-Lint: yes")
        wrong = lint(directory, "--url", url.replace("/mcp", "/nothing"))
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 2, lines
    assert any("delete_note.json: annotations claim" in line and "destructiveHint" in line for line in lines), lines
    assert any("get_notes.json: the server has no tool named 'get_notes'" in line for line in lines), lines
    # A wrong URL is a person's mistake: said in one line, no traceback.
    assert wrong.returncode != 0 and "cannot read the server's tools (--url" in wrong.stderr
    assert "Traceback" not in wrong.stderr, wrong.stderr


@pytest.mark.req("PDX-LINT-01")
def test_lint_against_a_catalog_mode_server_says_what_to_do(tmp_path: Path) -> None:
    """Catalog mode lists its meta-tools, not the catalog: judging names against them would call every file wrong."""
    directory = folder(tmp_path, UNKNOWN)
    done = lint(directory, "--stdio", f"{sys.executable} -m mcp_pd serve --mode catalog --lexical")
    assert done.returncode == 1 and done.stdout == ""
    assert "serves catalog mode" in done.stderr and "--mode progressive" in done.stderr
    assert "Traceback" not in done.stderr
