"""Which upstream servers the gateway fronts: the `{"mcpServers": {...}}` file hosts already keep, or one-off flags.

Accepts the Claude Desktop / Cursor shape (`command`/`args`/`env`/`cwd` for stdio, `url`/`headers` for Streamable
HTTP) and VS Code's (`"servers"` with `"type"`). The file is read only if it is a regular file of at most
`MAX_CONFIG_BYTES` (a FIFO, device or directory at the path is refused without blocking: the gateway re-reads it on
every edit). Knows nothing about processes or the SDK.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ._names import server_key

__all__ = [
    "MAX_CONFIG_BYTES",
    "ConfigError",
    "UpstreamConfig",
    "check_upstreams",
    "load_config",
    "one_off_stdio",
    "one_off_url",
    "read_config_file",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
# How many clients may each have their own session of an upstream that works on its client's roots (`_roots.py`),
# and how such a session's key ends (`<name>#<n>`: no configured name may end so).
CLIENT_SESSIONS: Final = 16
SESSION_SUFFIX: Final = re.compile(r"#\d+$")
_NAMED = re.compile(r"^([A-Za-z0-9_.\-]+)=(.+)$", re.DOTALL)
# A config file is a few kilobytes; a bigger one is a mistake (or a trap) that the gateway need not read.
MAX_CONFIG_BYTES: Final = 1 << 20
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
        """The name as it starts tool names (`_names.server_key`): SEP-986 characters, no `__`, no final `_`."""
        return server_key(self.name)

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


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def _refuse_irregular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{path}: is {_kind(mode)}; the gateway reads its config only from a regular file")


def _refuse_size(path: Path, size: int, *, growing: bool = False) -> None:
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: {'grew past' if growing else 'is'} {size} bytes, over the {MAX_CONFIG_BYTES >> 20} MiB "
            f"({MAX_CONFIG_BYTES} bytes) limit of a config file"
        )


def read_config_file(path: str | Path) -> str:
    """The text of the config file at `path`: a regular file of at most `MAX_CONFIG_BYTES`, never blocking.

    Checked before opening (a device is not even opened) and again on the opened descriptor (the path may be
    swapped in between); opened with O_NONBLOCK so a FIFO swapped in does not wait for a writer.
    """
    path = Path(path)
    try:
        _refuse_irregular(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            status = os.fstat(fd)
            _refuse_irregular(path, status.st_mode)
            _refuse_size(path, status.st_size)
            chunks: list[bytes] = []
            got = 0
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
                got += len(chunk)
                _refuse_size(path, got, growing=True)  # it grew while being read
        finally:
            os.close(fd)
        return b"".join(chunks).decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc}") from None


def load_config(path: str | Path) -> list[UpstreamConfig]:
    """The enabled upstreams of a `{"mcpServers": {...}}` (or VS Code `{"servers": {...}}`) file, in file order."""
    path = Path(path)
    text = read_config_file(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid JSON: nested too deeply") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{"name": {{"command": ...}} or {{"url": ...}}}}}}')
    upstreams = [u for name, entry in servers.items() if (u := _upstream(name, entry, f"{path}: {name}"))]
    check_upstreams(upstreams)
    return upstreams


def check_upstreams(upstreams: Sequence[UpstreamConfig]) -> None:
    """Refuse names the gateway cannot tell apart in tool names (ConfigError), the config's and one-offs' alike."""
    seen: dict[str, str] = {}
    for upstream in upstreams:
        if not upstream.name:
            raise ConfigError("an upstream server needs a non-empty name")
        if not upstream.key:
            raise ConfigError(
                f"server {upstream.name!r}: a name needs a letter, a digit, '-' or '.' (it starts tool names)"
            )
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
