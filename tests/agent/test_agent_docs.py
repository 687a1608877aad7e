"""The docs match the agent: the quoted guidance, the task set, and the ledger of the committed run.

agent_demo/ledger.json is the `--json` report of the run the READMEs and the chart show; its ledger
blocks are rendered again here, so a hand edit or a half-updated page fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp_pd_agent import (
    CATALOG_TASKS,
    HOSTS,
    TASKS,
    Ledger,
    render_markdown,
    render_svg,
    system_prompt_guidance,
    update_markdown,
)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "agent_demo" / "README.md"
REPORT = ROOT / "agent_demo" / "ledger.json"


def test_readme_quotes_the_guidance_verbatim():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- guidance: .*? -->\n```text\n(.*?)\n```", text, re.DOTALL)
    assert block is not None
    assert block.group(1) == system_prompt_guidance()
    tools_only = re.search(r"<!-- guidance \(tools-only\): .*? -->\n```text\n(.*?)\n```", text, re.DOTALL)
    assert tools_only is not None
    assert tools_only.group(1) == system_prompt_guidance(host="tools-only", read_function="describe_tools")
    catalog = re.search(r"<!-- guidance \(catalog\): .*? -->\n```text\n(.*?)\n```", text, re.DOTALL)
    assert catalog is not None
    assert catalog.group(1) == system_prompt_guidance(read_function="describe_tools", mode="catalog")


def test_readme_lists_every_task():
    text = README.read_text(encoding="utf-8")
    for number, task in enumerate(TASKS, 1):
        assert f"| {number} | `{task.key}` | {task.prompt.replace('`', chr(92) + '`')} |" in text


def test_readme_shows_the_chart():
    assert "![Per-task context, eager vs progressive](ledger.svg)" in README.read_text(encoding="utf-8")
    assert (README.parent / "ledger.svg").read_text(encoding="utf-8").startswith("<svg ")


def _committed_ledgers() -> list[Ledger]:
    return [Ledger.from_json(data) for data in json.loads(REPORT.read_text(encoding="utf-8"))["ledgers"]]


@pytest.mark.parametrize("page", [README, ROOT / "README.md"], ids=["agent_demo/README.md", "README.md"])
def test_ledger_blocks_match_the_committed_run(page: Path):
    text = page.read_text(encoding="utf-8")
    assert "<!-- BEGIN GENERATED: ledger" in text
    assert update_markdown(text, _committed_ledgers()) == text, f"regenerate {page.name} (see agent_demo/README.md)"


# The committed run's columns: each progressive host, then catalog mode (run as a tools-only host).
SETUPS = [(host, "progressive") for host in HOSTS] + [("tools-only", "catalog")]
COLUMNS = [*HOSTS, "catalog"]


def test_committed_run_covers_every_task_in_both_hosts_and_catalog_mode_and_passed():
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    assert report["hosts"] == list(HOSTS) and report["modes"] == ["progressive", "catalog"]
    for runs, tasks in ((report["runs"], TASKS), (report["catalog_runs"], CATALOG_TASKS)):
        assert [(r["task"], r["host"], r["mode"]) for r in runs] == [(t.key, *s) for s in SETUPS for t in tasks]
    assert all(r["passed"] for r in report["runs"] + report["catalog_runs"])
    ledgers = _committed_ledgers()
    assert [ledger.tools for ledger in ledgers] == [20, 322]
    for ledger, tasks in zip(ledgers, (TASKS, CATALOG_TASKS), strict=True):
        # same tasks, same success in each column, and a column per host and for catalog mode in the tables
        assert ledger.hosts == COLUMNS and ledger.passed == {c: len(tasks) for c in COLUMNS}
        assert [row.key for row in ledger.rows] == [t.key for t in tasks]
        assert all(set(row.hosts) == set(COLUMNS) for row in ledger.rows)
        assert all(f" {column} o200k | saved |" in render_markdown(ledger) for column in COLUMNS)
        # catalog mode fetched what the hosts fetched: the same tools found by searching instead of listing
        assert all(row.hosts["catalog"].fetched == row.hosts["tools-only"].fetched for row in ledger.rows)
    assert (README.parent / "ledger.svg").read_text(encoding="utf-8") == render_svg(ledgers)


def test_committed_run_meets_the_catalog_mode_token_goal():
    """Issue 14: on the 322 tools a typical task (list, instructions, searches, describes) is at most 5% of eager."""
    catalog = _committed_ledgers()[1]
    for row in catalog.rows:
        assert row.cost("catalog")["o200k_base"] <= 0.05 * row.eager["o200k_base"], row.key
        assert row.hosts["catalog"].parts["search results"]["o200k_base"] > 0
