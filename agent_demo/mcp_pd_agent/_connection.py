"""The agent's side of the wire: connect to any progressive-disclosure server and speak its three verbs.

A client only: it uses the `mcp` SDK's `Client` and knows the spec's documents by their published shapes,
never the reference server's code. `ServerSpec` says where the server is (the reference server started as a
subprocess, any stdio command, or a Streamable HTTP URL); `connect()` opens a session and returns a
`ProgressiveServer` with the minimal tool list (every page), the server's instructions, the
`tool_descriptions` resource found through `resources/list`, the server's describe tool when it has one
(named in the extension's capability settings, `describeTool`), and its disclosure mode: a catalog-mode server
(`mode: "catalog"` in those settings, or a listing of `search_tools` and `call_tool` beside the describe tool)
lists meta-tools instead of its tools, which are found with `search_tools` / `browse_tools`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal, TypeAlias
from urllib.parse import quote

from mcp import Client, MCPError, StdioServerParameters, stdio_client

__all__ = [
    "BROWSE_TOOL",
    "CALL_TOOL",
    "DEFAULT_RESOURCE_URI",
    "SEARCH_TOOL",
    "ProgressiveServer",
    "Reply",
    "ServerMode",
    "ServerSpec",
    "ServerUnreachable",
    "connect",
    "find_describe_tool",
    "find_mode",
]

DEFAULT_RESOURCE_URI: Final = "resource:///tool_descriptions"
RESOURCE_NAME: Final = "tool_descriptions"
EXTENSION_ID: Final = "io.github.mcp-pd/progressive-disclosure"
DESCRIBE_TOOL: Final = "describe_tools"  # the name servers use when their capability settings do not say
# Names per read when the ledger fetches a whole catalog (servers cap a read; the reference server at 64).
READ_CHUNK: Final = 50
TOOL_NOT_FOUND: Final = "TOOL_NOT_FOUND"
# Catalog mode's meta-tools, by the names the extension fixes (spec/interpretations.md I-16).
SEARCH_TOOL: Final = "search_tools"
BROWSE_TOOL: Final = "browse_tools"
CALL_TOOL: Final = "call_tool"
# Pages per category when the ledger browses a whole catalog (the reference server shows 50 tools a page).
BROWSE_PAGES: Final = 1000

ServerMode: TypeAlias = Literal["progressive", "catalog"]


@dataclass(frozen=True)
class ServerSpec:
    """Where the server is: a command to run over stdio, or a Streamable HTTP URL."""

    label: str
    command: tuple[str, ...] = ()
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()  # sent with every HTTP request, e.g. ("Authorization", "Bearer T")

    @classmethod
    def reference(cls, *extra: str, mode: ServerMode = "progressive") -> ServerSpec:
        """The project's reference server (`python -m mcp_pd serve`), started fresh as a subprocess."""
        return cls("reference server", (sys.executable, "-m", "mcp_pd", "serve", *_mode_args(mode), *extra))

    @classmethod
    def simulation(
        cls, directory: str | Path, label: str | None = None, *, mode: ServerMode = "progressive"
    ) -> ServerSpec:
        """The reference server in simulation mode, serving every definition in `directory` (and its category
        subfolders)."""
        command = (sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--no-watch", *_mode_args(mode))
        return cls(label or f"simulation of {directory}", (*command, "--descriptions", str(directory)))

    @classmethod
    def stdio(cls, command: str | Sequence[str]) -> ServerSpec:
        argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
        if not argv:
            raise ValueError("empty --stdio command")
        return cls(f"stdio: {shlex.join(argv)}", argv)

    @classmethod
    def http(cls, url: str, headers: dict[str, str] | None = None) -> ServerSpec:
        """A Streamable HTTP endpoint; `headers` (e.g. `{"Authorization": "Bearer TOKEN"}`) go with every request."""
        return cls(f"http: {url}", url=url, headers=tuple((headers or {}).items()))


def _mode_args(mode: ServerMode) -> tuple[str, ...]:
    """Server options per mode. Catalog mode searches lexically here: every task starts a fresh server, and the
    embedding model's vectors arrive seconds after start, so hybrid results would depend on timing."""
    if mode == "catalog":
        return ("--mode", "catalog", "--lexical")
    if mode != "progressive":
        raise ValueError(f"unknown server mode {mode!r}: choose progressive or catalog")
    return ()


@dataclass(frozen=True)
class Reply:
    """What one read or call gave back: the text the model sees, and what the agent learned from it.

    `error_code` is the spec code when there is one (TOOL_DESCRIPTION_REQUIRED, MISSING_TOOL_SELECTION, ...),
    TOOL_NOT_FOUND when a read named unknown tools (spec 6.3: an entry, not a failed read), else None.
    """

    text: str
    is_error: bool = False
    error_code: str | None = None
    data: Any = None
    not_found: tuple[str, ...] = ()


def _error_code(document: Any) -> str | None:
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            return str(error["code"])
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _describe_reply(text: str, body: Any) -> Reply:
    """A successful describe document (resource read or describe tool): not-found entries make TOOL_NOT_FOUND."""
    missing: list[str] = []
    if isinstance(body, dict):
        missing = [n for n, entry in body.items() if isinstance(entry, dict) and "inputSchema" not in entry]
    found_any = isinstance(body, dict) and len(missing) < len(body)
    code = TOOL_NOT_FOUND if missing else None
    return Reply(text, not found_any, code, body, tuple(missing))


def _takes_tool_names(tool: dict[str, Any]) -> bool:
    """Whether a listed tool's input schema is `{"tools": [names]}` (the describe tool's shape)."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return False
    prop = (schema.get("properties") or {}).get("tools")
    return isinstance(prop, dict) and prop.get("type") == "array" and "tools" in (schema.get("required") or [])


def _settings(capabilities: Any) -> dict[str, Any]:
    """The extension's capability settings (under `extensions` in 2026-07-28, `experimental` before), or {}."""
    if capabilities is not None:
        for where in ("extensions", "experimental"):
            group = getattr(capabilities, where, None)
            if isinstance(group, dict) and isinstance(group.get(EXTENSION_ID), dict):
                return dict(group[EXTENSION_ID])
    return {}


def find_mode(capabilities: Any, tools: Sequence[dict[str, Any]]) -> ServerMode:
    """ "catalog" when the settings say `mode: "catalog"`, or (for a server that does not say) when it lists
    `search_tools` and `call_tool`: its tools are then found by searching; else "progressive"."""
    mode = _settings(capabilities).get("mode")
    if isinstance(mode, str):
        return "catalog" if mode == "catalog" else "progressive"
    listed = {str(t.get("name")) for t in tools}
    return "catalog" if {SEARCH_TOOL, CALL_TOOL} <= listed else "progressive"


def find_describe_tool(capabilities: Any, tools: Sequence[dict[str, Any]]) -> str | None:
    """The server's describe tool: the one its extension settings name, else a listed `describe_tools`
    that takes `{"tools": [...]}`; None when it has none (a tools-only host cannot fetch from such a server)."""
    listed = {str(t.get("name")): t for t in tools}
    named = _settings(capabilities).get("describeTool")
    if isinstance(named, str) and named in listed:
        return named
    fallback = listed.get(DESCRIBE_TOOL)
    return DESCRIBE_TOOL if fallback is not None and _takes_tool_names(fallback) else None


def selection_uri(base: str, names: Iterable[str]) -> str:
    """`base?tools=a,b` (names percent-encoded, commas kept as separators); the bare base for no names."""
    names = list(names)
    if not names:
        return base
    return f"{base}?tools=" + ",".join(quote(name, safe="") for name in names)


@dataclass
class ProgressiveServer:
    """One open session: the minimal list, the instructions, and reads/calls returned as `Reply`s."""

    client: Client
    tools: list[dict[str, Any]]
    instructions: str | None
    resource_uri: str = DEFAULT_RESOURCE_URI
    resource_description: str = ""
    resource_found: bool = True
    server_name: str = ""
    describe_tool: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    mode: ServerMode = "progressive"

    @classmethod
    async def open(cls, client: Client) -> ProgressiveServer:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):
            page = await client.list_tools(cursor=cursor)
            tools += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        uri, description, found = await _find_resource(client)
        info = client.server_info
        return cls(
            client,
            tools,
            client.instructions,
            uri,
            description,
            found,
            info.name if info is not None else "",
            find_describe_tool(client.server_capabilities, tools),
            mode=find_mode(client.server_capabilities, tools),
        )

    @property
    def tool_names(self) -> list[str]:
        """Every listed name, the describe tool included."""
        return [str(t["name"]) for t in self.tools]

    @property
    def task_tool_names(self) -> list[str]:
        """The listed tools that do the server's work: every name but the describe tool's (and, in catalog
        mode, but the meta-tools')."""
        own = {self.describe_tool, *((SEARCH_TOOL, BROWSE_TOOL, CALL_TOOL) if self.mode == "catalog" else ())}
        return [name for name in self.tool_names if name not in own]

    async def catalog_names(self) -> list[str]:
        """Every tool of a catalog-mode server, browsed category by category, page by page (pinned tools too)."""
        names = list(self.task_tool_names)
        listing = await self.call_tool(BROWSE_TOOL, {})
        categories = listing.data.get("categories") if isinstance(listing.data, dict) else None
        if listing.is_error or not isinstance(categories, list):
            raise RuntimeError(f"{BROWSE_TOOL} did not list the categories: {listing.text[:300]}")
        for category in categories:
            cursor: str | None = None
            for _ in range(BROWSE_PAGES):
                arguments = {"category": category["name"], **({"cursor": cursor} if cursor else {})}
                page = await self.call_tool(BROWSE_TOOL, arguments)
                if page.is_error or not isinstance(page.data, dict):
                    raise RuntimeError(f"{BROWSE_TOOL} {arguments} failed: {page.text[:300]}")
                names += [str(tool["name"]) for tool in page.data.get("tools", [])]
                cursor = page.data.get("nextCursor")
                if not cursor:
                    break
        return list(dict.fromkeys(names))

    async def read_descriptions(self, names: Sequence[str]) -> Reply:
        """Read `tool_descriptions?tools=...` (the bare URI when `names` is empty, as a model might)."""
        uri = selection_uri(self.resource_uri, names)
        try:
            result = await self.client.read_resource(uri)
        except MCPError as exc:
            data = exc.data
            text = json.dumps(data, ensure_ascii=False) if data is not None else exc.message
            return Reply(text, True, _error_code(data) or f"JSONRPC_{exc.code}", data)
        text = "\n".join(str(getattr(c, "text", "")) for c in result.contents)
        return _describe_reply(text, _loads(text))

    async def describe(self, arguments: dict[str, Any]) -> Reply:
        """Call the server's describe tool with the model's arguments, as they are (the tools-only way to fetch).

        Its success is the resource read's document (6.3 not-found entries included); its errors are the same
        error documents, as an error result.
        """
        if self.describe_tool is None:
            raise RuntimeError("this server has no describe tool")
        reply = await self.call_tool(self.describe_tool, arguments)
        if reply.is_error:
            return reply
        return _describe_reply(reply.text, reply.data)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Reply:
        try:
            result = await self.client.call_tool(name, arguments)
        except MCPError as exc:
            data = exc.data
            text = json.dumps({"error": {"code": exc.code, "message": exc.message, "data": data}}, ensure_ascii=False)
            return Reply(text, True, _error_code(data) or f"JSONRPC_{exc.code}", data)
        parts: list[str] = []
        for block in result.content:
            block_text = getattr(block, "text", None)
            parts.append(block_text if isinstance(block_text, str) else f"[{block.type} content]")
        structured = result.structured_content
        if not parts and structured is not None:
            parts.append(json.dumps(structured, ensure_ascii=False))
        text = "\n".join(parts)
        data = structured if structured is not None else _loads(text)
        code = _error_code(data) if result.is_error else None
        return Reply(text, bool(result.is_error), code or ("TOOL_ERROR" if result.is_error else None), data)

    async def fetch_all_definitions(self) -> dict[str, dict[str, Any]]:
        """Every full definition, read in chunks (what an eager client would have put in the prompt)."""
        definitions: dict[str, dict[str, Any]] = {}
        names = await self.catalog_names() if self.mode == "catalog" else self.task_tool_names
        for start in range(0, len(names), READ_CHUNK):
            reply = await self.read_descriptions(names[start : start + READ_CHUNK])
            if isinstance(reply.data, dict):
                for name, entry in reply.data.items():
                    if isinstance(entry, dict) and "inputSchema" in entry:
                        definitions[name] = entry
        return definitions


async def _find_resource(client: Client) -> tuple[str, str, bool]:
    """The tool_descriptions resource from resources/list (or its template), else the spec's default URI."""
    try:
        listing = await client.list_resources()
        for resource in listing.resources:
            uri = str(resource.uri)
            if resource.name == RESOURCE_NAME or uri.split("?")[0].rstrip("/").endswith("/" + RESOURCE_NAME):
                return uri.split("?")[0], resource.description or "", True
        templates = await client.list_resource_templates()
        for template in templates.resource_templates:
            base = template.uri_template.split("{")[0].split("?")[0]
            if template.name == RESOURCE_NAME or base.rstrip("/").endswith("/" + RESOURCE_NAME):
                return base, template.description or "", True
    except MCPError:
        pass
    return DEFAULT_RESOURCE_URI, "", False


def _tail(log: IO[str], limit: int = 2000) -> str:
    log.seek(0)
    return log.read()[-limit:].strip()


class ServerUnreachable(Exception):
    """The server could not be reached or would not open a session: one line saying why (no traceback needed)."""


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _unreachable(spec: ServerSpec, exc: BaseException, statuses: Sequence[int]) -> ServerUnreachable:
    """What opening a session with `spec` raised, in one line (the SDK reports every HTTP status as -32603)."""
    leaves = _leaves(exc)
    leaf, names = leaves[0], {type(e).__name__ for e in leaves}
    token = any(name.lower() == "authorization" for name, _ in spec.headers)
    if 401 in statuses:
        why = "refused the token (401 Unauthorized)" if token else "needs a bearer token (401 Unauthorized)"
    elif statuses:
        why = f"answered HTTP {statuses[0]}: check the URL (mcp-pd serves /mcp)"
    elif isinstance(leaf, FileNotFoundError):
        why = f"cannot start: command not found: {leaf.filename or leaf}"
    elif "UnsupportedProtocol" in names:
        why = "is not an http:// or https:// URL"
    elif names & {"ConnectError", "ConnectTimeout"}:
        why = f"cannot be reached ({leaf}): is the server running?"
    elif isinstance(leaf, MCPError) and leaf.error.message == "Connection closed":
        why = "closed the connection before the handshake ended (a stdio server that exited?)"
    else:
        why = f"failed: {type(leaf).__name__}: {leaf}"
    return ServerUnreachable(f"the server ({spec.label}) {why}")


@asynccontextmanager
async def connect(spec: ServerSpec) -> AsyncIterator[ProgressiveServer]:
    """Open a fresh session (and, for a command, a fresh server process) for one task; `ServerUnreachable` (one
    line) when the session cannot be opened."""
    opened = False
    statuses: list[int] = []
    last_words = ""
    try:
        if spec.url is not None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async def record(response: Any) -> None:
                if response.status_code >= 400:
                    statuses.append(response.status_code)

            http = create_mcp_http_client(headers=dict(spec.headers))
            http.event_hooks["response"].append(record)
            async with http, Client(streamable_http_client(spec.url, http_client=http), cache=None) as client:
                server = await ProgressiveServer.open(client)
                opened = True
                yield server
            return
        command, *args = spec.command
        params = StdioServerParameters(command=command, args=list(args), env=dict(os.environ))
        with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
            try:
                async with Client(stdio_client(params, errlog=log), cache=None) as client:
                    server = await ProgressiveServer.open(client)
                    opened = True
                    yield server
            except Exception as exc:
                tail = _tail(log)
                if tail:
                    exc.add_note(f"server stderr ({spec.label}):\n{tail}")
                    last_words = tail.splitlines()[-1].strip()
                raise
    except Exception as exc:
        if opened:
            raise
        unreachable = _unreachable(spec, exc, statuses)
        if last_words:
            unreachable.args = (f"{unreachable}; its stderr ended with: {last_words[:300]}",)
        raise unreachable from exc
