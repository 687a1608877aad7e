"""The agent's side of the wire: connect to any progressive-disclosure server and speak its three verbs.

A client only: it uses the `mcp` SDK's `Client` and knows the spec's documents by their published shapes,
never the reference server's code. `ServerSpec` says where the server is (the reference server started as a
subprocess, any stdio command, or a Streamable HTTP URL); `connect()` opens a session and returns a
`ProgressiveServer` with the minimal tool list, the server's instructions, and the `tool_descriptions`
resource found through `resources/list`.
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
from typing import IO, Any, Final
from urllib.parse import quote

from mcp import Client, MCPError, StdioServerParameters, stdio_client

__all__ = ["DEFAULT_RESOURCE_URI", "ProgressiveServer", "Reply", "ServerSpec", "connect"]

DEFAULT_RESOURCE_URI: Final = "resource:///tool_descriptions"
RESOURCE_NAME: Final = "tool_descriptions"
# Names per read when the ledger fetches a whole catalog (servers cap a read; the reference server at 64).
READ_CHUNK: Final = 50
TOOL_NOT_FOUND: Final = "TOOL_NOT_FOUND"


@dataclass(frozen=True)
class ServerSpec:
    """Where the server is: a command to run over stdio, or a Streamable HTTP URL."""

    label: str
    command: tuple[str, ...] = ()
    url: str | None = None

    @classmethod
    def reference(cls, *extra: str) -> ServerSpec:
        """The project's reference server (`python -m mcp_pd serve`), started fresh as a subprocess."""
        return cls("reference server", (sys.executable, "-m", "mcp_pd", "serve", *extra))

    @classmethod
    def simulation(cls, directory: str | Path, label: str | None = None) -> ServerSpec:
        """The reference server in simulation mode, serving every definition in `directory`."""
        command = (sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--no-watch", "--descriptions")
        return cls(label or f"simulation of {directory}", (*command, str(directory)))

    @classmethod
    def stdio(cls, command: str | Sequence[str]) -> ServerSpec:
        argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
        if not argv:
            raise ValueError("empty --stdio command")
        return cls(f"stdio: {shlex.join(argv)}", argv)

    @classmethod
    def http(cls, url: str) -> ServerSpec:
        return cls(f"http: {url}", url=url)


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
    extra: dict[str, Any] = field(default_factory=dict)

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
        )

    @property
    def tool_names(self) -> list[str]:
        return [str(t["name"]) for t in self.tools]

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
        body = _loads(text)
        missing: list[str] = []
        if isinstance(body, dict):
            missing = [n for n, entry in body.items() if isinstance(entry, dict) and "inputSchema" not in entry]
        found_any = isinstance(body, dict) and len(missing) < len(body)
        code = TOOL_NOT_FOUND if missing else None
        return Reply(text, not found_any, code, body, tuple(missing))

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
        names = self.tool_names
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


@asynccontextmanager
async def connect(spec: ServerSpec) -> AsyncIterator[ProgressiveServer]:
    """Open a fresh session (and, for a command, a fresh server process) for one task."""
    if spec.url is not None:
        async with Client(spec.url, cache=None) as client:
            yield await ProgressiveServer.open(client)
        return
    command, *args = spec.command
    params = StdioServerParameters(command=command, args=list(args), env=dict(os.environ))
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        try:
            async with Client(stdio_client(params, errlog=log), cache=None) as client:
                yield await ProgressiveServer.open(client)
        except Exception as exc:
            tail = _tail(log)
            if tail:
                exc.add_note(f"server stderr ({spec.label}):\n{tail}")
            raise
