"""What a server tells clients before any call: the extension's capability settings, in both protocol eras, its
instructions (the workflow and a summary of what it offers, before the author's own text), how long its listings
may be cached, and why `server/discover` is refused where no session can be had.

Knows the catalog and the extension's settings; nothing of grants, sessions or handlers.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any, Final

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._errors import ErrorCode
from ._guidance import catalog_guidance, catalog_summary, describe_tool_guidance, system_prompt_guidance
from ._metatools import BROWSE_TOOL, CALL_TOOL, SEARCH_TOOL
from ._store import Catalog

__all__ = ["EXTENSION_ID", "Advertiser", "cache_hints", "discover_refusal"]

EXTENSION_ID: Final = "io.github.mcp-pd/progressive-disclosure"
# Hosts such as Claude Code cut `instructions` at 2,048 characters: the generated part fits before that.
_INSTRUCTIONS_BUDGET: Final = 2000
# The tool summary in them: enough to see what the server offers; tools/list has the rest (each character is
# paid by every request of every session: benchmarks/README.md, context).
_SUMMARY_BUDGET: Final = 480
_RELOADING_TTL_MS: Final = 30_000
_STATIC_TTL_MS: Final = 300_000


class Advertiser:
    """The capability settings and instructions of one server with the extension installed."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        resource_uri: str,
        mode: str,
        describe_tool: str | None,
        instructions: bool,
        private_names: bool = False,
    ) -> None:
        self.catalog = catalog
        # With a permission hook some callers may not see some tools, and instructions go to every caller: the
        # summary then says how many tools there are by category, never their names (as catalog mode does).
        self.private_names = private_names
        self.resource_uri = resource_uri
        self.mode = mode
        self.describe_tool = describe_tool
        self.add_instructions = instructions
        self._server: Server[Any] | None = None
        self._mcpserver: MCPServer[Any] | None = None
        self._author: str | None = None

    def settings(self) -> dict[str, Any]:
        """The extension's settings, as clients of either era see them in the server capabilities."""
        settings: dict[str, Any] = {"resourceUri": self.resource_uri, "mode": self.mode}
        if self.describe_tool:
            settings["describeTool"] = self.describe_tool
        if self.mode == "catalog":
            settings["metaTools"] = [SEARCH_TOOL, BROWSE_TOOL, self.describe_tool, CALL_TOOL]
        if self.mode != "eager":
            # 2026-07-28 clients may get no `instructions`; the workflow travels with the capability too.
            settings["workflow"] = self.workflow()
        return settings

    def workflow(self) -> str:
        if self.mode == "catalog":
            return catalog_guidance(self.resource_uri)
        text = system_prompt_guidance(self.resource_uri)
        return f"{text} {describe_tool_guidance(self.describe_tool)}" if self.describe_tool else text

    def install(self, lowlevel: Server[Any], server: MCPServer[Any] | Server[Any]) -> None:
        """Advertise on `lowlevel` (the settings under `extensions`, the instructions) however the server is run."""
        self._server = lowlevel
        self._mcpserver = server if isinstance(server, MCPServer) else None
        lowlevel.extensions[EXTENSION_ID] = self.settings()
        self._author = lowlevel.instructions
        self._advertise_truthfully(lowlevel)
        self.refresh()

    def _advertise_truthfully(self, lowlevel: Server[Any]) -> None:
        """Make every way of running the server advertise what the extension sends.

        `streamable_http_app()` and `MCPServer.run()` build their initialization options with defaults, which
        say `tools.listChanged: false` although changed definitions are announced; the handshake era also has
        no `extensions`, so the extension is named under `experimental` there.
        """
        original = lowlevel.create_initialization_options

        def create_initialization_options(
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            given = notification_options or NotificationOptions()
            options = NotificationOptions(
                prompts_changed=given.prompts_changed,
                resources_changed=given.resources_changed,
                tools_changed=True,
            )
            experimental = {**(experimental_capabilities or {}), EXTENSION_ID: self.settings()}
            self.refresh()
            return original(options, experimental, extensions)

        lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]
        capabilities = lowlevel.get_capabilities

        def get_capabilities(
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
            *,
            protocol_version: str | None = None,
        ) -> types.ServerCapabilities:
            found = capabilities(
                notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
            )
            return self._same_in_both_eras(lowlevel, found)

        lowlevel.get_capabilities = get_capabilities  # type: ignore[method-assign]

    def _same_in_both_eras(self, lowlevel: Server[Any], found: types.ServerCapabilities) -> types.ServerCapabilities:
        """One server, one answer: 2026-07-28 derives every `listChanged` from `subscriptions/listen` (which the
        extension serves), so the handshake era says the same; and an `MCPServer`, which always answers
        `prompts/list`, does not advertise prompts it does not have."""
        update: dict[str, Any] = {}
        listen = lowlevel.get_request_handler("subscriptions/listen") is not None
        if found.prompts is not None:
            prompts = getattr(self._mcpserver, "_prompt_manager", None)  # private: guarded, as tools are below
            if prompts is not None and not prompts.list_prompts():
                update["prompts"] = None
            elif listen:
                update["prompts"] = found.prompts.model_copy(update={"list_changed": True})
        if found.resources is not None and listen:
            update["resources"] = found.resources.model_copy(update={"list_changed": True})
        return found.model_copy(update=update) if update else found

    def set_author_instructions(self, text: str | None) -> None:
        """Replace the server author's part of the instructions (a gateway's changes as its upstreams come up)
        and advertise the result; with nothing generated (eager mode, instructions off) it is the whole text."""
        self._author = text
        if self._server is not None and (not self.add_instructions or self.mode == "eager"):
            self._server.instructions = text
        self.refresh()

    def refresh(self) -> None:
        """The server's instructions: the workflow and a summary of what it offers first, then the author's."""
        if not self.add_instructions or self._server is None or self.mode == "eager":
            return
        workflow = self.workflow()
        summary = self._summary(min(_SUMMARY_BUDGET, _INSTRUCTIONS_BUDGET - len(workflow) - 1))
        generated = f"{workflow}\n{summary}" if summary else workflow
        self._server.instructions = f"{generated}\n\n{self._author}" if self._author else generated

    def _summary(self, budget: int) -> str:
        catalog = self.catalog
        names = catalog.names() if catalog.complete else self._names_before_listing()
        groups: dict[str, list[str]] = {}
        for name in names:
            category = catalog.category(name) if name in catalog else catalog.store.category(name)
            groups.setdefault(category or "", []).append(name)
        if not groups or budget < 80:
            return ""
        # Catalog mode lists no tool names: the categories and their sizes, for browse_tools.
        ordered = {k: sorted(v) for k, v in sorted(groups.items())}
        return catalog_summary(ordered, budget, names=self.mode != "catalog" and not self.private_names)

    def _names_before_listing(self) -> list[str]:
        """Tool names for the summary before the first listing (instructions are built synchronously)."""
        names = set(self.catalog.store.names())
        # An MCPServer's registered tools are known without listing; its tool manager is private, so guarded.
        manager = getattr(self._mcpserver, "_tool_manager", None)
        with suppress(Exception):
            names.update(tool.name for tool in manager.list_tools())  # type: ignore[union-attr]
        return sorted(names)


def cache_hints(
    page: dict[str, Any], protocol_version: str | None, *, reloading: bool, per_caller: bool
) -> dict[str, Any]:
    """2026-07-28 cache directives on a listing, truthful: listings change only on reload (and are announced;
    `reloading`: definition files are watched), and differ per caller only when a permission hook filters them."""
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        # Subscribers hear of a change at once; for clients that do not subscribe, the TTL is how stale a listing
        # may get: an edited definition file is seen within 30 s, tools registered at run time within 5 minutes.
        page["ttlMs"] = _RELOADING_TTL_MS if reloading else _STATIC_TTL_MS
        page["cacheScope"] = "private" if per_caller else "public"
    return page


def discover_refusal() -> MCPError:
    """server/discover refused on sessionless HTTP without a session identity (spec/sessions.md).

    -32601 is what makes auto-negotiating clients fall back to the handshake era, where Mcp-Session-Id keys
    authorization; the message and data say why, for clients pinned to 2026-07-28 that cannot.
    """
    return MCPError(
        types.METHOD_NOT_FOUND,
        "server/discover is not offered: this server authorizes tools per session "
        "(MCP progressive disclosure), and over HTTP a session needs the 2025-11-25 initialize handshake. "
        "Connect with protocol version 2025-11-25 (initialize, then Mcp-Session-Id).",
        {
            "reason": ErrorCode.SESSION_REQUIRED.value,
            "extension": EXTENSION_ID,
            "supportedProtocolVersions": ["2025-11-25"],
            "howToConnect": "Send initialize with protocolVersion 2025-11-25 and keep the Mcp-Session-Id "
            "header the server returns (Python SDK: mcp.Client(url, mode='legacy')).",
        },
    )
