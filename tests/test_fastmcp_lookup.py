"""On a FastMCP 4 server a read or a call asks FastMCP about its own names only (issue 44.1, PDX-FASTMCP-04).

The catalog's tools come from a FastMCP `Provider` that counts how often FastMCP lists it and looks a name up in it,
so each test sees what a request cost FastMCP: a read or a call never lists the catalog and a call looks its tool up
once, as the same FastMCP server without the extension does. What FastMCP would show each caller stays exact:
what only a listing shows (a mounted server's own middleware) is still decided by a listing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool
from fastmcp.utilities.versions import VersionSpec
from mcp_pd import ProgressiveDisclosure, selection_uri

pytestmark = pytest.mark.anyio


class Counted(Provider):
    """Tools served by name, counting FastMCP's listings of them and its lookups of each name."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        super().__init__()
        self.tools = {tool.name: tool for tool in tools}
        self.listings = 0
        self.lookups: list[str] = []

    async def _list_tools(self) -> Sequence[Tool]:
        self.listings += 1
        return list(self.tools.values())

    async def _get_tool(self, name: str, version: VersionSpec | None = None) -> Tool | None:
        self.lookups.append(name)
        return self.tools.get(name)


def counted_app(size: int, *, extension: bool) -> tuple[FastMCP[Any], Counted, list[str]]:
    ran: list[str] = []

    def echo(text: str) -> str:
        """Return the text."""
        ran.append(text)
        return text

    template = Tool.from_function(echo)
    provider = Counted([template.model_copy(update={"name": f"tool_{i}"}) for i in range(size)])
    app: FastMCP[Any] = FastMCP("counted", providers=[provider])
    if extension:
        ProgressiveDisclosure().install(app)
    return app, provider, ran


def body(contents: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(contents[0].text)
    return document


@pytest.mark.req("PDX-FASTMCP-04")
async def test_reads_and_calls_never_list_the_catalog() -> None:
    app, provider, ran = counted_app(200, extension=True)
    plain, plain_provider, _ = counted_app(200, extension=False)
    async with Client(app, mode="legacy") as client, Client(plain, mode="legacy") as bare:
        await client.list_tools()
        listed = provider.listings
        provider.lookups.clear()
        for name in ("tool_3", "tool_150", "tool_199"):
            assert "inputSchema" in body(await client.read_resource(selection_uri([name])))[name]
            assert (await client.call_tool(name, {"text": name})).structured_content == {"result": name}
        described = await client.call_tool("describe_tools", {"tools": ["tool_7", "tool_8"]})
        assert set(json.loads(described.content[0].text)) == {"tool_7", "tool_8"}  # type: ignore[union-attr]
        assert provider.listings == listed  # not one listing of the 200 tools
        # Each read looked its name up once; each call once too: FastMCP's own tools/call reused the gate's lookup.
        assert provider.lookups == [
            "tool_3",
            "tool_3",
            "tool_150",
            "tool_150",
            "tool_199",
            "tool_199",
            "tool_7",
            "tool_8",
        ]
        # The same FastMCP without the extension: one lookup per call.
        plain_provider.lookups.clear()
        assert (await bare.call_tool("tool_3", {"text": "x"})).structured_content == {"result": "x"}
        assert plain_provider.lookups == ["tool_3"]
    assert ran == ["tool_3", "tool_150", "tool_199"]


@pytest.mark.req("PDX-FASTMCP-04")
async def test_what_fastmcp_no_longer_finds_is_refused_by_name() -> None:
    """A tool gone from FastMCP after this session described it: FastMCP's lookup says so, the catalog still has it."""
    app, provider, ran = counted_app(50, extension=True)
    async with Client(app, mode="legacy") as client:
        await client.list_tools()
        await client.read_resource(selection_uri(["tool_9", "tool_10"]))
        assert not (await client.call_tool("tool_9", {"text": "a"}, raise_on_error=False)).is_error
        del provider.tools["tool_9"]
        refused = await client.call_tool("tool_9", {"text": "b"}, raise_on_error=False)
        error = json.loads(refused.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["code"] == "TOOL_NOT_FOUND" and "tool_9" not in error["available_tools"]
        assert "tool_10" in error["available_tools"]  # the refusal's suggestions: the listing, on this error path
        assert "error" in body(await client.read_resource(selection_uri(["tool_9"])))["tool_9"]
    assert ran == ["a"]


class HideWhenAsked(Middleware):
    """A mounted server's own middleware: hides `secret` from its listing once `hidden` is set."""

    def __init__(self) -> None:
        self.hidden = False

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tools = await call_next(context)
        return [t for t in tools if not (self.hidden and t.name == "secret")]


@pytest.mark.req("PDX-FASTMCP-04")
async def test_a_mounted_servers_own_middleware_still_decides() -> None:
    """FastMCP's per-name lookup does not run a mounted server's middleware, its listing does: such a tool is judged
    by the listing, so what that middleware hides is hidden through the extension too (however the catalog stands)."""
    app: FastMCP[Any] = FastMCP("parent")
    hider = HideWhenAsked()
    child: FastMCP[Any] = FastMCP("child", middleware=[hider])
    ran: list[str] = []

    @child.tool
    def secret() -> str:
        """Only while the child shows it."""
        ran.append("secret")
        return "s"

    @child.tool
    def open_door() -> str:
        """Always shown."""
        ran.append("open")
        return "o"

    app.mount(child, namespace="c")
    ProgressiveDisclosure().install(app)
    async with Client(app, mode="legacy") as client:
        assert {"c_secret", "c_open_door"} <= {t.name for t in await client.list_tools()}
        await client.read_resource(selection_uri(["c_secret", "c_open_door"]))
        assert not (await client.call_tool("c_secret", {}, raise_on_error=False)).is_error
        hider.hidden = True  # the catalog still holds c_secret, and FastMCP's get_tool still finds it
        refused = await client.call_tool("c_secret", {}, raise_on_error=False)
        assert json.loads(refused.content[0].text)["error"]["code"] == "TOOL_NOT_FOUND"  # type: ignore[union-attr]
        assert "error" in body(await client.read_resource(selection_uri(["c_secret"])))["c_secret"]
        assert not (await client.call_tool("c_open_door", {}, raise_on_error=False)).is_error
    assert ran == ["secret", "open"]


@pytest.mark.req("PDX-FASTMCP-04", "PDX-FASTMCP-02")
async def test_the_version_found_by_name_is_the_version_listed_and_run() -> None:
    """With its highest version disabled, FastMCP lists and runs the next one: the lookup the gate hands FastMCP's
    tools/call is that version (described, run), and a selector of the disabled one is still refused."""
    app: FastMCP[Any] = FastMCP("versions")
    ran: list[str] = []

    @app.tool(name="notes", version="1.0", annotations={"readOnlyHint": True})
    def notes_v1(query: str) -> str:
        """Find notes (the first implementation)."""
        ran.append("1.0")
        return "v1"

    @app.tool(name="notes", version="2.0", annotations={"destructiveHint": True})
    def notes_v2(query: str) -> str:
        """Find and delete notes (disabled)."""
        ran.append("2.0")
        return "v2"

    app.disable(names={"notes"}, version=VersionSpec(eq="2.0"))
    ProgressiveDisclosure().install(app)
    async with Client(app, mode="legacy") as client:
        (listed,) = [t for t in await client.list_tools() if t.name == "notes"]
        assert listed.meta is not None and listed.meta["fastmcp"]["version"] == "1.0"
        described = body(await client.read_resource(selection_uri(["notes"])))["notes"]
        assert described["annotations"] == {"readOnlyHint": True}
        assert (await client.call_tool("notes", {"query": "x"})).structured_content == {"result": "v1"}
        refused = await client.call_tool_mcp("notes", {"query": "x"}, meta={"fastmcp": {"version": "2.0"}})
        assert json.loads(refused.content[0].text)["error"]["code"] == "IMPLEMENTATION_NOT_DESCRIBED"  # type: ignore[union-attr]
    assert ran == ["1.0"]
