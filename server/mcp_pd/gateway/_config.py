"""Which upstream servers the gateway fronts: the server list a host already keeps, or one-off flags.

Every host's file is read as that host writes it (`_hosts.py`: Claude Desktop, Claude Code, Cursor, Cline, Windsurf,
Gemini CLI, VS Code, Zed, Codex CLI's TOML) and each entry comes here in one shape: `command`/`args`/`env`/`cwd` for
stdio, `url`/`headers` for Streamable HTTP, and the host's tool filters (`_filters.ToolFilter`). The file is read
only if it is a regular file of at most `MAX_CONFIG_BYTES` (a FIFO, device or directory at the path is refused
without blocking: the gateway re-reads it on every edit).

A file pasted from a host holds entries the gateway cannot serve: those are skipped, each with why
(`HostConfig.skipped`), and the rest are served; the file is never refused whole for one entry. Skipped: an SSE or
unknown `type`, a placeholder the gateway cannot fill (`${input:...}` without a default, an unset `${env:X}` or
`$X`, `${workspaceFolder}` without `--workspace-folder`, an unreadable `${file:...}`), an `envFile` it cannot read
or parse, a variable Codex's `bearer_token_env_var` / `env_http_headers` names that is unset, and a malformed entry
(wrong shapes, bad names: a mistake to fix, said as such; `load_config` refuses those). Placeholders are expanded in
`command`, `args`, `env`, `cwd`, `url`, `headers` and `envFile` the way VS Code and Cursor do (`${env:X}`,
`${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}`, `${/}`, `${input:id}` from
the input's default), Claude Code does (`${X}`, `${X:-default}`), Windsurf does (`${file:PATH}`) and Gemini CLI
does (`$X` too). `envFile` (relative to the config file's folder) is read by a strict dotenv parser; `env`
overrides it. Knows nothing about processes or the SDK.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ._filters import ToolFilter
from ._hosts import HostFile, HostFileError, Skip, parse_host_file
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
# The most a message on a pipe may be set to: a line is held whole while it is decoded (several times its size).
MAX_MESSAGE_MIB: Final = 1024
_LAUNCHERS = {"npx", "uvx", "bunx", "pnpx", "node", "python", "python3", "uv", "deno", "bun", "docker", "npm", "pnpm"}


class ConfigError(ValueError):
    """A configuration the gateway cannot use, said so the author can fix it."""


_Skip = Skip  # an entry valid for its host that the gateway cannot serve: skipped with this reason, the rest served
_STREAMABLE = (None, "stdio", "http", "streamable-http", "streamableHttp", "streamable_http")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_DOLLAR = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # Gemini CLI's `$VAR` as well
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLAUDE_DEFAULT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):-(.*)$", re.DOTALL)


@dataclass(frozen=True)
class _Host:
    """What host placeholders expand to."""

    environ: Mapping[str, str]
    workspace: str | None
    folder: Path  # the config file's folder: a relative envFile is found there
    file: HostFile | None = None  # which host wrote it: its inputs, whether `$VAR` is read


@dataclass(frozen=True)
class HostConfig:
    """A config file as read: the upstreams to serve, in file order, and (name, why) for each entry skipped."""

    upstreams: list[UpstreamConfig]
    skipped: list[tuple[str, str]]
    host: str = "mcpServers"  # which host's format the file was read as, and where its servers were
    malformed: tuple[tuple[str, str], ...] = ()  # the skipped entries no host would accept

    def notes(self) -> list[str]:
        """One line per skipped entry, for stderr and the operator page."""
        return [f"server {name!r} skipped: {why}" for name, why in self.skipped]

    def filter_notes(self) -> list[str]:
        """One line per server whose tools the file filters: what is served of it."""
        return [f"server {u.name!r}: serving {u.tools.describe()}" for u in self.upstreams if u.tools]


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream MCP server.

    `name` is the key in the config; served names and categories derive from it. `prefix` replaces `name__` on the
    tools of this server that collide with another server's; `category` overrides the server name as category;
    `description` says what this instance is for ("GitHub, work account"): a colliding tool's listed line starts
    with it (else with the category or the name), so a model can tell two instances of one server apart.
    `client_sessions` (`maxClientSessions`): when the server works on its client's roots, how many more clients
    may each get a session (a process) of their own while another client holds the shared one (`_roots.py`).
    `tools`: the host's tool filter (`includeTools` / `excludeTools` and their kin), applied to every listing.
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
    tools: ToolFilter | None = None  # the host's tool filter: a tool it excludes is never listed, described or run
    max_message: int | None = None  # bytes one message on its pipe may have (`maxMessageMiB`); None: the gateway's

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
        if inner is None:  # Gemini CLI's bare `$VAR`
            return _variable(match.group(0), match.group(2), None, host)
        if inner == "userHome":
            return str(Path.home())
        if inner in ("workspaceFolder", "workspaceFolderBasename"):
            if host.workspace is None:
                raise _Skip(f"uses ${{{inner}}}; start the gateway with --workspace-folder DIR to fill it")
            return host.workspace if inner == "workspaceFolder" else Path(host.workspace).name
        if inner in ("pathSeparator", "/"):
            return os.sep
        if inner.startswith("env:"):
            return _variable(match.group(0), inner[4:], None, host)
        if (claude := _CLAUDE_DEFAULT.match(inner)) is not None:
            return _variable(match.group(0), claude.group(1), claude.group(2), host)
        if _ENV_NAME.match(inner):
            return _variable(match.group(0), inner, None, host)
        if inner.startswith("input:"):
            return _input(inner, host)
        if inner.startswith("file:"):
            return _file(inner, host)
        raise _Skip(f"uses ${{{inner}}}, a placeholder the gateway cannot fill")

    return (_DOLLAR if host.file is not None and host.file.dollar else _PLACEHOLDER).sub(one, text)


def _variable(written: str, name: str, default: str | None, host: _Host) -> str:
    value = host.environ.get(name, default)
    if value is None:
        raise _Skip(f"uses {written}, and {name} is not set in the gateway's environment")
    return value


def _input(inner: str, host: _Host) -> str:
    """VS Code's `${input:id}`: the input's default if it has one (what its host pre-fills), else skipped."""
    spec = host.file.inputs.get(inner[6:], {}) if host.file is not None else {}
    default = spec.get("default")
    if isinstance(default, str):
        return default
    what = spec.get("description")
    said = f' ("{what}")' if isinstance(what, str) and what else ""
    raise _Skip(
        f"uses ${{{inner}}}{said}, a value its host prompts for; the gateway cannot ask, so put the value in the "
        "entry's env or envFile"
    )


def _file(inner: str, host: _Host) -> str:
    """Windsurf's `${file:PATH}`: the file's text without its final newline (`~` and a path relative to the config
    file's folder allowed). Its content is a secret: never in a message."""
    path = host.folder / Path(inner[5:]).expanduser()
    try:
        text = read_config_file(path)
    except ConfigError as exc:
        raise _Skip(f"uses ${{{inner}}}, which the gateway cannot use: {exc}") from None
    return text.removesuffix("\n").removesuffix("\r")


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


def _tool_filter(entry: Mapping[str, Any], where: str) -> ToolFilter | None:
    """The entry's tool filter (Gemini's `includeTools` / `excludeTools`, or another host's, as `_hosts` renamed
    them), said by the names the file used."""
    include, exclude = entry.get("includeTools"), entry.get("excludeTools")
    if include is None and exclude is None:
        return None
    keys = entry.get("_filter_keys", (None, None))
    include_key, exclude_key = keys[0] or "includeTools", keys[1] or "excludeTools"
    return ToolFilter(
        None if include is None else frozenset(_strings(include, f"{where}.{include_key}")),
        frozenset(() if exclude is None else _strings(exclude, f"{where}.{exclude_key}")),
        include_key,
        exclude_key,
    )


def _from_environment(entry: Mapping[str, Any], where: str, host: _Host) -> tuple[dict[str, str], dict[str, str]]:
    """Codex CLI's variables read from the environment, taken literally: `env_vars` (passed on when set, as Codex
    does), and the headers `bearer_token_env_var` and `env_http_headers` make (skipped when unset: without its
    credential the server would only refuse)."""
    forwarded = {
        n: host.environ[n] for n in _strings(entry.get("env_vars", []), f"{where}.env_vars") if n in host.environ
    }
    headers: dict[str, str] = {}
    bearer = _optional_string(entry, "bearer_token_env_var", where)
    if bearer is not None:
        if not host.environ.get(bearer):
            raise _Skip(f"reads its bearer token from {bearer} (bearer_token_env_var), which is not set")
        headers["Authorization"] = f"Bearer {host.environ[bearer]}"
    for header, variable in _string_map(entry.get("env_http_headers", {}), f"{where}.env_http_headers").items():
        if variable not in host.environ:
            raise _Skip(f"reads its {header} header from {variable} (env_http_headers), which is not set")
        headers[header] = host.environ[variable]
    return forwarded, headers


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
    size = entry.get("maxMessageMiB")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_MESSAGE_MIB):
        raise ConfigError(f"{where}.maxMessageMiB must be a whole number of MiB from 1 to {MAX_MESSAGE_MIB}")
    common: dict[str, Any] = {
        "max_message": None if size is None else size << 20,
        "prefix": prefix,
        "category": category,
        "description": description,
        "client_sessions": sessions,
        "tools": _tool_filter(entry, where),
    }
    forwarded, env_headers = _from_environment(entry, where, host)
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
            # The file's variables first: `env` overrides them, as in VS Code (and Codex's forwarded ones first).
            env=forwarded | _env_file(entry, where, host) | {key: _fill(value, host) for key, value in env.items()},
            cwd=None if cwd is None else _fill(cwd, host),
            **common,
        )
    if not isinstance(url, str) or not _fill(url, host).startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http:// or https:// URL")
    headers = _string_map(entry.get("headers", {}), f"{where}.headers")
    return UpstreamConfig(
        name,
        url=_fill(url, host),
        headers={key: _fill(value, host) for key, value in headers.items()} | env_headers,
        **common,
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
    """The upstreams to serve of a host's config file, in file order. Strict: ConfigError for a malformed entry
    (`read_host_config`, which the gateway uses, skips it with why and serves the rest)."""
    host = read_host_config(path, workspace_folder=workspace_folder)
    if host.malformed:
        raise ConfigError(f"{path}: {host.malformed[0][1]}")
    return host.upstreams


def read_host_config(
    path: str | Path, *, workspace_folder: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> HostConfig:
    """A host's config file: the entries to serve, and those skipped with why (see the module's docstring).
    `workspace_folder` fills `${workspaceFolder}`; `environ` (default: ours) fills `${env:X}`. ConfigError only when
    the file as a whole cannot be read as any host's."""
    path = Path(path)
    text = read_config_file(path)
    try:
        parsed = parse_host_file(text, toml=path.suffix.lower() == ".toml")
    except HostFileError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    host = _Host(
        os.environ if environ is None else environ,
        None if workspace_folder is None else str(workspace_folder),
        path.parent,
        parsed,
    )
    upstreams: list[UpstreamConfig] = []
    skipped: list[tuple[str, str]] = []
    malformed: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for name, entry in parsed.entries.items():
        try:
            if isinstance(entry, Skip):
                raise entry
            upstream = _upstream(name, entry, name, host)
            if upstream is not None:
                _check_name(upstream, seen)
        except _Skip as why:
            skipped.append((name, str(why)))
            continue
        except ConfigError as exc:
            malformed.append((name, str(exc)))
            skipped.append((name, f"{exc} (a mistake in the entry: fix it to serve this server)"))
            continue
        if upstream is not None:
            upstreams.append(upstream)
    return HostConfig(upstreams, skipped, parsed.describe(), tuple(malformed))


def check_upstreams(upstreams: Sequence[UpstreamConfig]) -> None:
    """Refuse names the gateway cannot tell apart in tool names (ConfigError), the config's and one-offs' alike."""
    seen: dict[str, str] = {}
    for upstream in upstreams:
        _check_name(upstream, seen)


def _check_name(upstream: UpstreamConfig, seen: dict[str, str]) -> None:
    """ConfigError when `upstream`'s name cannot start tool names, or gives the prefix of one in `seen` (which it
    then joins: key -> name)."""
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
