"""A host's `mcpServers` file pasted as is (issue 34): entries the gateway cannot serve are skipped with why and the
rest served; host placeholders and `envFile` filled; a healthy start reads as healthy; task-required tools left out.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import mcp_types as types
import pytest
from gateway.gwtest import Peer, gateway_params, stdio, write_config
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_pd.gateway import ConfigError
from mcp_pd.gateway._config import parse_env_file, read_host_config


def _write(tmp_path: Path, servers: object) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.mark.req("PDX-HOST-01")
def test_entries_the_gateway_cannot_serve_are_skipped_with_why_and_the_rest_kept(tmp_path: Path) -> None:
    servers = {
        "remote-sse": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
        "ws": {"type": "websocket", "url": "ws://127.0.0.1:1"},
        "prompted": {"command": "node", "args": ["x.js"], "env": {"KEY": "${input:api-key}"}},
        "vscode-setting": {"command": "node", "args": ["${config:thing}"]},
        "unset": {"command": "node", "env": {"TOKEN": "${env:HOST_CONFIG_TEST_UNSET}"}},
        "workspace": {"command": "node", "args": ["${workspaceFolder}/x.js"]},
        "no-env-file": {"command": "node", "envFile": "missing.env"},
        "off": {"command": "node", "disabled": True},
        "kept": {"command": "node", "args": ["kept.js"]},
    }
    host = read_host_config(_write(tmp_path, servers), environ={})
    assert [u.name for u in host.upstreams] == ["kept"]
    why = dict(host.skipped)
    assert list(why) == ["remote-sse", "ws", "prompted", "vscode-setting", "unset", "workspace", "no-env-file"]
    assert "SSE transport" in why["remote-sse"] and "Streamable HTTP" in why["remote-sse"]
    assert "'websocket'" in why["ws"]
    assert "${input:api-key}" in why["prompted"] and "cannot ask" in why["prompted"]
    assert "${config:thing}" in why["vscode-setting"]
    assert "HOST_CONFIG_TEST_UNSET is not set" in why["unset"]
    assert "--workspace-folder" in why["workspace"]
    assert "missing.env" in why["no-env-file"] and "cannot read" in why["no-env-file"]
    assert host.notes()[0].startswith("server 'remote-sse' skipped: ")
    # With the folder given, the entry that needed it is served.
    host = read_host_config(_write(tmp_path, servers), environ={}, workspace_folder=tmp_path)
    assert [u.name for u in host.upstreams] == ["workspace", "kept"]
    assert host.upstreams[0].args == (f"{tmp_path}/x.js",)


def test_a_malformed_entry_still_refuses_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("args must be a list of strings")):
        read_host_config(_write(tmp_path, {"x": {"command": "a", "args": "b c"}, "ok": {"command": "b"}}))


@pytest.mark.req("PDX-HOST-01")
def test_placeholders_are_filled_where_the_gateway_can(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text(
        "# the team's file\n"
        "export FROM_FILE=plain value # a comment\n"
        'QUOTED="two\\nlines # kept"\n'
        "LITERAL='${not expanded}'\n"
        "OVERRIDDEN=from file\n"
        "\n"
    )
    servers = {
        "svc": {
            "command": "${userHome}${/}bin${pathSeparator}tool",
            "args": [
                "--token=${env:TOKEN}",
                "--mode=${MODE:-fast}",
                "--who=${USER_NAME}",
                "${workspaceFolderBasename}",
            ],
            "env": {"OVERRIDDEN": "from env", "HOME_DIR": "${userHome}"},
            "envFile": "secrets.env",
            "cwd": "${workspaceFolder}",
        },
        "web": {"url": "https://${env:HOST}/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
    }
    host = read_host_config(
        _write(tmp_path, servers),
        environ={"TOKEN": "t0k", "USER_NAME": "ann", "HOST": "example.com"},
        workspace_folder=tmp_path / "proj",
    )
    assert host.skipped == []
    svc, web = host.upstreams
    home = str(Path.home())
    assert svc.command == f"{home}/bin/tool"
    assert svc.args == ("--token=t0k", "--mode=fast", "--who=ann", "proj")
    assert svc.cwd == str(tmp_path / "proj")
    assert dict(svc.env) == {
        "FROM_FILE": "plain value",
        "QUOTED": "two\nlines # kept",
        "LITERAL": "${not expanded}",
        "OVERRIDDEN": "from env",
        "HOME_DIR": home,
    }
    assert (web.url, dict(web.headers)) == ("https://example.com/mcp", {"Authorization": "Bearer t0k"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("JUST_A_NAME\n", "line 1: expected KEY=VALUE"),
        ("OK=1\n2BAD=x\n", "line 2: expected KEY=VALUE"),
        ('A="never closed\n', "line 1: the value's \" quote is not closed"),
        ("A='x' trailing\n", "line 1: unexpected text after the quoted value"),
    ],
)
def test_an_env_file_is_parsed_strictly(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_env_file(text, "envFile test.env")


@pytest.mark.req("PDX-HOST-01")
def test_a_broken_env_file_skips_its_entry_only(tmp_path: Path) -> None:
    (tmp_path / "bad.env").write_text("A=1\nnot a line\n")
    servers = {"a": {"command": "x", "envFile": "bad.env"}, "b": {"command": "y"}}
    host = read_host_config(_write(tmp_path, servers))
    assert [u.name for u in host.upstreams] == ["b"]
    why = f"envFile {tmp_path / 'bad.env'} line 2: expected KEY=VALUE (KEY: letters, digits, _)"
    assert host.skipped == [("a", why)]


def _cursor_file(tmp_path: Path, npm: dict[str, Path], mark: str) -> Path:
    """What a Cursor user keeps: three npm servers (placeholders in args and env, one reading an envFile), an SSE
    entry, one asking its host for input, and one switched off."""
    (tmp_path / "memory.env").write_text(f"# memory server settings\nMEMORY_FILE_PATH={tmp_path / 'memory.jsonl'}\n")
    servers = {
        "memory": stdio("node", str(npm["memory"]), mark=mark, envFile="memory.env"),
        "filesystem": stdio("node", str(npm["filesystem"]), "${workspaceFolder}", mark=mark),
        "everything": stdio("node", str(npm["everything"]), mark=mark, env={"HC_SECRET": "${env:HC_TEST_SECRET}"}),
        "linear": {"type": "sse", "url": "https://mcp.linear.app/sse"},
        "github": stdio("node", str(npm["everything"]), mark=mark, env={"GITHUB_TOKEN": "${input:github-token}"}),
        "old": {**stdio("node", str(npm["memory"]), mark=mark), "disabled": True},
    }
    return write_config(tmp_path / "mcp.json", servers)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
@pytest.mark.req("PDX-HOST-01", "PDX-HOST-02")
async def test_a_pasted_cursor_file_starts_says_what_it_skipped_and_serves_the_rest(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello")
    config = _cursor_file(tmp_path, npm, mark)
    params = gateway_params("--config", str(config), "--mode", "eager", "--workspace-folder", str(workspace))
    # The upstreams' own stderr too: a healthy start must not read as a failure there either.
    params = params.model_copy(
        update={
            "args": [a for a in params.args if a != "--quiet-upstreams"],
            "env": {**(params.env or {}), "HC_TEST_SECRET": "s3cret-from-the-environment"},
        }
    )
    log = tmp_path / "gateway.log"
    peer = Peer(workspace)  # a host declares roots: the project folder
    with log.open("w") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode="legacy", cache=None, **peer.options()) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"create_entities", "list_allowed_directories", "echo", "get-env"} <= names
            # Everything has a tool that runs only as a task: carried for this 2025-11-25 client (issue 41.5).
            assert "simulate-research-query" in names
            env = _text(await client.call_tool("get-env", {}))
            assert "s3cret-from-the-environment" in env  # ${env:...} filled from the gateway's environment
            folders = _text(await client.call_tool("list_allowed_directories", {}))
            assert str(workspace) in folders  # ${workspaceFolder} filled from the flag
            entity = {"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}
            assert not (await client.call_tool("create_entities", {"entities": [entity]})).is_error
            assert "Ada" in (tmp_path / "memory.jsonl").read_text()  # the envFile's MEMORY_FILE_PATH was used
    said = log.read_text()
    assert "server 'linear' skipped: uses the SSE transport" in said
    assert "server 'github' skipped: uses ${input:github-token}" in said
    assert "'old'" not in said  # switched off by its owner: nothing to say
    assert "simulate-research-query runs only as a task: listed to clients on MCP 2025-11-25" in said
    assert "starting 3 upstream(s): memory, filesystem, everything" in said  # what the wait is for
    assert re.search(r"3 upstream\(s\), 3 running \(ready after ", said) and all(
        re.search(rf"\b{name} \d+\.\d s", said) for name in ("memory", "filesystem", "everything")
    ), said
    lines = said.splitlines()
    assert not [line for line in lines if "Failed" in line or "Connection closed" in line], said
    assert lines[-1] == "mcp-pd proxy: the client disconnected; stopping the upstreams", said


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-HOST-02")
async def test_the_operator_sees_skipped_entries_declined_discovery_and_refused_calls_apart(
    tmp_path: Path, mark: str
) -> None:
    import httpx2
    from gateway.gwtest import PLAIN, http_gateway
    from pdtest_metrics import scrape, value

    servers = {"plain": stdio(sys.executable, str(PLAIN), mark=mark), "legacy": {"type": "sse", "url": "http://x/sse"}}
    config = write_config(tmp_path / "servers.json", servers)
    async with http_gateway(config, tmp_path / "gateway.log") as url:
        # The default client asks server/discover first; declined by design, it falls back to the handshake.
        async with Client(url, cache=None) as client:
            refused = await client.call_tool("echo", {"text": "not described yet"})
            assert refused.is_error
            await client.call_tool("describe_tools", {"tools": ["echo"]})
            assert not (await client.call_tool("echo", {"text": "hi"})).is_error
            assert not (await client.call_tool("echo", {"text": "again"})).is_error
        samples = scrape(url)
        page = httpx2.get(url.removesuffix("/mcp") + "/admin", timeout=10).text
    assert value(samples, "mcp_pd_requests_total", method="server/discover", outcome="declined") == 1
    assert value(samples, "mcp_pd_requests_total", method="server/discover", outcome="error") == 0
    assert "server &#x27;legacy&#x27; skipped: uses the SSE transport" in page  # the operator sees what was skipped
    assert "<th>calls answered</th><th>calls refused</th>" in page
    row = re.search(r"<tr><td><code>echo</code></td><td>[^<]*</td>((?:<td>\d+</td>)+)</tr>", page)
    assert row is not None, page
    assert re.findall(r"\d+", row.group(1)) == ["1", "2", "1", "0"]  # described, answered, refused, failed
