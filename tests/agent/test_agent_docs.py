"""The docs match the agent: the quoted guidance, the task set, and the ledger of the committed run.

agent_demo/ledger.json is the `--json` report of the run the READMEs and the chart show; its ledger
blocks are rendered again here, so a hand edit or a half-updated page fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp_pd_agent import CATALOG_TASKS, TASKS, Ledger, render_svg, system_prompt_guidance, update_markdown

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "agent_demo" / "README.md"
REPORT = ROOT / "agent_demo" / "ledger.json"


def test_readme_quotes_the_guidance_verbatim():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- guidance: .*? -->\n```text\n(.*?)\n```", text, re.DOTALL)
    assert block is not None
    assert block.group(1) == system_prompt_guidance()


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


def test_committed_run_covers_every_task_and_passed():
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    assert [r["task"] for r in report["runs"]] == [t.key for t in TASKS]
    assert [r["task"] for r in report["catalog_runs"]] == [t.key for t in CATALOG_TASKS]
    assert all(r["passed"] for r in report["runs"] + report["catalog_runs"])
    ledgers = _committed_ledgers()
    assert [ledger.tools for ledger in ledgers] == [20, 322]
    assert (README.parent / "ledger.svg").read_text(encoding="utf-8") == render_svg(ledgers)
