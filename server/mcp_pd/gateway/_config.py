"""Which upstream servers the gateway fronts: the `{"mcpServers": {...}}` file hosts already keep, or one-off flags.

Accepts the Claude Desktop / Cursor shape (`command`/`args`/`env`/`cwd` for stdio, `url`/`headers` for Streamable
HTTP) and VS Code's (`"servers"` with `"type"`). Knows nothing about processes or the SDK.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

__all__ = ["ConfigError", "UpstreamConfig", "load_config", "one_off_stdio", "one_off_url"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
# How many clients may each have their own session of an upstream that works on its client's roots (`_roots.py`),
# and how such a session's key ends (`<name>#<n>`: no configured name may end so).
CLIENT_SESSIONS: Final = 16
SESSION_SUFFIX: Final = re.compile(r"#\d+$")
_NAMED = re.compile(r"^([A-Za-z0-9_.\-]+)=(.+)$", re.DOTALL)
_LAUNCHERS = {"npx", "uvx", "bunx", "pnpx", "node", "python", "python3", "uv", "deno", "bun", "docker", "npm", "pnpm"}


class ConfigError(ValueError):
    """A configuration the gateway cannot use, said so the author can fix it."""


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream MCP server.

    `name` is the key in the config; served names and categories derive from it. `prefix` replaces `name__` on the
    tools of this server that collide with another server's; `category` overrides the server name as category;
    `description` says what this instance is for ("GitHub, work account"): a colliding tool's listed line starts
    with it (else with the category or the name), so a model can tell two instances of one server apart.
    `client_sessions` (`maxClientSessions`): when the server works on its client's roots, how many more clients
    may each get a session (a process) of their own while another client holds the shared one (`_roots.py`).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    prefix: str | None = None
    category: str | None = None
    description: str | None = None
    client_sessions: int = CLIENT_SESSIONS

    @property
    def label(self) -> str:
        """How a colliding tool's listed line names this upstream."""
        return self.description or self.category or self.name

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @property
    def key(self) -> str:
        """The name as it may appear in tool names: SEP-986 characters only."""
        return _UNSAFE.sub("_", self.name)

    def describe(self) -> str:
        """How it is reached, for messages (no header values: they may be credentials)."""
        if self.command is not None:
            return shlex.join([self.command, *self.args])
        return str(self.url)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{where} must be an object of string values")
    return dict(value)


def _optional_string(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{where}.{key} must be a non-empty string")
    return value


def _upstream(name: str, entry: Any, where: str) -> UpstreamConfig | None:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object with 'command' (stdio) or 'url' (Streamable HTTP)")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type") or entry.get("transport")
    if kind in ("sse",):
        raise ConfigError(
            f"{where}: the SSE transport is not supported by the gateway; use the server's Streamable HTTP endpoint"
        )
    if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp", "streamable_http"):
        raise ConfigError(f"{where}.type must be 'stdio' or 'http', not {kind!r}")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where} needs exactly one of 'command' (stdio) or 'url' (Streamable HTTP)")
    prefix = _optional_string(entry, "prefix", where)
    if prefix is not None and _UNSAFE.search(prefix):
        raise ConfigError(f"{where}.prefix may hold only A-Z a-z 0-9 _ - . (it becomes part of tool names)")
    category = _optional_string(entry, "category", where)
    description = _optional_string(entry, "description", where)
    if description is not None and not 0 < len(description.strip()) <= 60:
        raise ConfigError(f"{where}.description must be 1 to 60 characters (it starts the listed line of its twins)")
    sessions = entry.get("maxClientSessions", CLIENT_SESSIONS)
    if not isinstance(sessions, int) or isinstance(sessions, bool) or not 0 <= sessions <= 1000:
        raise ConfigError(f"{where}.maxClientSessions must be a whole number from 0 to 1000")
    if command is not None:
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{where}.command must be a non-empty string")
        cwd = _optional_string(entry, "cwd", where)
        return UpstreamConfig(
            name,
            command=command,
            args=_strings(entry.get("args", []), f"{where}.args"),
            env=_string_map(entry.get("env", {}), f"{where}.env"),
            cwd=cwd,
            prefix=prefix,
            category=category,
            description=description,
            client_sessions=sessions,
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http:// or https:// URL")
    return UpstreamConfig(
        name,
        url=url,
        headers=_string_map(entry.get("headers", {}), f"{where}.headers"),
        prefix=prefix,
        category=category,
        description=description,
        client_sessions=sessions,
    )


def load_config(path: str | Path) -> list[UpstreamConfig]:
    """The enabled upstreams of a `{"mcpServers": {...}}` (or VS Code `{"servers": {...}}`) file, in file order."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{"name": {{"command": ...}} or {{"url": ...}}}}}}')
    upstreams = [u for name, entry in servers.items() if (u := _upstream(name, entry, f"{path}: {name}"))]
    _check_unique(upstreams)
    return upstreams


def _check_unique(upstreams: Sequence[UpstreamConfig]) -> None:
    seen: dict[str, str] = {}
    for upstream in upstreams:
        if not upstream.name:
            raise ConfigError("an upstream server needs a non-empty name")
        if SESSION_SUFFIX.search(upstream.name):
            raise ConfigError(
                f"server {upstream.name!r}: a name may not end in '#' and digits (the gateway names the sessions "
                "it opens for one client so); rename it"
            )
        other = seen.setdefault(upstream.key, upstream.name)
        if other != upstream.name:
            raise ConfigError(f"servers {other!r} and {upstream.name!r} give the same tool-name prefix; rename one")


def _derived_name(argv: Sequence[str]) -> str:
    """A readable server name from a command line: the package or script it runs."""
    tokens = [t for t in argv[1:] if not t.startswith("-")]
    if Path(argv[0]).name not in _LAUNCHERS or not tokens:
        tokens = [argv[0]]
    stem = Path(tokens[0].split("@")[-2] if tokens[0].count("@") > 1 else tokens[0]).name
    stem = re.sub(r"\.(js|mjs|cjs|py|ts)$", "", stem)
    return _UNSAFE.sub("_", stem) or "upstream"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate


def one_off_stdio(spec: str, taken: set[str]) -> UpstreamConfig:
    """`--upstream-stdio "[name=]command args"`: a stdio upstream (name derived from the command if not given)."""
    named = _NAMED.match(spec.strip())
    name, command = (named.group(1), named.group(2)) if named else (None, spec)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"--upstream-stdio {spec!r}: {exc}") from None
    if not argv:
        raise ConfigError("--upstream-stdio needs a command")
    return UpstreamConfig(_unique(name or _derived_name(argv), taken), command=argv[0], args=tuple(argv[1:]))


def one_off_url(spec: str, taken: set[str]) -> UpstreamConfig:
    """`--upstream-url "[name=]URL"`: a Streamable HTTP upstream (name derived from the host if not given)."""
    named = _NAMED.match(spec.strip())
    name, url = (named.group(1), named.group(2)) if named and "://" not in named.group(1) else (None, spec.strip())
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--upstream-url {spec!r}: expected an http:// or https:// URL")
    host = url.split("://", 1)[1].split("/", 1)[0].split("@")[-1]
    return UpstreamConfig(_unique(name or _UNSAFE.sub("_", host), taken), url=url)
