"""The two decisions of the data path, each made in one place: `describe` (what a read returns and grants)
and `gate` (whether a call may run).

The resource read and the `describe_tools` tool both call `describe`; `tools/call` and the catalog's
`call_tool` both call `gate`, so authorization, errors and limits exist once. Knows the catalog, the grant
store and the policies; knows nothing about URIs, SDK handlers or result envelopes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio.lowlevel
import anyio.to_thread

from ._churn import SessionChurn
from ._errors import RETRYABLE, ErrorCode, Refusal
from ._grants import GrantStore, GrantStoreUnavailable
from ._model import RATE_LIMITED, tool_description_required, tool_not_found
from ._policy import Caller, FetchLimiter, ToolPermission
from ._store import Catalog
from ._suggest import NameSuggester

__all__ = ["Described", "Disclosure"]

logger = logging.getLogger("mcp_pd")

# A name missing from the catalog makes it re-list the server's tools, at most this often: tools registered
# at run time are found, and hostile unknown names cannot make every request re-list a large catalog.
REFRESH_INTERVAL: Final = 0.25
GRANTS_UNAVAILABLE: Final[str] = ErrorCode.GRANTS_UNAVAILABLE.value
# Unknown names answered between two yields to the event loop in one read.
_NAMES_PER_STEP: Final = 4
# Up to this many names the suggestion index is built inline (a few ms); past it, in a worker thread.
_INLINE_INDEX: Final = 2_000
TOOL_NOT_FOUND: Final[str] = ErrorCode.TOOL_NOT_FOUND.value

Relist = Callable[[], Awaitable[None]]
Look = Callable[[Sequence[str] | None], Awaitable[None]]


@dataclass
class Described:
    """One read's answer: an entry per requested name (a full definition or a not-found entry)."""

    entries: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    _catalog: Catalog | None = None

    def document(self) -> dict[str, Any]:
        """`{name: full definition or not-found entry}`, in request order (spec 4.4)."""
        return {name: full if full is not None else missing for name, full, missing in self.entries}

    def text(self) -> str:
        """`json.dumps(document())`, assembled from each definition's cached text (serialized once per version)."""
        parts = []
        for name, full, missing in self.entries:
            body = self._catalog.full_text(name) if full is not None and self._catalog is not None else None
            if body is None:
                body = json.dumps(full if full is not None else missing, ensure_ascii=False)
            parts.append(f"{json.dumps(name, ensure_ascii=False)}: {body}")
        return "{" + ", ".join(parts) + "}"


class Disclosure:
    """`describe` and `gate` over one catalog, grant store and set of policies."""

    def __init__(
        self,
        catalog: Catalog,
        grants: GrantStore,
        *,
        resource_uri: str,
        permission: ToolPermission | None,
        rate_limiter: FetchLimiter | None,
        describe_tool: str | None = None,
        own_tools: frozenset[str] = frozenset(),
        churn: SessionChurn | None = None,
    ) -> None:
        self.catalog = catalog
        self.grants = grants
        self.resource_uri = resource_uri
        self.permission = permission
        self.rate_limiter = rate_limiter
        # The extension's own tools (describe_tools, catalog mode's meta-tools): never gated, never described.
        # The describe tool is also named in TOOL_DESCRIPTION_REQUIRED as a way out.
        self.describe_tool = describe_tool
        self.own_tools = own_tools | ({describe_tool} if describe_tool else set())
        self.churn = churn
        # A permission that must learn what it decides before it is asked (a FastMCP server's: FastMCP answers one
        # name at a time, or lists everything): awaited with the names about to be asked about, None for all.
        self.look: Look | None = None
        self._refreshing: asyncio.Future[None] | None = None
        self._suggester: tuple[int, NameSuggester] | None = None
        self._building: tuple[int, asyncio.Future[NameSuggester]] | None = None

    # -- visibility ----------------------------------------------------------------------------------
    def visible(self, caller: Caller, name: str) -> bool:
        return self.permission is None or bool(self.permission(caller, name))

    async def look_up(self, names: Sequence[str] | None) -> None:
        """Before `visible` is asked about `names` (None: about any name) in this request."""
        if self.look is not None:
            await self.look(names)

    async def suggester(self) -> NameSuggester:
        """Built once per catalog change, not per read: an index over the names (bounded matching cost).

        A large catalog's index (40 ms at 10k names) is built in a worker thread, once per change however many
        reads wait for it, so the event loop every client shares never runs it.
        """
        revision = self.catalog.revision
        if self._suggester is not None and self._suggester[0] == revision:
            return self._suggester[1]
        names = [n for n in self.catalog.names() if n not in self.own_tools]
        if len(names) <= _INLINE_INDEX:
            built = NameSuggester(names)
        else:
            building = self._building
            if building is None or building[0] != revision:
                building = (revision, asyncio.ensure_future(anyio.to_thread.run_sync(NameSuggester, names)))
                self._building = building
            built = await asyncio.shield(building[1])
        self._suggester = (revision, built)
        return built

    async def not_found(self, caller: Caller, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The spec 6.3 entry for each unknown (or hidden) name, suggestions bounded per read."""
        await self.look_up(None)  # the suggestions and the count range over every name the caller may see
        suggester = await self.suggester()
        visible = None if self.permission is None else (lambda n: self.visible(caller, n))
        total = len(suggester.names) if visible is None else sum(1 for n in suggester.names if visible(n))
        budget = suggester.start_read()
        entries: dict[str, dict[str, Any]] = {}
        for position, name in enumerate(names, 1):
            entries[name] = tool_not_found(name, budget.suggest(name, visible), total)
            if position % _NAMES_PER_STEP == 0:
                # Each step is short (under a millisecond at 10k tools); between steps other clients' requests run.
                await anyio.lowlevel.checkpoint()
        return entries

    async def not_found_call(self, caller: Caller, name: str) -> Refusal:
        """The answer to a call of a name the caller cannot see: hidden and nonexistent alike (spec 10.2)."""
        entry = (await self.not_found(caller, [name]))[name]
        return Refusal(TOOL_NOT_FOUND, entry["error"] + ".", **_without_error(entry))

    # -- the catalog ---------------------------------------------------------------------------------
    async def ensure_known(self, names: Sequence[str], relist: Relist) -> None:
        """Re-list the server's tools when a name is missing (once at a time; at most once a `REFRESH_INTERVAL`).

        A request that arrives inside the interval waits for the next allowed refresh rather than being
        answered from a stale catalog: a tool registered a moment ago must be found, never passed through.
        (tools/list itself re-lists on every call, so the interval bounds only what unknown names add.)
        """
        started = time.monotonic()
        while not (self.catalog.complete and all(name in self.catalog for name in names)):
            if self.catalog.complete and self.catalog.refreshed_at >= started:
                return  # a listing made since this request arrived is the truth: the names are unknown
            pending = self._refreshing
            if pending is not None:
                await asyncio.shield(pending)
                continue
            wait = self.catalog.refreshed_at + REFRESH_INTERVAL - time.monotonic()
            if self.catalog.complete and wait > 0:
                await asyncio.sleep(wait)
                continue
            break
        else:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._refreshing = future
        try:
            await relist()
            future.set_result(None)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else must log it
            raise
        finally:
            self._refreshing = None

    # -- describe ------------------------------------------------------------------------------------
    async def check_rate(self, caller: Caller, bucket: str) -> None:
        """Spec 10.3: refuse a read past the session's budget (RATE_LIMITED, retryable).

        A limiter whose store cannot answer refuses the read (GRANTS_UNAVAILABLE, retryable): uncounted reads
        would lift the limit whenever the store is down.
        """
        if self.rate_limiter is None:
            return
        try:
            wait = self.rate_limiter.acquire(bucket)
            if inspect.isawaitable(wait):
                wait = await wait
        except GrantStoreUnavailable as exc:
            raise _grants_unavailable(
                f"Tool descriptions cannot be read right now: the fetch rate limit cannot be checked ({exc}); "
                "retry in a few seconds."
            ) from None
        if wait:
            raise Refusal(
                RATE_LIMITED,
                f"Too many tool description reads; retry in {wait:g} s.",
                rpc_code=RETRYABLE,
                retry_after_seconds=wait,
            )

    async def describe(self, caller: Caller, names: Sequence[str]) -> Described:
        """Full definitions of `names` for `caller`, granting the ones it may see (spec 4.4, 5.1).

        The caller has already been rate-checked and the names parsed; the catalog is current.
        """
        described = Described(_catalog=self.catalog)
        await self.look_up([name for name in names if name not in self.own_tools])
        unknown: list[str] = []
        for name in names:
            full = self.catalog.full(name) if name not in self.own_tools and self.visible(caller, name) else None
            if full is None:
                unknown.append(name)
            else:
                described.versions[name] = full["version"]
            described.entries.append((name, full, None))
        if unknown:
            missing = await self.not_found(caller, unknown)
            described.entries = [(n, full, missing.get(n)) for n, full, _ in described.entries]
        if described.versions and caller.session is not None:
            try:
                await self.grants.grant(caller.session, described.versions)
            except GrantStoreUnavailable as exc:
                raise _grants_unavailable(
                    f"Tool descriptions cannot be authorized right now ({exc}); retry in a few seconds."
                ) from None
            if self.churn is not None:
                self.churn.fetched(caller, described.versions)
        return described

    # -- gate ----------------------------------------------------------------------------------------
    async def gate(self, caller: Caller, name: str, session_required: Callable[[], dict[str, Any]]) -> Refusal | None:
        """None when `caller` may call `name` now; otherwise the refusal to answer with.

        The catalog is current. A name the catalog does not hold is refused like a hidden one (spec 10.2),
        never handed to the server: only names whose definition can be read can be authorized.
        """
        if name in self.own_tools:
            return None
        await self.look_up([name])
        if not self.visible(caller, name) or name not in self.catalog:
            return await self.not_found_call(caller, name)
        if caller.session is None:
            return Refusal.of(session_required())
        full = self.catalog.full(name)
        assert full is not None
        try:
            granted = await self.grants.version(caller.session, name)
        except GrantStoreUnavailable as exc:
            return _grants_unavailable(
                f"Tool '{name}' cannot be authorized right now: the grant store is unavailable ({exc}). Nothing "
                "was run; retry in a few seconds."
            )
        if granted == full["version"]:
            return None
        document = tool_description_required(name, self.resource_uri, self.describe_tool)
        reason = self.churn.explain(caller, name) if granted is None and self.churn is not None else None
        if reason is not None:
            document["error"]["reason"] = reason
        if granted is not None:
            document["error"]["reason"] = (
                f"the definition of '{name}' changed since this session fetched it "
                f"({granted} -> {full['version']}); fetch it again"
            )
        return Refusal.of(document)


def _grants_unavailable(message: str) -> Refusal:
    """The grant store (or the shared rate limiter) cannot answer: fail closed, retryable (I-18)."""
    return Refusal(GRANTS_UNAVAILABLE, message, rpc_code=RETRYABLE, retryable=True, retry_after_seconds=1)


def _without_error(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "error"}
