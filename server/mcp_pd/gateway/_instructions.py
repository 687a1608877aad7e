"""What each upstream tells its clients (its `instructions`), and how that reaches a session that began while the
upstream was still starting (the gateway answers the handshake at once: `_server.py`).

Three ways, each covering what the one before cannot (spec/interpretations.md I-50):

1. **Remembered.** The instructions each upstream gave at its last start are kept in a small state file
   (`gateway-instructions.json` in the user's cache directory, `$MCP_PD_CACHE_DIR`), keyed by a digest of its config
   entry (never the entry itself: its env may hold secrets); with `--cache`, the export's copy counts too. A session
   that begins before the upstream is up gets that text at once, so from the second start on nothing waits.
2. **A short wait at the handshake.** `initialize` (and `server/discover`) wait, at most `--instructions-wait`
   seconds counted from the moment the upstreams began to start (default 1), for upstreams on their first start
   whose instructions are known in none of those ways: one that is nearly up makes it into the first session's
   instructions; a slow one costs that handshake the bound, once (the next start remembers it). A client that
   connects later waits for nothing.
3. **With the first description of its tools.** A session whose instructions lacked an upstream's (it was still
   starting, or what was remembered has changed since) receives them with its first description of one of that
   upstream's tools: a further text block of the `describe_tools` result, and under `_meta` of a descriptions
   read (whose contents stay the one document the spec defines). Once per session and upstream; forgotten when the
   session ends. A request that belongs to no lasting session (2026-07-28 over HTTP without a token) is not
   tracked: it gets the current instructions from `server/discover` instead.

The gateway's own text (which upstream serves which tools, then each upstream's instructions) is composed here too
(`compose`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from mcp_pd._sessions import ClientId
from mcp_pd._uri import SelectionError, is_descriptions_uri, parse_selection

from ._config import UpstreamConfig
from ._names import Route
from ._pool import Upstream, UpstreamPool
from ._tasks import runs_tasks

__all__ = [
    "INSTRUCTIONS_META",
    "INSTRUCTIONS_WAIT",
    "MEMORY_FILE",
    "InstructionsDelivery",
    "InstructionsMemory",
    "compose",
    "delivery",
    "fingerprint",
]

logger = logging.getLogger("mcp_pd.gateway")

MEMORY_FILE: Final = "gateway-instructions.json"
# The handshake's wait for upstreams whose instructions are unknown: well inside a host's connect timeout, and
# inside PDX-START-01's first answer (2 s from the start, tests/gateway/test_fast_start.py).
INSTRUCTIONS_WAIT: Final = 1.0
# Where a descriptions read carries instructions its session has not received (its contents stay the document).
INSTRUCTIONS_META: Final = "io.github.mcp-pd/upstream-instructions"
# The state file holds at most this many upstreams (the least recently seen go first) and texts up to this size:
# what a config's upstreams can make the gateway keep on disk is bounded.
_MEMORY_ENTRIES: Final = 256
_MEMORY_TEXT: Final = 64 * 1024


def fingerprint(config: UpstreamConfig) -> str:
    """A one-way digest of what makes an upstream the same server across starts (its name, how it is run or
    reached, its environment); the state file is keyed by it, so no env value or header is written there."""
    entry = {
        "name": config.name,
        "command": config.command,
        "args": list(config.args),
        "cwd": config.cwd,
        "url": config.url,
        "env": sorted(config.env.items()),
        "headers": sorted(config.headers.items()),
    }
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode("utf-8")).hexdigest()


class InstructionsMemory:
    """The instructions each upstream gave at its last start, in one JSON file shared by every gateway process of
    this user (written whole and renamed into place, so a reader never sees half a file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            with self.path.open("rb") as file:
                data = json.loads(file.read(_MEMORY_ENTRIES * (_MEMORY_TEXT + 512)))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # a broken file costs the memory, never the start
            logger.warning("%s unreadable, starting without remembered instructions: %s", self.path, exc)
            return {}
        entries = data.get("upstreams") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(v, dict) and isinstance(v.get("instructions"), str)}

    def recall(self, config: UpstreamConfig) -> str | None:
        """What `config`'s upstream's instructions said at its last start ("" for none), None when not known."""
        entry = self._entries.get(fingerprint(config))
        return None if entry is None else str(entry["instructions"])

    def recall_tasks(self, config: UpstreamConfig) -> bool | None:
        """Whether `config`'s upstream ran task-augmented calls at its last start (None: not known)."""
        entry = self._entries.get(fingerprint(config))
        return None if entry is None else bool(entry.get("tasks", False))

    def remember(self, config: UpstreamConfig, text: str | None, *, tasks: bool = False) -> bool:
        """Keep what `config`'s upstream said at this start; True when the file needs writing."""
        key = fingerprint(config)
        text = text if text is not None and len(text) <= _MEMORY_TEXT else ""  # a text too long is not kept
        entry = self._entries.get(key, {})
        if entry.get("instructions") == text and entry.get("tasks", False) == tasks:
            return False
        self._entries[key] = {"instructions": text, "tasks": tasks, "seen": time.time()}
        return True

    def write(self) -> None:
        """Write the file (merged with what other processes wrote meanwhile; blocking: call in a worker thread)."""
        others = InstructionsMemory(self.path)._entries
        entries = {**others, **self._entries}
        kept = sorted(entries.items(), key=lambda item: float(item[1].get("seen", 0)), reverse=True)
        data = {"upstreams": dict(kept[:_MEMORY_ENTRIES])}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".instructions-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file, ensure_ascii=False)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


class InstructionsDelivery:
    """Which instructions each session received, the handshake's bounded wait, and the delivery of the rest with a
    session's first description of an upstream's tools (see the module's docstring)."""

    def __init__(
        self,
        pool: UpstreamPool,
        *,
        cached: Callable[[str], str | None],
        routes: Callable[[str], str | None],
        memory: InstructionsMemory | None = None,
        wait: float = INSTRUCTIONS_WAIT,
    ) -> None:
        self.pool = pool
        self.cached = cached  # the export's copy (--cache), by upstream name
        self.routes = routes  # served tool name -> its upstream's name
        self.memory = memory
        self.wait = max(0.0, wait)
        self.began = time.monotonic()  # when the upstreams began to start: the wait is counted from here
        # client key -> {upstream: the text that client has of it}; dropped when the client's session ends.
        self._given: dict[str, dict[str, str]] = {}
        self._writing = False
        self._dirty = False
        self._client: Callable[[ServerRequestContext[Any, Any]], ClientId] = _nobody
        # Under a policy (`--policy`) an upstream's own text may name tools a client may not see: never sent.
        self.private = False

    # -- what is known of each upstream -------------------------------------------------------------
    def known(self, upstream: Upstream) -> str | None:
        """The upstream's instructions as best known now: live, else the export's, else remembered ("": it has
        none); None when nothing is known of them yet."""
        if upstream.instructions is not None or upstream.tools is not None:
            return upstream.instructions  # it has started: what it said (nothing, maybe) is the truth
        text = self.cached(upstream.name)
        if text is None and self.memory is not None:
            text = self.memory.recall(upstream.config)
        return text

    def texts(self) -> dict[str, str]:
        """{upstream: its instructions} for every upstream with any known now."""
        found = {name: self.known(u) for name, u in self.pool.upstreams.items()}
        return {name: text.strip() for name, text in found.items() if text and text.strip()}

    def tasks(self, upstream: Upstream) -> bool | None:
        """Whether an upstream not up yet ran task-augmented calls at its last start (None: not known)."""
        return None if self.memory is None else self.memory.recall_tasks(upstream.config)

    def unknown(self) -> list[Upstream]:
        """Upstreams on their first start whose instructions are known in no way yet."""
        return [u for u in self.pool.first_starting() if self.known(u) is None]

    async def upstream_listed(self, upstream: Upstream) -> None:
        """A pool listener: remember what an upstream said at this start (written off the event loop)."""
        if self.memory is None or upstream.key != upstream.name or upstream.tools is None:
            return
        self._dirty |= self.memory.remember(upstream.config, upstream.instructions, tasks=runs_tasks(upstream))
        if self._writing:
            return  # the write under way goes round again for this one
        self._writing = True
        try:
            while self._dirty:
                self._dirty = False
                await anyio.to_thread.run_sync(self.memory.write)
        except OSError as exc:
            logger.warning("could not remember upstream instructions in %s: %s", self.memory.path, exc)
        finally:
            self._writing = False

    # -- the handshake ---------------------------------------------------------------------------------
    async def settle(self) -> None:
        """Wait (bounded: `wait` seconds after the upstreams began to start) for the upstreams whose instructions
        are unknown to list; returns at once once the bound has passed or nothing is unknown."""
        left = self.began + self.wait - time.monotonic()
        pending = self.unknown()
        if left <= 0 or not pending:
            return
        with anyio.move_on_after(left):
            await self.pool.first_listings(pending)

    def install(
        self,
        server: Server[Any],
        client: Callable[[ServerRequestContext[Any, Any]], ClientId],
        *,
        describe_tool: str | None,
        resource_uri: str,
        max_tools: int,
    ) -> None:
        """On `server` (with the extension installed): the handshake's middleware, and the describe tool's
        `tools/call` and descriptions reads wrapped outside the extension (only what it answered without refusing
        carries instructions). `client`: which client a request comes from (the extension's answer)."""
        self._client = client
        server.middleware.append(self._handshake(server))
        call = server.get_request_handler("tools/call")
        if call is not None and describe_tool:
            server.add_request_handler("tools/call", call.params_type, self._described(call.handler, describe_tool))
        read = server.get_request_handler("resources/read")
        if read is not None:
            handler = self._read(read.handler, resource_uri, max_tools)
            server.add_request_handler("resources/read", read.params_type, handler)

    def _handshake(self, server: Server[Any]) -> Any:
        """`initialize` and `server/discover` wait as `settle` says and carry the instructions as they are once
        that wait is over; what they carried is recorded for the client."""

        async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
            if ctx.method not in ("initialize", "server/discover"):
                return await call_next(ctx)
            await self.settle()
            result = await call_next(ctx)
            if isinstance(result, dict) and ctx.method == "initialize" and server.instructions is not None:
                # Over stdio the handshake's options were built before any upstream was up: what is true now wins.
                result["instructions"] = server.instructions
            who = self._client(ctx)
            if who.lasting:
                self._given[who.key] = self.texts()
            return result

        return middleware

    def left(self, client: str) -> None:
        """A session listener: what a client had received is let go when it leaves."""
        self._given.pop(client, None)

    # -- delivery with a description -----------------------------------------------------------------------
    def owed(self, client: ClientId, names: Iterable[str]) -> dict[str, str]:
        """{upstream: instructions} of the upstreams serving `names` that `client` has not received as they are
        now; recorded as received."""
        if not client.lasting or self.private:
            return {}
        given = self._given.setdefault(client.key, {})
        texts = self.texts()
        owed: dict[str, str] = {}
        for name in names:
            upstream = self.routes(name)
            if upstream is None or upstream in owed:
                continue
            text = texts.get(upstream)
            if text is not None and given.get(upstream) != text:
                owed[upstream] = given[upstream] = text
        return owed

    def _described(self, handler: Any, describe_tool: str) -> Any:
        async def described(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            result = await handler(ctx, params)
            if params.name != describe_tool or not isinstance(result, types.CallToolResult) or result.is_error:
                return result
            asked = (params.arguments or {}).get("tools")
            names = [n for n in asked if isinstance(n, str)] if isinstance(asked, list) else []
            owed = self.owed(self._client(ctx), names)
            if not owed:
                return result
            blocks = [types.TextContent(type="text", text=_block(name, text)) for name, text in owed.items()]
            return result.model_copy(update={"content": [*result.content, *blocks]})

        return described

    def _read(self, handler: Any, resource_uri: str, max_tools: int) -> Any:
        async def read(ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
            result = await handler(ctx, params)
            if not isinstance(result, types.ReadResourceResult) or not is_descriptions_uri(params.uri, resource_uri):
                return result
            try:
                names = parse_selection(params.uri, resource_uri, max_tools)
            except SelectionError:
                return result
            owed = self.owed(self._client(ctx), names)
            if not owed:
                return result
            return result.model_copy(update={"meta": {**(result.meta or {}), INSTRUCTIONS_META: owed}})

        return read


def compose(pool: UpstreamPool, routes: Mapping[str, Route], texts: Mapping[str, str], *, private: bool = False) -> str:
    """A gateway's instructions: which upstream serves which tools (`routes`: served name -> route), then the
    upstreams' own `texts`. `private` (a policy decides who sees which tool): no tool named, no upstream's text
    (those name their tools too)."""
    names = list(pool.upstreams)
    parts = [f"This gateway serves the tools of {len(names)} MCP server(s): {', '.join(names)}."]
    if private:
        parts.append("Which tools each of them serves, and which you may use, is in tools/list.")
        return "\n\n".join(parts)
    served: dict[str, list[str]] = {}
    for name, route in routes.items():
        served.setdefault(route.server, []).append(name)
    lines = []
    for name in names:  # which tools are whose: two instances of one server list the same tools
        tools = served.get(name, [])
        upstream = pool.upstreams[name]
        label = upstream.config.label
        shown = ", ".join(tools[:8]) + (f" and {len(tools) - 8} more" if len(tools) > 8 else "")
        if not shown and upstream.state == "starting" and upstream.tools is None:
            # A session keeps the text it was given at its start: say what happens next, which stays true.
            shown = (
                "was still starting when this was written (its tools are announced with tools/list_changed once it "
                "is up, and its instructions come with the first description of its tools)"
            )
        lines.append(f"- {name}" + (f" ({label})" if label != name else "") + f": {shown or 'no tools yet'}")
    parts.append("\n".join(lines))
    parts.extend(f"## {name}\n{text}" for name, text in texts.items())
    return "\n\n".join(parts)


def _nobody(ctx: ServerRequestContext[Any, Any]) -> ClientId:
    return ClientId("", lasting=False)  # until installed: nobody is tracked


def _block(upstream: str, text: str) -> str:
    return (
        f"Instructions of the MCP server '{upstream}' (it was still starting when this session began, so they "
        f"were not in the server's instructions then):\n{text}"
    )


def delivery(
    pool: UpstreamPool,
    *,
    cached: Mapping[str, str | None],
    routes: Callable[[str], str | None],
    remember: bool,
    wait: float,
) -> InstructionsDelivery:
    """The gateway's delivery: remembered in the user's cache directory unless `remember` is off."""
    memory = None
    if remember:
        from mcp_pd._search.store import default_cache_dir

        memory = InstructionsMemory(default_cache_dir() / MEMORY_FILE)
    return InstructionsDelivery(pool, cached=cached.get, routes=routes, memory=memory, wait=wait)
