"""Every host's config file read as that host writes it (issue 41.1): which host wrote it, each entry served or
skipped with why, the host's own placeholders and tool filters (`_hosts.py`, `_filters.py`). Files only: the
gateway serving these files to a real client is `test_host_config.py`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_pd.gateway import ConfigError, load_config
from mcp_pd.gateway._config import read_host_config
from mcp_pd.gateway._hosts import strip_jsonc


def _read(tmp_path: Path, text: str, name: str = "settings.json", **options: object) -> object:
    path = tmp_path / name
    path.write_text(text)
    return read_host_config(path, **options)  # type: ignore[arg-type]


@pytest.mark.req("PDX-HOST-03")
def test_vscode_jsonc_with_comments_trailing_commas_and_inputs(tmp_path: Path) -> None:
    text = """{
      // .vscode/mcp.json, as VS Code writes it
      "inputs": [
        {"type": "promptString", "id": "gh-token", "description": "GitHub Personal Access Token", "password": true},
        {"type": "promptString", "id": "region", "description": "Region", "default": "eu-west-1"},
      ],
      "servers": {
        "fs": {"type": "stdio", "command": "node", "args": ["fs.js", "${workspaceFolder}", "// kept"],},
        /* a remote one */
        "web": {"type": "http", "url": "https://example.com/mcp?region=${input:region}", "headers": {},},
        "github": {"type": "stdio", "command": "node", "env": {"TOKEN": "${input:gh-token}"}},
      },
    }"""
    host = _read(tmp_path, text, "mcp.json", workspace_folder=tmp_path, environ={})
    assert host.host == "VS Code (servers)"
    fs, web = host.upstreams
    assert fs.args == ("fs.js", str(tmp_path), "// kept")  # a comment marker inside a string is text
    assert web.url == "https://example.com/mcp?region=eu-west-1"  # an input's default is what VS Code pre-fills
    ((name, why),) = host.skipped
    assert name == "github" and '${input:gh-token} ("GitHub Personal Access Token")' in why and "cannot ask" in why


def test_a_jsonc_syntax_error_is_reported_where_the_author_sees_it(tmp_path: Path) -> None:
    text = '{\n  // one comment\n  "servers": {\n    "a": {"command": "x" "args": []}\n  }\n}\n'
    with pytest.raises(ConfigError, match=re.escape("invalid JSON (comments and trailing commas allowed)")) as caught:
        _read(tmp_path, text)
    assert "line 4 column 26" in str(caught.value)
    text = '{"a": "/* no */", /* yes */ "b": [1,],}'
    assert strip_jsonc(text) == '{"a": "/* no */", ' + " " * len("/* yes */") + ' "b": [1 ] }'


@pytest.mark.req("PDX-HOST-03", "PDX-FILTER-01")
def test_gemini_settings(tmp_path: Path) -> None:
    text = """{
      "theme": "GitHub",
      "mcp": {"excluded": ["experimental"]},
      "mcpServers": {
        "py": {"command": "python", "args": ["-m", "srv", "$HOME_DIR/x"], "env": {"A": "$TOKEN", "B": "${TOKEN}-2"},
               "cwd": "./srv", "timeout": 30000, "trust": false,
               "includeTools": ["read", "write", "drop"], "excludeTools": ["drop"]},
        "remote": {"httpUrl": "https://example.com/mcp", "headers": {"Authorization": "Bearer $TOKEN"}},
        "legacy": {"url": "https://example.com/sse"},
        "experimental": {"command": "x"},
        "unset": {"command": "x", "env": {"K": "$NOT_SET_ANYWHERE"}},
        "long": {"command": "x", "description": "%s"}
      }
    }""" % ("a server that does many things " * 4)
    host = _read(tmp_path, text, environ={"TOKEN": "t0k", "HOME_DIR": "/home/ann"})
    assert host.host == "Gemini CLI (mcpServers)"
    py, remote, long = host.upstreams
    assert py.args == ("-m", "srv", "/home/ann/x") and dict(py.env) == {"A": "t0k", "B": "t0k-2"}
    assert py.tools is not None and py.tools.include == {"read", "write", "drop"} and py.tools.exclude == {"drop"}
    assert [py.tools.allows(n) for n in ("read", "drop", "other")] == [True, False, False]
    assert (remote.transport, remote.url, dict(remote.headers)) == (
        "http",
        "https://example.com/mcp",
        {"Authorization": "Bearer t0k"},
    )
    assert long.description is None  # Gemini's free-text description is not our 60-character label
    why = dict(host.skipped)
    assert "Gemini CLI reads as an SSE endpoint" in why["legacy"] and '"httpUrl"' in why["legacy"]
    assert why["experimental"] == "is excluded by the file's mcp.excluded"
    assert why["unset"] == "uses $NOT_SET_ANYWHERE, and NOT_SET_ANYWHERE is not set in the gateway's environment"
    assert host.filter_notes() == [
        "server 'py': serving only drop, read, write (includeTools); never drop (excludeTools)"
    ]


@pytest.mark.req("PDX-HOST-03", "PDX-FILTER-01")
def test_windsurf_server_url_file_interpolation_and_disabled_tools(tmp_path: Path) -> None:
    (tmp_path / "token.txt").write_text("s3cret\n")
    text = """{"mcpServers": {
      "remote": {"serverUrl": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${file:token.txt}"}},
      "github": {"command": "npx", "args": ["-y", "gh"], "env": {"T": "${env:GH}"}, "disabledTools": ["delete_repo"]},
      "broken": {"serverUrl": "https://example.com/mcp", "headers": {"X": "${file:missing.txt}"}},
      "off": {"command": "npx", "disabled": true}
    }}"""
    host = _read(tmp_path, text, "mcp_config.json", environ={"GH": "g"})
    assert host.host == "Windsurf (mcpServers)"
    remote, github = host.upstreams
    assert (remote.url, dict(remote.headers)) == ("https://example.com/mcp", {"Authorization": "Bearer s3cret"})
    assert github.tools is not None and github.tools.exclude == {"delete_repo"} and github.tools.include is None
    assert host.filter_notes() == ["server 'github': serving never delete_repo (disabledTools)"]
    ((name, why),) = host.skipped
    assert name == "broken" and "${file:missing.txt}" in why and "cannot read" in why


@pytest.mark.req("PDX-HOST-03")
def test_zed_context_servers_in_both_shapes(tmp_path: Path) -> None:
    text = """// Zed settings
    {
      "ui_font_size": 16,
      "context_servers": {
        "new": {"source": "custom", "command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}, "enabled": true},
        "old": {"command": {"path": "node", "args": ["srv.js"], "env": {"B": "2"}}, "settings": {}},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        "ext": {"source": "extension", "settings": {"token": "x"}},
        "paused": {"source": "custom", "command": "x", "enabled": false},
      },
    }"""
    host = _read(tmp_path, text)
    assert host.host == "Zed (context_servers)"
    new, old, remote = host.upstreams
    assert (new.command, new.args, dict(new.env)) == ("npx", ("-y", "srv"), {"A": "1"})
    assert (old.command, old.args, dict(old.env)) == ("node", ("srv.js",), {"B": "2"})
    assert remote.url == "https://example.com/mcp"
    ((name, why),) = host.skipped
    assert name == "ext" and "Zed extension" in why


@pytest.mark.req("PDX-HOST-03", "PDX-FILTER-01")
def test_codex_config_toml(tmp_path: Path) -> None:
    text = """
model = "o4-mini"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
env_vars = ["FORWARDED", "NOT_SET"]
enabled_tools = ["search", "fetch", "purge"]
disabled_tools = ["purge"]

[mcp_servers.docs.env]
LOCAL = "1"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
http_headers = { "X-Region" = "eu" }
env_http_headers = { "X-Team" = "TEAM_ID" }

[mcp_servers.nokey]
url = "https://example.com/mcp"
bearer_token_env_var = "UNSET_TOKEN"

[mcp_servers.off]
command = "x"
enabled = false
"""
    environ = {"FORWARDED": "f", "FIGMA_TOKEN": "fig", "TEAM_ID": "t1"}
    host = _read(tmp_path, text, "config.toml", environ=environ)
    assert host.host == "Codex CLI (mcp_servers)"
    docs, figma = host.upstreams
    assert dict(docs.env) == {"FORWARDED": "f", "LOCAL": "1"}
    assert docs.tools is not None and docs.tools.describe() == (
        "only fetch, purge, search (enabled_tools); never purge (disabled_tools)"
    )
    assert dict(figma.headers) == {"X-Region": "eu", "Authorization": "Bearer fig", "X-Team": "t1"}
    assert host.skipped == [
        ("nokey", "reads its bearer token from UNSET_TOKEN (bearer_token_env_var), which is not set")
    ]
    # The same file under another name is still read as Codex's.
    assert _read(tmp_path, text, "codex-settings", environ=environ).host == "Codex CLI (mcp_servers)"


@pytest.mark.req("PDX-HOST-03")
def test_claude_code_and_cline_shapes(tmp_path: Path) -> None:
    claude = """{"mcpServers": {
      "api": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp"},
      "events": {"type": "sse", "url": "https://example.com/sse"},
      "helper": {"type": "http", "url": "https://example.com/mcp", "headersHelper": "/opt/get-headers.sh"},
      "local": {"type": "stdio", "command": "npx", "args": ["srv"]}
    }}"""
    host = _read(tmp_path, claude, ".mcp.json", environ={})
    assert host.host == "Claude Desktop / Claude Code / Cursor (mcpServers)"
    assert [(u.name, u.url or u.command) for u in host.upstreams] == [
        ("api", "https://api.example.com/mcp"),
        ("local", "npx"),
    ]
    why = dict(host.skipped)
    assert "SSE transport" in why["events"] and "headersHelper" in why["helper"]
    cline = """{"mcpServers": {
      "remote": {"type": "streamableHttp", "url": "https://example.com/mcp", "disabled": false, "autoApprove": []},
      "old-sse": {"transportType": "sse", "url": "https://example.com/sse"},
      "local": {"command": "node", "args": ["x.js"], "autoApprove": ["read"], "timeout": 60}
    }}"""
    host = _read(tmp_path, cline, "cline_mcp_settings.json")
    assert host.host == "Cline (mcpServers)"
    assert [u.name for u in host.upstreams] == ["remote", "local"]
    assert "SSE transport" in dict(host.skipped)["old-sse"]


@pytest.mark.req("PDX-CONFIG-02")
def test_one_odd_entry_never_refuses_the_file(tmp_path: Path) -> None:
    text = """{"mcpServers": {
      "list-args": {"command": "a", "args": "b c"},
      "nothing": {},
      "both": {"command": "a", "url": "http://b"},
      "a b": {"command": "a"},
      "a_b": {"command": "b"},
      "number": 7,
      "ok": {"command": "c"}
    }}"""
    host = _read(tmp_path, text, "servers.json")
    assert [u.name for u in host.upstreams] == ["a b", "ok"]
    why = dict(host.skipped)
    assert why["list-args"].startswith("list-args.args must be a list of strings (a mistake in the entry")
    assert "needs exactly one of 'command' (stdio) or 'url'" in why["nothing"] and "needs exactly one" in why["both"]
    assert "same tool-name prefix" in why["a_b"] and "not an object" in why["number"]
    # The library's strict reader still refuses it, naming the first mistake.
    with pytest.raises(ConfigError, match=re.escape("list-args.args must be a list of strings")):
        load_config(tmp_path / "servers.json")


def test_a_file_no_host_writes_says_which_formats_were_expected(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"no server list found: expected \"mcpServers\" \(Claude Desktop.*Zed.*Codex"
    ):
        _read(tmp_path, '{"theme": "dark", "servers_": {}}')
    with pytest.raises(
        ConfigError, match=r"read as TOML .Codex CLI's config\.toml., but it has no .mcp_servers\.NAME."
    ):
        _read(tmp_path, 'model = "x"\n', "config.toml")
