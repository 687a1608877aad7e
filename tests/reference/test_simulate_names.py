"""`serve --simulate` over a folder of several servers' definitions (issue 40.7): a tool name two folders define is
served once, and start-up says which file was left out, why, and the command that serves both under their own
names; that command is then run as printed."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from pdtest_servers import write_definitions

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _tool(name: str, what: str) -> dict[str, object]:
    return {
        "name": name,
        "description": f"{what}. Returns the matching items.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    }


async def _names(argv: list[str], cwd: Path, errlog: Path) -> list[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd), env=env)
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy", cache=None) as client:
            return sorted(t.name for t in (await client.list_tools()).tools)


@pytest.mark.req("PDX-CLI-02")
async def test_a_name_two_folders_define_is_reported_with_the_command_that_serves_both(tmp_path: Path) -> None:
    write_definitions(tmp_path / "alpha", _tool("projects_list", "List alpha's projects"), _tool("alpha_only", "Alpha"))
    write_definitions(tmp_path / "beta", _tool("projects_list", "List beta's projects"), _tool("beta_only", "Beta"))
    errlog = tmp_path / "serve.err"
    served = await _names(
        [sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--descriptions", "."], tmp_path, errlog
    )
    assert served == ["alpha_only", "beta_only", "describe_tools", "projects_list"]
    said = errlog.read_text(encoding="utf-8")
    assert "tool 'projects_list' is defined in alpha/ and beta/" in said, said
    assert "only alpha/projects_list.json is served and beta/projects_list.json not" in said, said
    # The advice is a command that works: run it as printed.
    command = re.search(r"share <folder>__projects_list: (mcp-pd proxy .*)$", said, re.M)
    assert command is not None, said
    both = await _names(shlex.split(command.group(1)), tmp_path, tmp_path / "proxy.err")
    assert {"alpha__projects_list", "beta__projects_list", "alpha_only", "beta_only"} <= set(both), both
