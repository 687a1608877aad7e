"""Which host wrote a config file, and how to read its server entries: one home for every host's format.

Each host keeps its MCP servers its own way; this module reads the file as that host writes it and hands `_config`
every entry in one common shape (`command`/`args`/`env`/`cwd` or `url`/`headers`, plus `includeTools` /
`excludeTools`), or the reason it cannot be served. The formats, as each host documents them:

- `mcpServers` (JSON): Claude Desktop, Claude Code's `.mcp.json` (`type`), Cursor (`envFile`, `${env:X}`), Cline
  (`type: streamableHttp`, `transportType`), Windsurf (`serverUrl`, `disabledTools`, `${file:...}`), Gemini CLI's
  `settings.json` (`httpUrl`; `url` is its SSE endpoint; `$VAR` anywhere; `includeTools` / `excludeTools`; the
  `mcp.allowed` / `mcp.excluded` server lists).
- `servers` (VS Code's `.vscode/mcp.json`, with `inputs`) and `mcp.servers` (VS Code's `settings.json`).
- `context_servers` (Zed's `settings.json`: `command` as a string with `args`/`env`, or the older
  `{"path", "args", "env"}` object; `url`; `"source": "extension"` entries are Zed extensions).
- `[mcp_servers.NAME]` tables (Codex CLI's `config.toml`: `env_vars`, `bearer_token_env_var`, `http_headers`,
  `env_http_headers`, `enabled`, `enabled_tools` / `disabled_tools`).

JSON files are read as JSONC (comments and trailing commas, as VS Code, Zed and Gemini CLI write them) by a
stripper that blanks them in place, so a real syntax error is still reported at its own line and column. Knows
nothing about processes or the SDK.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["HostFile", "HostFileError", "Skip", "parse_host_file", "strip_jsonc"]

CLAUDE: Final = "Claude Desktop / Claude Code / Cursor"
CLINE: Final = "Cline"
WINDSURF: Final = "Windsurf"
GEMINI: Final = "Gemini CLI"
VSCODE: Final = "VS Code"
ZED: Final = "Zed"
CODEX: Final = "Codex CLI"

EXPECTED: Final = (
    '"mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI, Cline), "servers" (VS Code '
    '.vscode/mcp.json), "mcp": {"servers"} (VS Code settings.json), "context_servers" (Zed settings.json), or '
    "[mcp_servers.NAME] tables (Codex CLI config.toml)"
)


class HostFileError(ValueError):
    """The file as a whole is not one the gateway can read (said without the path: the caller adds it)."""


class Skip(Exception):
    """An entry the gateway cannot serve: skipped with this reason, the rest served."""


@dataclass(frozen=True)
class HostFile:
    """A host's file as read: which host wrote it, its server entries by name (each in the common shape, or the
    `Skip` saying why not), and the values that host's placeholders read (`inputs`: VS Code's, by id)."""

    host: str
    key: str  # where the servers were found, as the file spells it
    entries: dict[str, dict[str, Any] | Skip]
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    dollar: bool = False  # Gemini CLI: `$VAR` (not only `${VAR}`) reads the environment

    def describe(self) -> str:
        return f"{self.host} ({self.key})"


# -- JSONC ---------------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)|,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[}\]])', re.DOTALL)


def strip_jsonc(text: str) -> str:
    """`text` with its comments and trailing commas replaced by blanks (newlines kept), so `json.loads` reads it
    and reports any other error at the line and column where the author sees it. Strings are left whole."""

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith('"'):
            return token
        return re.sub(r"[^\n]", " ", token)

    return _TOKEN.sub(blank, text)


def _load(text: str, toml: bool) -> tuple[Any, str]:
    """The parsed document and its syntax ("json" or "toml")."""
    if toml:
        try:
            return tomllib.loads(text), "toml"
        except tomllib.TOMLDecodeError as exc:
            raise HostFileError(f"invalid TOML: {exc}") from None
    try:
        return json.loads(strip_jsonc(text)), "json"
    except json.JSONDecodeError as exc:
        try:  # a Codex config.toml under another name
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise HostFileError(f"invalid JSON (comments and trailing commas allowed): {exc}") from None
        if isinstance(data.get("mcp_servers"), dict):
            return data, "toml"
        raise HostFileError(f"invalid JSON (comments and trailing commas allowed): {exc}") from None
    except RecursionError:
        raise HostFileError("invalid JSON: nested too deeply") from None


# -- which host ----------------------------------------------------------------------------------------------------
_GEMINI_ENTRY = {"httpUrl", "includeTools", "excludeTools", "trust", "authProviderType", "oauth"}
_GEMINI_TOP = {"mcp", "allowMCPServers", "excludeMCPServers", "coreTools", "selectedAuthType", "general", "ui"}
_WINDSURF_ENTRY = {"serverUrl", "disabledTools"}
_CLINE_ENTRY = {"autoApprove", "alwaysAllow", "transportType"}


def _which(top: Mapping[str, Any], servers: Mapping[str, Any]) -> str:
    """Which host's `mcpServers` file this is, from the keys only one host writes."""
    keys = {k for entry in servers.values() if isinstance(entry, dict) for k in entry}
    if keys & _GEMINI_ENTRY or (top.keys() & _GEMINI_TOP and not keys & _WINDSURF_ENTRY):
        return GEMINI
    if keys & _WINDSURF_ENTRY:
        return WINDSURF
    kinds = {entry.get("type") for entry in servers.values() if isinstance(entry, dict)}
    if keys & _CLINE_ENTRY or "streamableHttp" in kinds:
        return CLINE
    return CLAUDE


def parse_host_file(text: str, *, toml: bool = False) -> HostFile:
    """Read a host's config file (`toml`: the name says TOML); HostFileError when no host's format fits."""
    data, syntax = _load(text, toml)
    if not isinstance(data, dict):
        raise HostFileError(f"expected an object holding {EXPECTED}")
    if syntax == "toml":
        servers = data.get("mcp_servers")
        if not isinstance(servers, dict):
            raise HostFileError("read as TOML (Codex CLI's config.toml), but it has no [mcp_servers.NAME] table")
        return HostFile(CODEX, "mcp_servers", {n: _entry(_codex, n, e) for n, e in servers.items()})
    vscode = data.get("mcp") if isinstance(data.get("mcp"), dict) and "servers" in data["mcp"] else None
    for key, servers, host in (
        ("mcpServers", data.get("mcpServers"), None),
        ("servers", data.get("servers"), VSCODE),
        ("mcp.servers", vscode["servers"] if vscode else None, VSCODE),
        ("context_servers", data.get("context_servers"), ZED),
    ):
        if servers is None:
            continue
        if not isinstance(servers, dict):
            raise HostFileError(f'expected "{key}" to be an object of named servers, not {type(servers).__name__}')
        host = host or _which(data, servers)
        if host == ZED:
            return HostFile(ZED, key, {n: _entry(_zed, n, e) for n, e in servers.items()})
        entries = {n: _entry(_GENERIC[host], n, e) for n, e in servers.items()}
        if host == GEMINI:
            _gemini_lists(data, entries)
        inputs = data.get("inputs", vscode.get("inputs") if vscode else None) if host == VSCODE else None
        return HostFile(host, key, entries, _inputs(inputs), dollar=host == GEMINI)
    found = ", ".join(f'"{k}"' for k in list(data)[:8]) or "nothing"
    raise HostFileError(f"no server list found: expected {EXPECTED}; the file holds {found}")


def _inputs(value: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(value, list):
        return {}
    return {i["id"]: i for i in value if isinstance(i, dict) and isinstance(i.get("id"), str)}


def _entry(read: Any, name: str, entry: Any) -> dict[str, Any] | Skip:
    if not isinstance(entry, dict):
        return Skip(f"is {type(entry).__name__}, not an object with 'command' (stdio) or 'url' (Streamable HTTP)")
    try:
        result: dict[str, Any] = read(dict(entry))
        return result
    except Skip as why:
        return why


# -- each host's entry, in the common shape ------------------------------------------------------------------------
def _generic(entry: dict[str, Any]) -> dict[str, Any]:
    """Claude Desktop, Claude Code, Cursor, Cline and VS Code: the common shape already (Cline's older
    `transportType` is its `type`)."""
    if "transportType" in entry and "type" not in entry:
        entry["type"] = entry.pop("transportType")
    if "headersHelper" in entry:
        raise Skip(
            "uses headersHelper, a command Claude Code runs for each connection's headers; the gateway does not run "
            'it, so give the headers as "headers" (placeholders such as ${env:TOKEN} are filled)'
        )
    return entry


def _windsurf(entry: dict[str, Any]) -> dict[str, Any]:
    entry = _generic(entry)
    if "serverUrl" in entry:
        if "url" in entry and entry["url"] != entry["serverUrl"]:
            raise Skip("gives both serverUrl and url, and they differ; keep one")
        entry["url"] = entry.pop("serverUrl")
    if "disabledTools" in entry:
        entry["excludeTools"] = entry.pop("disabledTools")
        entry["_filter_keys"] = (None, "disabledTools")
    return entry


def _gemini(entry: dict[str, Any]) -> dict[str, Any]:
    if "httpUrl" in entry:
        if "url" in entry:
            raise Skip("gives both httpUrl (Streamable HTTP) and url (SSE, for Gemini CLI); keep httpUrl")
        entry["url"] = entry.pop("httpUrl")
        entry["type"] = "http"
    elif "url" in entry and entry.get("type") in (None, "sse"):
        raise Skip(
            "has url, which Gemini CLI reads as an SSE endpoint, a transport the gateway does not speak; give the "
            'server\'s Streamable HTTP endpoint as "httpUrl"'
        )
    description = entry.get("description")
    if isinstance(description, str) and len(description.strip()) > 60:
        # Gemini's description is free text for its /mcp listing; ours labels twins in one listed line.
        del entry["description"]
    return entry


def _gemini_lists(data: Mapping[str, Any], entries: dict[str, dict[str, Any] | Skip]) -> None:
    """Gemini CLI's server lists: `mcp.allowed` / `mcp.excluded` (older: `allowMCPServers` / `excludeMCPServers`).
    A server they keep out is skipped, never served."""
    found = data.get("mcp")
    mcp: Mapping[str, Any] = found if isinstance(found, dict) else {}
    allowed = mcp.get("allowed", data.get("allowMCPServers"))
    excluded = mcp.get("excluded", data.get("excludeMCPServers"))
    for name in entries:
        if isinstance(excluded, list) and name in excluded:
            key = "mcp.excluded" if "excluded" in mcp else "excludeMCPServers"
            entries[name] = Skip(f"is excluded by the file's {key}")
        elif isinstance(allowed, list) and name not in allowed:
            key = "mcp.allowed" if "allowed" in mcp else "allowMCPServers"
            entries[name] = Skip(f"is not in the file's {key}, so its host does not start it either")


def _zed(entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("enabled") is False:
        entry["disabled"] = True
    command = entry.get("command")
    if entry.get("source") == "extension" or (command is None and "url" not in entry):
        raise Skip(
            "is a Zed extension's server (its command comes from the extension), which the gateway cannot start; "
            'give the server\'s own "command" and "args" (as for "source": "custom")'
        )
    if isinstance(command, dict):  # Zed's older shape: {"command": {"path", "args", "env"}, "settings": {...}}
        entry["command"] = command.get("path")
        entry.setdefault("args", command.get("args", []))
        entry.setdefault("env", command.get("env") or {})
    if entry.get("env") is None:
        entry["env"] = {}
    return entry


def _codex(entry: dict[str, Any]) -> dict[str, Any]:
    """Codex CLI's `[mcp_servers.NAME]`: `url` is Streamable HTTP; variables named by `env_vars`,
    `bearer_token_env_var` and `env_http_headers` are read from the environment when the entry is filled."""
    if entry.pop("enabled", True) is False:
        entry["disabled"] = True
    if "http_headers" in entry:
        entry["headers"] = entry.pop("http_headers")
    if "bearer_token" in entry:
        raise Skip('gives bearer_token inline, which Codex CLI refuses too; name a variable in "bearer_token_env_var"')
    keys: list[str | None] = [None, None]
    if "enabled_tools" in entry:
        entry["includeTools"], keys[0] = entry.pop("enabled_tools"), "enabled_tools"
    if "disabled_tools" in entry:
        entry["excludeTools"], keys[1] = entry.pop("disabled_tools"), "disabled_tools"
    entry["_filter_keys"] = tuple(keys)
    return entry


_GENERIC = {CLAUDE: _generic, CLINE: _generic, VSCODE: _generic, WINDSURF: _windsurf, GEMINI: _gemini}
