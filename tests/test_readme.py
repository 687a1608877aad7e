"""The README's setup commands and its "add it to your server" example, run for real."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from pdtest_docs import HOW, documented

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
pytestmark = pytest.mark.anyio


def test_readme_opens_with_the_two_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["./dev serve", "./dev test"]
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("exec ./dev test")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_readme_example_serves_progressive_disclosure(tmp_path: Path, mode: str) -> None:
    match = re.search(r"<!-- readme-example.*?-->\n```python\n(.*?)```", README, re.S)
    assert match is not None
    script = tmp_path / "weather.py"
    script.write_text(match.group(1))
    params = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(tmp_path))
    async with Client(params, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        describe, tool = (await client.list_tools()).tools
        assert describe.name == "describe_tools"
        assert tool.name == "forecast"
        assert tool.description == "Forecast the weather for a city."
        refused = await client.call_tool("forecast", {"city": "Oslo"})
        assert refused.structured_content is not None
        assert refused.structured_content["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        await client.read_resource("resource:///tool_descriptions?tools=forecast")
        result = await client.call_tool("forecast", {"city": "Oslo", "days": 2})
        assert not result.is_error
        assert result.structured_content == {"result": "Oslo day 1: sunny\nOslo day 2: sunny"}


def test_every_documented_command_has_a_way_to_run() -> None:
    # Both ways: a command the docs show is run by tests/test_doc_commands.py, and the table names no command the
    # docs dropped. A command left to the reader says why.
    shown = documented()
    assert sorted(set(shown) - set(HOW)) == [], "commands in the docs that no test runs (add them to HOW)"
    assert sorted(set(HOW) - set(shown)) == [], "commands in HOW that the docs no longer show"
    assert all(reason for kind, reason in HOW.values() if kind in ("hand", "refused"))
