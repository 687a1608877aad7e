"""A host's `mcpServers` file pasted as is (issue 34): entries the gateway cannot serve are skipped with why and the
rest served; host placeholders and `envFile` filled; a healthy start reads as healthy; task-required tools left out.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mcp_types as types
import pytest
from gateway.gwtest import MARK, Peer, connect, describe, gateway_params, stdio, write_config
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


@pytest.mark.req("PDX-CONFIG-02")
def test_a_malformed_entry_is_skipped_as_a_mistake_and_the_rest_served(tmp_path: Path) -> None:
    host = read_host_config(_write(tmp_path, {"x": {"command": "a", "args": "b c"}, "ok": {"command": "b"}}))
    assert [u.name for u in host.upstreams] == ["ok"]
    assert host.skipped == [
        ("x", "x.args must be a list of strings (a mistake in the entry: fix it to serve this server)")
    ]


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


# -- issue 41: every host's file as the host writes it, served by a real gateway -----------------------------------
MEMORY_TOOLS = {"create_entities", "read_graph", "search_nodes", "open_nodes", "delete_entities", "add_observations"}


@pytest.fixture(scope="module")
def remote(npm: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The npm `everything` server over Streamable HTTP on a free loopback port: the remote upstream."""
    import os
    import subprocess

    from pdtest import _wait_for_port, free_port, stop_process

    port = free_port()
    log = tmp_path_factory.mktemp("remote") / "everything.log"
    with log.open("wb") as err:
        env = {**os.environ, "PORT": str(port)}
        proc = subprocess.Popen(["node", str(npm["everything"]), "streamableHttp"], stdout=err, stderr=err, env=env)
        try:
            _wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_process(proc)


@dataclass(frozen=True)
class Pasted:
    """A host's file as that host writes it, and what the gateway must make of it."""

    name: str  # the file's name where the host keeps it
    text: str
    host: str  # how the gateway says it read it
    served: tuple[str, ...]
    skipped: dict[str, str]  # entry -> a piece of the one line that says why
    left_out: frozenset[str] = frozenset()  # memory's tools the file filters out


def _host_files(npm: dict[str, Path], mark: str, remote: str, memory: Path, folder: Path) -> dict[str, Pasted]:
    mem, fs = json.dumps(str(npm["memory"])), json.dumps(str(npm["filesystem"]))
    env = f'"{MARK}": "{mark}", "MEMORY_FILE_PATH": {json.dumps(str(memory))}'
    folder_ = json.dumps(str(folder))
    return {
        "claude-desktop": Pasted(
            "claude_desktop_config.json",
            f"""{{
  "mcpServers": {{
    "memory": {{"command": "node", "args": [{mem}], "env": {{{env}}}}},
    "filesystem": {{"command": "node", "args": [{fs}, {folder_}], "env": {{"{MARK}": "{mark}"}}}}
  }}
}}""",
            "Claude Desktop / Claude Code / Cursor (mcpServers)",
            ("memory", "filesystem"),
            {},
        ),
        "claude-code": Pasted(
            ".mcp.json",
            f"""{{
  "mcpServers": {{
    "memory": {{"type": "stdio", "command": "node", "args": [{mem}], "env": {{{env}}}}},
    "filesystem": {{"type": "stdio", "command": "node", "args": [{fs}, "${{PROJECT_DIR:-/nowhere}}"],
                   "env": {{"{MARK}": "{mark}"}}}},
    "api": {{"type": "http", "url": "{remote}", "headers": {{"Authorization": "Bearer ${{API_TOKEN}}"}}}},
    "events": {{"type": "sse", "url": "http://127.0.0.1:1/sse"}}
  }}
}}""",
            "Claude Desktop / Claude Code / Cursor (mcpServers)",
            ("memory", "filesystem", "api"),
            {"events": "uses the SSE transport"},
        ),
        "cursor": Pasted(
            "mcp.json",
            f"""{{
  "mcpServers": {{
    "memory": {{"command": "node", "args": [{mem}], "env": {{{env}}}}},
    "filesystem": {{"command": "node", "args": [{fs}, "${{workspaceFolder}}"], "env": {{"{MARK}": "{mark}"}}}},
    "remote": {{"url": "{remote}", "headers": {{"Authorization": "Bearer ${{env:API_TOKEN}}"}}}}
  }}
}}""",
            "Claude Desktop / Claude Code / Cursor (mcpServers)",
            ("memory", "filesystem", "remote"),
            {},
        ),
        "vscode": Pasted(
            "mcp.json",
            f"""{{
  // Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {{"type": "promptString", "id": "github-token", "description": "GitHub Personal Access Token", "password": true}},
  ],
  "servers": {{
    "memory": {{"type": "stdio", "command": "node", "args": [{mem}], "env": {{{env}}},}},
    "filesystem": {{
      "type": "stdio",
      "command": "node",
      "args": [{fs}, "${{workspaceFolder}}"], // the project
      "env": {{"{MARK}": "{mark}"}},
    }},
    /* the team's remote server */
    "remote": {{"type": "http", "url": "{remote}"}},
    "github": {{"type": "stdio", "command": "node", "args": [{mem}],
               "env": {{"GITHUB_TOKEN": "${{input:github-token}}"}}}},
  }},
}}""",
            "VS Code (servers)",
            ("memory", "filesystem", "remote"),
            {"github": '${input:github-token} ("GitHub Personal Access Token")'},
        ),
        "windsurf": Pasted(
            "mcp_config.json",
            f"""{{
  "mcpServers": {{
    "memory": {{"command": "node", "args": [{mem}], "env": {{{env}}},
               "disabled": false, "disabledTools": ["delete_entities", "add_observations"]}},
    "filesystem": {{"command": "node", "args": [{fs}, {folder_}], "env": {{"{MARK}": "{mark}"}}}},
    "remote": {{"serverUrl": "{remote}", "headers": {{"Authorization": "Bearer ${{env:API_TOKEN}}"}}}}
  }}
}}""",
            "Windsurf (mcpServers)",
            ("memory", "filesystem", "remote"),
            {},
            frozenset({"delete_entities", "add_observations"}),
        ),
        "gemini": Pasted(
            "settings.json",
            f"""{{
  "theme": "GitHub",
  "mcp": {{"excluded": ["experimental"]}},
  "mcpServers": {{
    // keep the model away from anything that deletes
    "memory": {{"command": "node", "args": [{mem}], "env": {{{env}, "TOKEN": "$API_TOKEN"}},
               "timeout": 30000, "trust": false,
               "includeTools": ["create_entities", "read_graph", "search_nodes", "open_nodes", "delete_entities"],
               "excludeTools": ["delete_entities"]}},
    "filesystem": {{"command": "node", "args": [{fs}, "$PROJECT_DIR"], "env": {{"{MARK}": "{mark}"}}}},
    "remote": {{"httpUrl": "{remote}", "headers": {{"Authorization": "Bearer ${{API_TOKEN}}"}}, "timeout": 5000}},
    "legacy": {{"url": "http://127.0.0.1:1/sse"}},
    "experimental": {{"command": "node", "args": [{mem}]}}
  }}
}}""",
            "Gemini CLI (mcpServers)",
            ("memory", "filesystem", "remote"),
            {"legacy": "Gemini CLI reads as an SSE endpoint", "experimental": "excluded by the file's mcp.excluded"},
            frozenset(MEMORY_TOOLS - {"create_entities", "read_graph", "search_nodes", "open_nodes"}),
        ),
        "cline": Pasted(
            "cline_mcp_settings.json",
            f"""{{
  "mcpServers": {{
    "memory": {{"command": "node", "args": [{mem}], "env": {{{env}}}, "disabled": false, "autoApprove": []}},
    "filesystem": {{"type": "stdio", "command": "node", "args": [{fs}, {folder_}], "env": {{"{MARK}": "{mark}"}},
                   "timeout": 60}},
    "remote": {{"type": "streamableHttp", "url": "{remote}", "disabled": false, "autoApprove": []}},
    "old": {{"transportType": "sse", "url": "http://127.0.0.1:1/sse", "disabled": false, "autoApprove": []}}
  }}
}}""",
            "Cline (mcpServers)",
            ("memory", "filesystem", "remote"),
            {"old": "uses the SSE transport"},
        ),
        "zed": Pasted(
            "settings.json",
            f"""// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{{
  "ui_font_size": 16,
  "buffer_font_size": 15,
  "context_servers": {{
    "memory": {{"source": "custom", "command": "node", "args": [{mem}], "env": {{{env}}}, "enabled": true}},
    "filesystem": {{
      "command": {{"path": "node", "args": [{fs}, {folder_}], "env": {{"{MARK}": "{mark}"}}}},
      "settings": {{}},
    }},
    "remote": {{"url": "{remote}", "headers": {{}}}},
    "mcp-server-github": {{"source": "extension", "settings": {{"github_personal_access_token": "x"}}}},
  }},
}}""",
            "Zed (context_servers)",
            ("memory", "filesystem", "remote"),
            {"mcp-server-github": "Zed extension"},
        ),
        "codex": Pasted(
            "config.toml",
            f"""model = "o4-mini"

[mcp_servers.memory]
command = "node"
args = [{mem}]
env_vars = ["{MARK}"]
disabled_tools = ["delete_entities"]

[mcp_servers.memory.env]
MEMORY_FILE_PATH = {json.dumps(str(memory))}

[mcp_servers.filesystem]
command = "node"
args = [{fs}, {folder_}]
env = {{ "{MARK}" = "{mark}" }}

[mcp_servers.remote]
url = "{remote}"
bearer_token_env_var = "API_TOKEN"
startup_timeout_sec = 20
tool_timeout_sec = 45

[mcp_servers.figma]
url = "http://127.0.0.1:1/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"

[mcp_servers.paused]
command = "node"
args = [{mem}]
enabled = false
""",
            "Codex CLI (mcp_servers)",
            ("memory", "filesystem", "remote"),
            {"figma": "FIGMA_OAUTH_TOKEN (bearer_token_env_var), which is not set"},
            frozenset({"delete_entities"}),
        ),
    }


HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "gemini", "cline", "zed", "codex")


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize("which", HOSTS)
@pytest.mark.req("PDX-HOST-03", "PDX-FILTER-01")
async def test_each_hosts_file_as_pasted_is_served_or_skipped_with_why(
    tmp_path: Path, npm: dict[str, Path], mark: str, remote: str, which: str
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    memory = tmp_path / "memory.jsonl"
    pasted = _host_files(npm, mark, remote, memory, folder)[which]
    config = tmp_path / pasted.name
    config.write_text(pasted.text)
    params = gateway_params("--config", str(config), "--mode", "eager", "--workspace-folder", str(folder))
    environment = {MARK: mark, "API_TOKEN": "t0k-remote", "PROJECT_DIR": str(folder)}
    params = params.model_copy(update={"env": {**(params.env or {}), **environment}})
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert MEMORY_TOOLS - pasted.left_out <= names, names
            assert not pasted.left_out & names, f"listed though the file excludes them: {pasted.left_out & names}"
            assert "list_allowed_directories" in names
            assert str(folder) in _text(await client.call_tool("list_allowed_directories", {}))
            entity = {"name": "Ada", "entityType": "person", "observations": ["pasted"]}
            assert not (await client.call_tool("create_entities", {"entities": [entity]})).is_error
            assert "Ada" in memory.read_text()
            if "remote" in pasted.served or "api" in pasted.served:
                echoed = await client.call_tool("echo", {"message": f"through {which}"})
                assert f"through {which}" in _text(echoed)
            for tool in pasted.left_out:  # not callable either: refused, and the upstream never asked
                refused = await client.call_tool(tool, {"entityNames": ["Ada"], "observations": []})
                assert refused.is_error and "TOOL_NOT_FOUND" in _text(refused)
            assert "Ada" in memory.read_text()
    said = log.read_text()
    assert f"read as {pasted.host}, " in said, said
    for name, why in pasted.skipped.items():
        line = next((x for x in said.splitlines() if f"server '{name}' skipped: " in x), None)
        assert line is not None and why in line, said
    started = re.search(r"starting \d+ upstream\(s\): (.+)", said)
    assert started is not None and tuple(started.group(1).split(", ")) == pasted.served, said
    if pasted.left_out:
        assert re.search(r"upstream 'memory': \d+ of its \d+ tool\(s\) left out by its config: ", said), said
        assert "server 'memory': serving " in said
    assert not [x for x in said.splitlines() if "Traceback" in x or "Failed" in x], said


def _gemini_filtered(npm: dict[str, Path], mark: str, memory: Path, tmp_path: Path) -> Path:
    """Gemini CLI's settings.json keeping the model to four of memory's tools (and never `delete_entities`)."""
    memory.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": []}) + "\n")
    env = {MARK: mark, "MEMORY_FILE_PATH": str(memory)}
    entry = {
        "command": "node",
        "args": [str(npm["memory"])],
        "env": env,
        "includeTools": ["read_graph", "search_nodes", "open_nodes", "create_entities", "delete_entities"],
        "excludeTools": ["delete_entities"],
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"theme": "GitHub", "mcpServers": {"memory": entry}}, indent=2))
    return path


EXCLUDED = ("delete_entities", "add_observations", "delete_observations", "delete_relations", "create_relations")


async def _refused(client: Client, name: str, arguments: dict[str, object]) -> dict[str, object]:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result
    document = result.structured_content or json.loads(_text(result))
    error = document["error"]
    assert isinstance(error, dict)
    return error


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-FILTER-01", "PDX-FILTER-02")
async def test_an_excluded_tool_is_not_listed_described_called_or_suggested(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    memory = tmp_path / "memory.jsonl"
    config = _gemini_filtered(npm, mark, memory, tmp_path)
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        transport = stdio_client(gateway_params("--config", str(config)), errlog=errlog)
        async with Client(transport, mode="legacy", cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"describe_tools", "read_graph", "search_nodes", "open_nodes", "create_entities"}
            for name in EXCLUDED:
                # Not describable through the tool, nor through the resource ...
                described = await client.call_tool("describe_tools", {"tools": [name]})
                assert "inputSchema" not in _text(described), _text(described)
                read = await client.read_resource(f"resource:///tool_descriptions?tools={name}")
                body = read.contents[0].text  # type: ignore[union-attr]
                assert name in body and "inputSchema" not in body, body  # an error entry, granting nothing
                # ... nor callable (the upstream is never asked: Ada keeps existing), nor suggested for a near miss.
                error = await _refused(client, name, {"entityNames": ["Ada"]})
                assert error["code"] == "TOOL_NOT_FOUND", error
                assert name not in error.get("available_tools", []), error
                near = await _refused(client, name[:-1], {"entityNames": ["Ada"]})
                assert near["code"] == "TOOL_NOT_FOUND" and name not in json.dumps(near), near
            await describe(client, "read_graph")
            assert "Ada" in _text(await client.call_tool("read_graph", {}))
    assert "Ada" in memory.read_text()
    said = log.read_text()
    assert (
        "server 'memory': serving only create_entities, delete_entities, open_nodes, read_graph, search_nodes "
        "(includeTools); never delete_entities (excludeTools)" in said
    ), said
    assert "upstream 'memory': 5 of its 9 tool(s) left out by its config: " in said, said


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-FILTER-01", "PDX-FILTER-02")
async def test_catalog_search_and_browse_never_find_an_excluded_tool(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    memory = tmp_path / "memory.jsonl"
    config = _gemini_filtered(npm, mark, memory, tmp_path)
    async with connect(gateway_params("--config", str(config), "--mode", "catalog")) as client:
        browsed = json.loads(_text(await client.call_tool("browse_tools", {"category": "memory"})))
        assert {t["name"] for t in browsed["tools"]} == {"read_graph", "search_nodes", "open_nodes", "create_entities"}
        for query in ("delete entities from the knowledge graph", "add observations to an entity", "delete_entities"):
            found = json.loads(_text(await client.call_tool("search_tools", {"query": query})))
            assert not {r["name"] for r in found["results"]} & set(EXCLUDED), found
        error = await _refused(client, "call_tool", {"name": "delete_entities", "arguments": {"entityNames": ["Ada"]}})
        assert error["code"] == "TOOL_NOT_FOUND" and "delete_entities" not in error.get("available_tools", [])
        described = await client.call_tool("describe_tools", {"tools": ["delete_entities"]})
        assert "inputSchema" not in _text(described)
    assert "Ada" in memory.read_text()
