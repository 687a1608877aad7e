"""Which upstream servers the gateway fronts: the `{"mcpServers": {...}}` file hosts already keep, or one-off flags.

Accepts the Claude Desktop / Cursor shape (`command`/`args`/`env`/`cwd` for stdio, `url`/`headers` for Streamable
HTTP) and VS Code's (`"servers"` with `"type"`). The file is read only if it is a regular file of at most
`MAX_CONFIG_BYTES` (a FIFO, device or directory at the path is refused without blocking: the gateway re-reads it on
every edit).

A file pasted from a host holds entries the gateway cannot serve: those are skipped, each with why
(`HostConfig.skipped`), and the rest are served. Skipped: an SSE or unknown `type`, a placeholder the gateway cannot
fill (`${input:...}`, an unset `${env:X}`, `${workspaceFolder}` without `--workspace-folder`), an `envFile` it cannot
read or parse. A malformed entry (wrong shapes, bad names) still refuses the file: that is a mistake to fix, not a
host feature. Placeholders are expanded in `command`, `args`, `env`, `cwd`, `url`, `headers` and `envFile` the way
VS Code and Cursor do (`${env:X}`, `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`,
`${pathSeparator}`, `${/}`) and Claude Code does (`${X}`, `${X:-default}`). `envFile` (relative to the config
file's folder) is read by a strict dotenv parser; `env` overrides it. Knows nothing about processes or the SDK.
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
    "HostConfig",
    "UpstreamConfig",
    "check_upstreams",
    "load_config",
    "one_off_stdio",
    "one_off_url",
    "parse_env_file",
    "read_config_file",
    "read_host_config",
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


class _Skip(Exception):
    """An entry valid for its host that the gateway cannot serve: skipped with this reason, the rest served."""


_STREAMABLE = (None, "stdio", "http", "streamable-http", "streamableHttp", "streamable_http")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLAUDE_DEFAULT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):-(.*)$", re.DOTALL)


@dataclass(frozen=True)
class _Host:
    """What host placeholders expand to."""

    environ: Mapping[str, str]
    workspace: str | None
    folder: Path  # the config file's folder: a relative envFile is found there


@dataclass(frozen=True)
class HostConfig:
    """A config file as read: the upstreams to serve, in file order, and (name, why) for each entry skipped."""

    upstreams: list[UpstreamConfig]
    skipped: list[tuple[str, str]]

    def notes(self) -> list[str]:
        """One line per skipped entry, for stderr and the operator page."""
        return [f"server {name!r} skipped: {why}" for name, why in self.skipped]


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


def _fill(text: str, host: _Host) -> str:
    """`text` with its host placeholders expanded; _Skip naming the first one the gateway cannot fill."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner == "userHome":
            return str(Path.home())
        if inner in ("workspaceFolder", "workspaceFolderBasename"):
            if host.workspace is None:
                raise _Skip(f"uses ${{{inner}}}; start the gateway with --workspace-folder DIR to fill it")
            return host.workspace if inner == "workspaceFolder" else Path(host.workspace).name
        if inner in ("pathSeparator", "/"):
            return os.sep
        if inner.startswith("env:"):
            name, default = inner[4:], None
        elif (claude := _CLAUDE_DEFAULT.match(inner)) is not None:
            name, default = claude.group(1), claude.group(2)
        elif _ENV_NAME.match(inner):
            name, default = inner, None
        elif inner.startswith("input:"):
            raise _Skip(
                f"uses ${{{inner}}}, a value its host prompts for; the gateway cannot ask, so put the value in the "
                "entry's env or envFile"
            )
        else:
            raise _Skip(f"uses ${{{inner}}}, a placeholder the gateway cannot fill")
        value = host.environ.get(name, default)
        if value is None:
            raise _Skip(f"uses ${{{inner}}}, and {name} is not set in the gateway's environment")
        return value

    return _PLACEHOLDER.sub(one, text)


def parse_env_file(text: str, where: str) -> dict[str, str]:
    """The variables of a dotenv file: `KEY=VALUE` lines (`export ` allowed), `#` comments, values bare (a ` #`
    starts a comment), in 'single quotes' (literal) or "double quotes" (`\\n \\t \\" \\\\` escapes), one line
    each. Nothing is expanded. ConfigError naming the line for anything else: a half-read file must not start a
    server with half its settings."""
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        key, equals, rest = line.partition("=")
        key = key.strip()
        if not equals or not _ENV_NAME.match(key):
            raise ConfigError(f"{where} line {number}: expected KEY=VALUE (KEY: letters, digits, _)")
        found[key] = _env_value(rest.strip(), f"{where} line {number}")
    return found


def _env_value(rest: str, where: str) -> str:
    if not rest or rest[0] not in "'\"":
        return re.split(r"\s+#", rest, maxsplit=1)[0].rstrip()
    quote, value, i = rest[0], [], 1
    escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}
    while i < len(rest) and rest[i] != quote:
        if quote == '"' and rest[i] == "\\" and i + 1 < len(rest):
            value.append(escapes.get(rest[i + 1], "\\" + rest[i + 1]))
            i += 2
            continue
        value.append(rest[i])
        i += 1
    if i >= len(rest):
        raise ConfigError(f"{where}: the value's {quote} quote is not closed on its line")
    after = rest[i + 1 :].strip()
    if after and not after.startswith("#"):
        # Said without the text: an envFile holds secrets, and this reason reaches stderr and the operator page.
        raise ConfigError(f"{where}: unexpected text after the quoted value")
    return "".join(value)


def _env_file(entry: Mapping[str, Any], where: str, host: _Host) -> dict[str, str]:
    value = entry.get("envFile")
    if value is None:
        return {}
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}.envFile must be a non-empty string")
    path = host.folder / _fill(value, host)
    try:
        return parse_env_file(read_config_file(path), f"envFile {path}")
    except ConfigError as exc:
        raise _Skip(str(exc).replace("its config", "an envFile")) from None


def _upstream(name: str, entry: Any, where: str, host: _Host) -> UpstreamConfig | None:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object with 'command' (stdio) or 'url' (Streamable HTTP)")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type") or entry.get("transport")
    if kind == "sse":
        raise _Skip(
            "uses the SSE transport, which the gateway does not speak; give the server's Streamable HTTP endpoint "
            'as "url" without "type": "sse", or its stdio command'
        )
    if kind not in _STREAMABLE:
        raise _Skip(f"has type {kind!r}; the gateway serves only stdio ('command') and Streamable HTTP ('url')")
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
        args = _strings(entry.get("args", []), f"{where}.args")
        env = _string_map(entry.get("env", {}), f"{where}.env")
        return UpstreamConfig(
            name,
            command=_fill(command, host),
            args=tuple(_fill(arg, host) for arg in args),
            # The file's variables first: `env` overrides them, as in VS Code.
            env=_env_file(entry, where, host) | {key: _fill(value, host) for key, value in env.items()},
            cwd=None if cwd is None else _fill(cwd, host),
            prefix=prefix,
            category=category,
            description=description,
            client_sessions=sessions,
        )
    if not isinstance(url, str) or not _fill(url, host).startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http:// or https:// URL")
    headers = _string_map(entry.get("headers", {}), f"{where}.headers")
    return UpstreamConfig(
        name,
        url=_fill(url, host),
        headers={key: _fill(value, host) for key, value in headers.items()},
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


def load_config(path: str | Path, *, workspace_folder: str | Path | None = None) -> list[UpstreamConfig]:
    """The upstreams to serve of a `{"mcpServers": {...}}` (or VS Code `{"servers": {...}}`) file, in file order
    (`read_host_config` also says which entries were skipped and why)."""
    return read_host_config(path, workspace_folder=workspace_folder).upstreams


def read_host_config(
    path: str | Path, *, workspace_folder: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> HostConfig:
    """A host's config file: the entries to serve, and those skipped with why (see the module's docstring).
    `workspace_folder` fills `${workspaceFolder}`; `environ` (default: ours) fills `${env:X}`."""
    path = Path(path)
    host = _Host(
        os.environ if environ is None else environ,
        None if workspace_folder is None else str(workspace_folder),
        path.parent,
    )
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
    upstreams: list[UpstreamConfig] = []
    skipped: list[tuple[str, str]] = []
    for name, entry in servers.items():
        try:
            upstream = _upstream(name, entry, f"{path}: {name}", host)
        except _Skip as why:
            skipped.append((name, str(why)))
            continue
        if upstream is not None:
            upstreams.append(upstream)
    check_upstreams(upstreams)
    return HostConfig(upstreams, skipped)


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
