"""Issue 33, kinds 1, 2, 4 and 5: documents checked whole.

Every definition read is judged (not only the read-only tools'), each entry must be its key's definition, 6.1's
wrapper and 6.3's wording are required, unknown names keep to their own keys, and a listed description may neither
instruct the caller nor be the tool's bare name. Each `doc-*` control of pdconf_controls.py is `good` with one of
these mistakes; `mcp-pd check` must fail it on exactly that check (WARN it, for a SHOULD) over stdio and over HTTP,
while `good` and the reference server still pass with no warning.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp_pd_conformance import Options, Report, Status, Target, render
from mcp_pd_conformance._text import only_the_name, usage_instruction
from pdtest import CATALOGS, http_command
from pdtest_suite import keys, run_options
from pdtest_zygote import forked_argv

CONTROLS = Path(__file__).resolve().parent / "pdconf_controls.py"
# Each defect is in a document: one discovery session shows it; the calling scenarios only add processes.
CALLING = ("authorization", "grants", "isolation", "session-end", "sessionless")


@dataclass(frozen=True)
class Defect:
    """The one check a control breaks, how it shows, and what else it may leave (a 6.3 warning, a skip)."""

    check: str
    status: Status
    shows: str  # a fragment of the check's message naming the mistake
    warns: frozenset[str] = frozenset()
    skips: frozenset[str] = frozenset()


F, W = Status.FAILURE, Status.WARNING
DEFECTS = {
    # Kind 1: the tool with side effects is listed last; only the first two were ever judged.
    "doc-placeholder-side-effect": Defect("resource-read/full-entry", F, "wipe_notes: its examples pass ['confirm']"),
    "doc-side-effect-no-examples": Defect("resource-read/examples", W, "1 of 4 definitions: wipe_notes"),
    # Kind 2.
    "doc-paired-by-position": Defect(
        "resource-read/entries-match-keys", F, "the entry under word_count is the definition of 'list_notes'"
    ),
    # Kind 4.
    "doc-bare-missing": Defect("missing-selection/error-document", F, 'not wrapped in {"error": {...}}'),
    "doc-unknown-wording": Defect("resource-read/unknown-tool-entry", W, "No tool named 'pd_conformance_no_such_tool'"),
    "doc-grouped-unknown": Defect(
        "resource-read/requested-keys-only",
        F,
        "unrequested top-level keys ['not_found']",
        warns=frozenset({"resource-read/unknown-tool-entry"}),  # 6.3: no entry under the unknown name
        skips=frozenset({"resource-read/available-tools-visible"}),  # no available_tools to judge
    ),
    # Kind 5.
    "doc-name-description": Defect("tools-list/description-not-name", F, "list_notes: 'list_notes'"),
    "doc-usage-listing": Defect("tools-list/no-usage-instructions", F, "word_count: 'Always pass the whole text"),
}
NEW_CHECKS = (
    "tools-list/description-not-name",
    "tools-list/no-usage-instructions",
    "resource-read/entries-match-keys",
    "resource-read/requested-keys-only",
)
SHARPENED = (
    "resource-read/full-entry",
    "resource-read/examples",
    "resource-read/complete-schema",
    "missing-selection/error-document",
    "resource-read/unknown-tool-entry",
)


def _options(target: Target) -> Options:
    return Options(target, eras=("legacy",), skip=CALLING)


@pytest.fixture(scope="module")
def doc_reports() -> dict[str, Report]:
    """Every doc-* control and `good`, over stdio and over HTTP (one process serving each at /DEFECT/mcp)."""
    names = ["good", *DEFECTS]
    options = {f"stdio {d}": _options(Target(stdio=forked_argv(CONTROLS, d))) for d in names}
    with http_command(forked_argv(CONTROLS, *names, "--http")) as url:
        base = url.removesuffix("/mcp")
        options |= {f"http {d}": _options(Target(url=f"{base}/{d}/mcp")) for d in names}
        return run_options(options)


@pytest.mark.req("PD-3.1-02", "PD-3.1-04", "PD-3.2-02", "PD-3.2-03", "PD-4.4-01", "PD-4.4-03", "PD-6.1-01", "PD-6.3-01")
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_document_defect_fails_exactly_its_check(
    defect: str, transport: str, doc_reports: dict[str, Report]
) -> None:
    report, good, expect = doc_reports[f"{transport} {defect}"], doc_reports[f"{transport} good"], DEFECTS[defect]
    text = render(report)
    result = next(r for r in report.results if r.id == expect.check)
    assert result.status is expect.status and expect.shows in result.message, text
    assert result.expected and result.spec.hint, text  # what to send instead, and the fix line
    failed = {result.key} if expect.status is F else set()  # the key: an error document is judged per era
    warned = ({result.key} if expect.status is W else set()) | expect.warns
    assert keys(report, F) == failed, text
    assert keys(report, W) == warned, text
    assert keys(report, Status.SKIPPED) <= keys(good, Status.SKIPPED) | expect.skips, text
    assert report.exit_code == (1 if failed else 0), text


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_good_passes_the_new_checks_with_every_definition_judged(
    transport: str, doc_reports: dict[str, Report]
) -> None:
    report = doc_reports[f"{transport} good"]
    assert not keys(report, F) | keys(report, W), render(report)
    status = {r.id: r for r in report.results}
    assert all(status[c].status is Status.SUCCESS for c in (*NEW_CHECKS, *SHARPENED)), render(report)
    # Every listed tool's definition, wipe_notes (destructive) included, not only the two read first.
    assert status["resource-read/full-entry"].message.startswith("4 definitions ("), render(report)
    assert "wipe_notes" in status["resource-read/full-entry"].message, render(report)


def test_reference_server_passes_the_new_checks_without_warnings(
    reference_reports: dict[str, Report], http_reports: dict[str, Report]
) -> None:
    """The project's own server, over stdio and HTTP in both eras: every new or sharpened check passes, and the run
    has no warning at all; every listed tool's definition is judged."""
    for report in (reference_reports["reference"], http_reports["reference"]):
        assert not keys(report, F) | keys(report, W), render(report)
        status = {r.id: r for r in report.results}
        assert all(status[c].status is Status.SUCCESS for c in (*NEW_CHECKS, *SHARPENED)), render(report)
        # Every tool it gates: those tools/list lists, but for its own describe_tools (never gated nor judged).
        listed = int(status["tools-list/listed"].message.split()[0])
        assert "describe_tools (advertised as describeTool)" in status["tools-list/extension-tools"].message
        judged = status["resource-read/full-entry"].message
        assert judged.startswith(f"{listed - 1} definitions ("), (listed, judged)
        assert "listed tools" not in judged, judged  # no cap reached: all of them


def test_a_large_catalog_is_judged_within_a_bound() -> None:
    """117 real tools (GitHub's catalog served by the reference server): the first 50 definitions are judged, and
    none of the real listed descriptions is taken for usage instructions or a bare name."""
    argv = (sys.executable, "-m", "mcp_pd", "serve", "--no-watch", "--simulate", "--descriptions")
    target = Target(stdio=(*argv, str(CATALOGS / "github-mcp-server")))
    report = run_options({"github": Options(target, eras=("legacy",), only=("tools-list", "resource-read"))})["github"]
    status = {r.id: r for r in report.results}
    judged = status["resource-read/full-entry"]
    assert judged.status is Status.SUCCESS and "50 definitions (" in judged.message, render(report)
    assert "the first of 117 listed tools" in judged.message, render(report)
    for check in NEW_CHECKS:
        assert status[check].status is Status.SUCCESS, render(report)


def _catalog_tools() -> list[dict[str, Any]]:
    tools = []
    for path in sorted(CATALOGS.glob("*/*.json")):
        tool = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            tools.append(tool)
    return tools


def test_real_minimal_descriptions_are_neither_instructions_nor_bare_names() -> None:
    """The 322 real tools of ../shared/catalogs: the first sentence each would be listed with (what `mcp-pd serve`
    lists) is never taken for usage instructions (3.1 MUST NOT) or for the bare name (3.1 MUST)."""
    from mcp_pd._model import first_sentence

    tools = _catalog_tools()
    assert len(tools) >= 300
    listed = {t["name"]: first_sentence(str(t.get("description") or "")) for t in tools}
    assert {n: d for n, d in listed.items() if usage_instruction(d)} == {}
    assert [n for n, d in listed.items() if only_the_name(d, n)] == []
    # Their full descriptions do carry instructions, and what is found there is one.
    found = {t["name"]: usage_instruction(str(t.get("description") or "")) for t in tools}
    assert found["read_text_file"] == (
        "Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the "
        "last N lines of a file."
    )
    assert found["get_sift_investigation"] is not None and "UUID format" in found["get_sift_investigation"]


@pytest.mark.parametrize(
    ("text", "instruction"),
    [
        (
            "Count the words in a text. Always pass the whole text in one call.",
            "Always pass the whole text in one call.",
        ),
        ("Add two integers. Both a and b must be integers.", "Both a and b must be integers."),
        ("Search issues. Dates must be in ISO 8601 format.", "Dates must be in ISO 8601 format."),
        ("List notes. Call list_projects first.", "Call list_projects first."),
        ("Read a file. Use the head parameter for the first lines.", "Use the head parameter for the first lines."),
        ("Delete a repository; you must confirm the owner.", "you must confirm the owner."),
        ("Note: do not pass more than 50 ids.", "Note: do not pass more than 50 ids."),
        # What the tool does, and when to use it: the use cases 3.1 asks for.
        ("Add two integers and return their sum. Use it for exact integer arithmetic.", None),
        ("DISCOVERY: Call this first to find available metrics before querying.", None),
        ("Resize a page. Always returns the new size.", None),
        ("Set issue field values for an issue.", None),
        (f"Read {'resource:///tool_descriptions'}?tools=add before using this tool.", None),
    ],
)
def test_usage_instructions_are_told_from_use_cases(text: str, instruction: str | None) -> None:
    assert usage_instruction(text) == instruction


@pytest.mark.parametrize(
    ("text", "name", "bare"),
    [
        ("word_count", "word_count", True),
        ("Word_Count.", "word_count", True),
        ("The `add` tool.", "add", True),
        ("add", "add", True),
        ("Word count", "word_count", False),  # the name spelled as words: description-purpose's SHOULD
        ("List starred repositories", "list_starred_repositories", False),
        ("Count the words in a text.", "word_count", False),
    ],
)
def test_a_bare_name_is_the_name_as_written(text: str, name: str, bare: bool) -> None:
    assert only_the_name(text, name) is bare
