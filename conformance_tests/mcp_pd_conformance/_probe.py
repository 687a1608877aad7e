"""The suite's only contact with a server: the `mcp` client, raw JSON results, every exchange recorded.

Results are taken as plain JSON (after the SDK's own protocol validation) so the checks see exactly
what the server sent, including fields the SDK's models would drop.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import TypeAdapter

__all__ = [
    "EXTENSION_ID",
    "MAX_PAGES",
    "ConnectFailure",
    "ErrorInfo",
    "Exchange",
    "Held",
    "Peer",
    "Pool",
    "Target",
    "connect",
    "short",
]

_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
# The extension's key in the server capabilities (`experimental` in 2025-11-25, `extensions` in 2026-07-28).
EXTENSION_ID = "io.github.mcp-pd/progressive-disclosure"
MAX_PAGES = 1000
Mode = Literal["legacy", "auto", "2026-07-28"]


def short(value: Any, limit: int = 400) -> str:
    """Compact JSON (or str) of `value`, cut to `limit` characters."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Target:
    """The server under test: a stdio command line (argv) or a Streamable HTTP URL."""

    stdio: tuple[str, ...] | None = None
    url: str | None = None
    timeout: float = 30.0
    # HTTP headers sent with every request (credentials, say): never shown in a report, a repr or an error message.
    headers: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    # What a stdio server said on stderr at warning level or above in its first session (its own problems, such
    # as definition files it could not use): shown in the report, since the server's stderr is otherwise hidden.
    said: list[str] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.stdio is None) == (self.url is None):
            raise ValueError("give exactly one of stdio (a command line) or url")
        if self.stdio is not None and not self.stdio:
            raise ValueError("the stdio command line is empty")

    def describe(self) -> str:
        """The target as a report shows it: URL credentials left out, header names only (their values are secret)."""
        if self.stdio is not None:
            return f"stdio: {' '.join(self.stdio)}"
        shown = f"http: {_without_userinfo(self.url or '')}"
        if self.headers:
            shown += f" (headers: {', '.join(dict.fromkeys(name for name, _ in self.headers))})"
        return shown

    @property
    def transport(self) -> str:
        return "stdio" if self.stdio is not None else "http"


@dataclass(frozen=True)
class ErrorInfo:
    """A JSON-RPC error (code set) or a client-side failure such as an invalid result (code None)."""

    code: int | None
    message: str
    data: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@dataclass
class Exchange:
    """One request and what came back."""

    method: str
    params: dict[str, Any]
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None

    @property
    def sent(self) -> str:
        return f"{self.method} {short(self.params, 200)}"

    @property
    def received(self) -> str:
        """What came back, without protocol envelope noise (and without `content` when structuredContent repeats it)."""
        if self.error is not None:
            return f"JSON-RPC error {short(self.error.to_json())}"
        result = {
            k: v for k, v in (self.result or {}).items() if k not in ("_meta", "resultType", "cacheScope", "ttlMs")
        }
        if "structuredContent" in result:
            result.pop("content", None)
        contents = result.get("contents")
        if isinstance(contents, list) and len(contents) == 1 and isinstance(contents[0], dict):
            text = contents[0].get("text")
            if not isinstance(text, str):
                return short(result)
            try:
                value = json.loads(text)
            except ValueError:
                return f"contents[0].text = {short(text)}"
            keys = f" (top-level keys {short(list(value)[:10], 120)})" if isinstance(value, dict) else ""
            return f"contents[0].text{keys} = {short(value)}"
        return short(result)


def _without_userinfo(url: str) -> str:
    """`url` without `user:password@`: a report may be shared, credentials must not travel with it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class ConnectFailure(Exception):
    """The server could not be started or reached (`unreachable`), refused the credentials (`unauthorized`: HTTP 401
    or 403), or did not speak MCP (`handshake`)."""

    def __init__(
        self, kind: Literal["unreachable", "unauthorized", "handshake"], message: str, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.stderr = stderr


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _classify(exc: BaseException, target: Target, stderr: str, refused: _Refusal | None = None) -> ConnectFailure:
    if refused is not None and refused.status is not None:
        return ConnectFailure("unauthorized", refused.explain(target), stderr)
    leaves = _leaves(exc)
    for leaf in leaves:
        name = type(leaf).__name__
        if isinstance(leaf, OSError) and target.stdio is not None:
            return ConnectFailure("unreachable", f"could not start {target.stdio[0]!r}: {leaf}", stderr)
        if name in ("ConnectError", "ConnectTimeout") or isinstance(leaf, ConnectionError):
            return ConnectFailure("unreachable", f"could not connect to {target.url}: {leaf}", stderr)
        if isinstance(leaf, MCPError) and leaf.error.code == types.CONNECTION_CLOSED and target.stdio is not None:
            return ConnectFailure(
                "unreachable", "the server process closed the connection before completing the MCP handshake", stderr
            )
        if isinstance(leaf, MCPError) and "timed out" in leaf.error.message:
            return ConnectFailure(
                "unreachable", f"no MCP answer within {target.timeout:g} s ({leaf.error.message})", stderr
            )
    detail = "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves)
    return ConnectFailure("handshake", f"the MCP handshake failed: {short(detail, 300)}", stderr)


class Peer:
    """One connected client (one MCP session, when the era has sessions), recording raw exchanges."""

    def __init__(
        self,
        client: Client,
        mode: Mode,
        timeout: float,
        reads: list[Exchange] | None = None,
        routes: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.mode = mode
        self.timeout = timeout
        self.pagination_problems: list[str] = []
        # Every resources/read of this run (shared by the run's peers), for resource-read/complete-responses.
        self.reads: list[Exchange] = reads if reads is not None else []
        # Tools reached through another tool (catalog mode's call_tool), shared by the run's peers: name -> tool.
        self.routes: dict[str, str] = routes if routes is not None else {}
        self.heard: list[str] = []  # the methods of the notifications this session received, in order

    @property
    def list_changed(self) -> int:
        """How many notifications/tools/list_changed this session heard."""
        return self.heard.count("notifications/tools/list_changed")

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    @property
    def instructions(self) -> str | None:
        return self.client.instructions

    async def _send(self, request: Any, method: str, params: dict[str, Any]) -> Exchange:
        exchange = Exchange(method, params)
        try:
            result: Any = await self.client.session.send_request(request, cast(Any, _RAW), self.timeout)
            exchange.result = result if isinstance(result, dict) else {"result": result}
        except MCPError as exc:
            exchange.error = ErrorInfo(exc.error.code, exc.error.message, exc.error.data)
        except Exception as exc:  # an invalid result (ValidationError) or a transport failure: both are findings
            exchange.error = ErrorInfo(None, f"{type(exc).__name__}: {short(str(exc), 300)}")
        return exchange

    async def list_tools(self, cursor: str | None = None) -> Exchange:
        params = types.PaginatedRequestParams(cursor=cursor)
        return await self._send(types.ListToolsRequest(params=params), "tools/list", _dump(params))

    async def list_resources(self, cursor: str | None = None) -> Exchange:
        params = types.PaginatedRequestParams(cursor=cursor)
        return await self._send(types.ListResourcesRequest(params=params), "resources/list", _dump(params))

    async def list_resource_templates(self, cursor: str | None = None) -> Exchange:
        params = types.PaginatedRequestParams(cursor=cursor)
        return await self._send(
            types.ListResourceTemplatesRequest(params=params), "resources/templates/list", _dump(params)
        )

    def extension_settings(self) -> dict[str, Any] | None:
        """The progressive-disclosure entry of the server's capabilities (`experimental` or `extensions`), if any."""
        caps = self.client.server_capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
        for field_name in ("extensions", "experimental"):
            group = caps.get(field_name)
            value = group.get(EXTENSION_ID) if isinstance(group, dict) else None
            if isinstance(value, dict):
                return value
        return None

    async def read(self, uri: str) -> Exchange:
        params = types.ReadResourceRequestParams(uri=uri)
        exchange = await self._send(types.ReadResourceRequest(params=params), "resources/read", {"uri": uri})
        self.reads.append(exchange)
        return exchange

    async def call(self, name: str, arguments: dict[str, Any], *, direct: bool = False) -> Exchange:
        """tools/call of `name`; through its route (`call_tool {name, arguments}`) unless `direct`."""
        via = None if direct else self.routes.get(name)
        if via is not None:
            name, arguments = via, {"name": name, "arguments": arguments}
        params = types.CallToolRequestParams(name=name, arguments=arguments)
        return await self._send(
            types.CallToolRequest(params=params), "tools/call", {"name": name, "arguments": arguments}
        )

    async def paginate(
        self, method: Literal["tools", "resources", "resourceTemplates"]
    ) -> tuple[list[dict[str, Any]], Exchange]:
        """Every item of a paginated listing, and the last exchange (its error, if one stopped the listing).

        Follows nextCursor for at most `MAX_PAGES` pages; a cursor that repeats or never ends is recorded
        in `pagination_problems` (the listing is then what was gathered so far).
        """
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        lister = {
            "tools": self.list_tools,
            "resources": self.list_resources,
            "resourceTemplates": self.list_resource_templates,
        }[method]
        for _page in range(MAX_PAGES):
            exchange = await lister(cursor)
            if exchange.result is None:
                return items, exchange
            page = exchange.result.get(method)
            items.extend(item for item in (page if isinstance(page, list) else []) if isinstance(item, dict))
            cursor = exchange.result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return items, exchange
            if cursor in seen:
                self.pagination_problems.append(
                    f"{exchange.method} returned the cursor {short(cursor, 60)!r} twice (page {len(seen) + 2})"
                )
                return items, exchange
            seen.add(cursor)
        self.pagination_problems.append(f"{exchange.method} still returned a nextCursor after {MAX_PAGES} pages")
        return items, exchange


def _dump(params: Any) -> dict[str, Any]:
    return cast(dict[str, Any], params.model_dump(by_alias=True, mode="json", exclude_none=True))


@dataclass
class _Stderr:
    file: IO[str] | None = field(default=None)

    def tail(self, limit: int = 2000) -> str:
        if self.file is None:
            return ""
        try:
            self.file.flush()
            self.file.seek(0)
            text = self.file.read()
        except (OSError, ValueError):
            return ""
        return text[-limit:]


_LEVEL = re.compile(r"\b(WARNING|WARN|ERROR|CRITICAL)\b")


def _warnings(text: str, limit: int = 20) -> list[str]:
    """The warning-or-worse records of a server's stderr, each with its continuation lines (a log formatter may
    wrap a long record over several indented lines), at most `limit`, each once."""
    records: list[str] = []
    current: str | None = None  # the warning record being read, if the last record was one
    for line in text.splitlines():
        if line[:1].isspace() and current is not None:
            current = f"{current} {line.strip()}"
            records[-1] = current
        elif _LEVEL.search(line):
            current = line.strip()
            records.append(current)
        else:
            current = None
    return [short(record, 400) for record in list(dict.fromkeys(records))[:limit]]


@dataclass
class _Refusal:
    """The first HTTP 401 or 403 of a connection, and the challenge it carried (`WWW-Authenticate`)."""

    status: int | None = None
    reason: str = ""
    challenge: str = ""

    async def hook(self, response: Any) -> None:  # an httpx2.Response (the SDK's HTTP client)
        if self.status is None and response.status_code in (401, 403):
            self.status, self.reason = response.status_code, response.reason_phrase
            self.challenge = response.headers.get("www-authenticate", "")

    def explain(self, target: Target) -> str:
        sent = [name for name, _ in target.headers]
        told = f"; WWW-Authenticate: {short(self.challenge, 300)}" if self.challenge else " (no WWW-Authenticate)"
        what = "refused the credentials" if sent else "requires credentials"
        fix = (
            f"check the value of {', '.join(dict.fromkeys(sent))}"
            if sent
            else "pass them with --header 'Authorization: Bearer ...', or from the environment with --bearer-env VAR "
            "or --header-env NAME=VAR (kept out of the shell history)"
        )
        return f"HTTP {self.status} {self.reason}: the server {what}{told}; {fix}"


@asynccontextmanager
async def connect(
    target: Target, mode: Mode, reads: list[Exchange] | None = None, routes: dict[str, str] | None = None
) -> AsyncIterator[Peer]:
    """Open one client on `target` in `mode`; raises `ConnectFailure` when no MCP session can be opened.

    A stdio server is started with this process's environment and its stderr is kept (shown on failure).
    """
    async with AsyncExitStack() as files_async, _connected(target, mode, reads, routes, files_async) as peer:
        yield peer


@asynccontextmanager
async def _connected(
    target: Target, mode: Mode, reads: list[Exchange] | None, routes: dict[str, str] | None, files_async: AsyncExitStack
) -> AsyncIterator[Peer]:
    refused = _Refusal()
    with ExitStack() as files:
        stderr = _Stderr()
        transport: Any
        if target.stdio is not None:
            stderr.file = files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
            params = StdioServerParameters(command=target.stdio[0], args=list(target.stdio[1:]), env=dict(os.environ))
            transport = stdio_client(params, errlog=stderr.file)
        else:
            assert target.url is not None
            # The SDK's own client factory (its timeouts), with our headers and a hook that keeps a 401/403 apart.
            http = await files_async.enter_async_context(create_mcp_http_client(headers=dict(target.headers) or None))
            http.event_hooks["response"].append(refused.hook)
            transport = streamable_http_client(target.url, http_client=http)
        heard: list[str] = []

        async def listen(message: Any) -> None:
            # Server notifications (a list_changed, say) arrive here; requests and exceptions are the SDK's.
            method = getattr(message, "method", None)
            if isinstance(method, str) and method.startswith("notifications/"):
                heard.append(method)

        client = Client(transport, mode=mode, cache=None, read_timeout_seconds=target.timeout, message_handler=listen)
        try:
            await client.__aenter__()
        except Exception as exc:
            raise _classify(exc, target, stderr.tail(), refused) from None
        try:
            peer = Peer(client, mode, target.timeout, reads, routes)
            peer.heard = heard
            yield peer
        finally:
            with suppress(Exception):  # a server that dies on disconnect is not this run's finding
                await client.__aexit__(None, None, None)
            if target.stdio is not None and not target.said:
                target.said.extend(_warnings(stderr.tail(64_000)) or ["(nothing)"])


class Held:
    """A session kept open by its own task, so that sessions can be closed in any order."""

    def __init__(self, peer: Peer, release: anyio.Event, closed: anyio.Event) -> None:
        self.peer = peer
        self._release = release
        self._closed = closed

    async def close(self) -> None:
        """End the session (stdio: the server process gets EOF; HTTP: DELETE) and wait until it is over."""
        self._release.set()
        await self._closed.wait()


class _Opening:
    """A session being opened by its own task: `held()` waits until it is up (or raises its ConnectFailure)."""

    def __init__(self) -> None:
        self.ready, self.release, self.closed = anyio.Event(), anyio.Event(), anyio.Event()
        self.peer: Peer | None = None
        self.error: ConnectFailure | None = None

    async def held(self) -> Held:
        await self.ready.wait()
        if self.error is not None:
            raise self.error
        assert self.peer is not None
        return Held(self.peer, self.release, self.closed)


class Pool:
    """Opens sessions, each held by a task of one task group; `async with Pool() as pool: await pool.open(...)`.

    Over stdio every session is a server process of its own, and starting one (the interpreter and the SDK's
    imports) is most of what a session costs: `warm` starts the processes a scenario is about to need all at once,
    and `open` hands them out in order."""

    def __init__(self) -> None:
        self._tg: TaskGroup | None = None
        self._releases: list[anyio.Event] = []
        self._warm: dict[tuple[int, Mode], deque[_Opening]] = {}
        self.reads: list[Exchange] = []  # every resources/read sent through any session of the pool
        self.routes: dict[str, str] = {}  # see Peer.routes; filled once the catalog is known

    async def __aenter__(self) -> Pool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        for release in self._releases:
            release.set()
        assert self._tg is not None
        return await self._tg.__aexit__(*exc)  # type: ignore[arg-type]

    def warm(self, target: Target, mode: Mode, count: int = 1) -> None:
        """Start `count` sessions of `mode` now, for the next `open`s of that mode. Stdio only: there a process
        started early is the same server as one started when asked (nothing shared, nothing sent until used); over
        HTTP an early session would be one the server sees, so HTTP sessions are opened only when asked for. A warm
        session nobody takes ends with the pool."""
        if target.stdio is None:
            return
        queue = self._warm.setdefault((id(target), mode), deque())
        queue.extend(self._start(target, mode) for _ in range(count))

    async def open(self, target: Target, mode: Mode, *, fresh: bool = False) -> Held:
        """A new session on `target` (a warm one if there is one, unless `fresh`: a process started now, for a
        session that must begin after something else ended); raises ConnectFailure."""
        queue = self._warm.get((id(target), mode))
        opening = queue.popleft() if queue and not fresh else self._start(target, mode)
        return await opening.held()

    def _start(self, target: Target, mode: Mode) -> _Opening:
        assert self._tg is not None, "use the pool in async with"
        opening = _Opening()
        self._releases.append(opening.release)

        async def hold() -> None:
            try:
                async with connect(target, mode, self.reads, self.routes) as peer:
                    opening.peer = peer
                    opening.ready.set()
                    await opening.release.wait()
            except ConnectFailure as exc:
                opening.error = exc
            finally:
                opening.ready.set()
                opening.closed.set()

        self._tg.start_soon(hold)
        return opening
