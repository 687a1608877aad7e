"""The gateway's configuration (the `mcpServers` file hosts keep, one-off flags) and its naming rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp_pd.gateway import ConfigError, Route, assign_names, load_config, one_off_stdio, one_off_url


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(data))
    return path


def test_claude_desktop_and_vscode_files(tmp_path: Path) -> None:
    claude = {
        "mcpServers": {
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"A": "1"}},
            "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}, "prefix": "r_"},
            "off": {"command": "nothing", "disabled": True},
        }
    }
    memory, remote = load_config(_write(tmp_path, claude))
    assert (memory.transport, memory.command, memory.args, dict(memory.env)) == (
        "stdio",
        "npx",
        ("-y", "@modelcontextprotocol/server-memory"),
        {"A": "1"},
    )
    assert (remote.transport, remote.url, remote.prefix) == ("http", "https://example.com/mcp", "r_")
    assert "Bearer" not in remote.describe()  # header values may be credentials: never in messages
    vscode = {"servers": {"fs": {"type": "stdio", "command": "node", "args": ["fs.js"]}}}
    assert load_config(_write(tmp_path, vscode))[0].command == "node"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"servers": []}, "expected"),
        ({"mcpServers": {"x": {}}}, "needs exactly one of 'command' (stdio) or 'url'"),
        ({"mcpServers": {"x": {"command": "a", "url": "http://b"}}}, "needs exactly one"),
        ({"mcpServers": {"x": {"url": "ftp://b"}}}, "must be an http:// or https:// URL"),
        ({"mcpServers": {"x": {"command": "a", "args": "b c"}}}, "args must be a list of strings"),
        ({"mcpServers": {"x": {"command": "a", "prefix": "bad prefix"}}}, "prefix may hold only"),
        ({"mcpServers": {"a b": {"command": "a"}, "a_b": {"command": "b"}}}, "same tool-name prefix"),
    ],
)
def test_bad_configs_are_refused_with_the_reason(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(_write(tmp_path, data))


def test_unreadable_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_config(tmp_path / "broken.json")


def test_one_off_names() -> None:
    taken: set[str] = set()
    assert one_off_stdio("npx -y @modelcontextprotocol/server-memory", taken).name == "server-memory"
    assert one_off_stdio("npx -y @modelcontextprotocol/server-memory", taken).name == "server-memory-2"
    named = one_off_stdio("mem=python -m thing --flag=1", taken)
    assert (named.name, named.command, named.args) == ("mem", "python", ("-m", "thing", "--flag=1"))
    assert one_off_url("http://127.0.0.1:9000/mcp", taken).name == "127.0.0.1_9000"
    assert one_off_url("gh=https://example.com/mcp", taken).name == "gh"
    with pytest.raises(ConfigError, match="http:// or https://"):
        one_off_url("example.com/mcp", taken)


def test_names_are_namespaced_only_where_they_collide_and_always_the_same_way() -> None:
    listings = {"b": ["search", "read"], "a": ["search", "write", "describe_tools"]}
    routes = assign_names(listings, {"b": "bee_"}, reserved={"describe_tools"})
    assert routes == {
        "a__describe_tools": Route("a", "describe_tools"),  # the gateway's own name is reserved
        "a__search": Route("a", "search"),
        "bee_search": Route("b", "search"),  # a configured prefix replaces "b__"
        "read": Route("b", "read"),
        "write": Route("a", "write"),
    }
    # Order of servers and of their tools does not matter.
    reordered = {"a": ["describe_tools", "write", "search"], "b": ["read", "search"]}
    assert assign_names(reordered, {"b": "bee_"}, reserved={"describe_tools"}) == routes


def test_an_instance_says_what_it_is_for(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    servers = {
        "work": {"command": "x", "description": "GitHub, work account"},
        "home": {"command": "x", "category": "personal"},
        "misc": {"command": "x"},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    labels = {c.name: c.label for c in load_config(path)}
    assert labels == {"work": "GitHub, work account", "home": "personal", "misc": "misc"}
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "description": "x" * 61}}}))
    with pytest.raises(ConfigError, match="description must be 1 to 60 characters"):
        load_config(path)


def test_client_sessions_are_a_bounded_whole_number(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    servers = {"fs": {"command": "x", "maxClientSessions": 0}, "web": {"url": "http://127.0.0.1:1/mcp"}}
    path.write_text(json.dumps({"mcpServers": servers}))
    assert {c.name: c.client_sessions for c in load_config(path)} == {"fs": 0, "web": 16}
    for bad in (-1, 1001, 2.5, True, "4"):
        path.write_text(json.dumps({"mcpServers": {"fs": {"command": "x", "maxClientSessions": bad}}}))
        with pytest.raises(ConfigError, match=r"fs\.maxClientSessions must be a whole number from 0 to 1000"):
            load_config(path)


def test_a_name_may_not_look_like_a_clients_own_session(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"fs#2": {"command": "x"}}}))
    with pytest.raises(ConfigError, match=r"'fs#2': a name may not end in '#' and digits"):
        load_config(path)
    path.write_text(json.dumps({"mcpServers": {"fs#work": {"command": "x"}}}))
    assert [c.name for c in load_config(path)] == ["fs#work"]
