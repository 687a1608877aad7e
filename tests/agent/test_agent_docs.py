"""agent_demo/README.md quotes the spec-8 guidance the agent actually sends, and lists the real task set."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_pd_agent import TASKS, system_prompt_guidance

README = Path(__file__).resolve().parents[2] / "agent_demo" / "README.md"


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
