"""Optional profiles (`mcp-pd check --profile NAME`): what they share and the order they run in.

A profile checks one of the project's own extensions (spec/interpretations.md I-13, I-16). It runs only
when asked for, after the core, and is skipped as a whole, with the reason, when the server lacks what it
checks. Its checks open their own sessions; the discovery session is their scout: it reads definitions
(to learn which tools are read-only and their example arguments), searches and browses, and is never used to
prove what a session may call. As in the core, only read-only tools (or --call-tool) are really invoked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._checks import UNKNOWN_TOOL, Discovery, selection_uri
from ._definitions import learn_definitions
from ._documents import (
    TOOL_DESCRIPTION_REQUIRED,
    CallOutcome,
    available_tools,
    classify_call,
    error_document,
    example_arguments,
)
from ._model import ProfileRun
from ._probe import ConnectFailure, Exchange, Held, Mode, Peer, Pool, Target
from ._record import Recorder

__all__ = [
    "ProfileContext",
    "SafeCall",
    "gate_refused",
    "skip_profile",
]

DESCRIBE_TOOL = "describe_tools"
_RATE_LIMITED = "RATE_LIMITED"
_MAX_WAIT = 5.0


@dataclass(frozen=True)
class SafeCall:
    """A tool a profile may really invoke, and the arguments it uses."""

    name: str
    arguments: dict[str, Any]


@dataclass
class ProfileContext:
    """Everything a profile needs from the run: where to open sessions, where to record, what the core learned."""

    pool: Pool
    target: Target
    mode: Mode
    rec: Recorder
    disc: Discovery
    scout: Peer
    call_tool: str | None
    call_args: dict[str, Any] | None
    say: Callable[[str], None]
    browsed: list[str] = field(default_factory=list)  # the catalog's names, when the catalog profile browsed them

    async def open(self, count: int) -> list[Held]:
        """`count` fresh sessions, opened at once (over stdio each is a server process to start); ConnectFailure."""
        held: list[Held] = []
        failures: list[ConnectFailure] = []

        async def one() -> None:
            try:
                held.append(await self.pool.open(self.target, self.mode))
            except ConnectFailure as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(one)
        if failures:
            for session in held:
                await session.close()
            raise failures[0]
        return held

    async def call(self, peer: Peer, name: str, arguments: dict[str, Any]) -> Exchange:
        """tools/call, retried (a little) when the server answers RATE_LIMITED: budgets are not what profiles check."""
        # Direct: a profile routes through call_tool itself, and calls by name when it means by name.
        return await _patient(lambda: peer.call(name, arguments, direct=True))

    async def read(self, peer: Peer, uri: str) -> Exchange:
        return await _patient(lambda: peer.read(uri))

    def describe_tool(self) -> str | None:
        """The listed describe tool: the name the capability advertises (describeTool), else describe_tools."""
        listed = {t["name"] for t in self.disc.tools}
        advertised = (self.scout.extension_settings() or {}).get("describeTool")
        for name in (advertised, DESCRIBE_TOOL):
            if isinstance(name, str) and name in listed:
                return name
        return None

    async def known_names(self) -> list[str]:
        """Names of tools the extension discloses: tools/list's, else those the catalog profile browsed, else the
        available_tools of an unknown-name read (often only the first few of a large catalog)."""
        if self.disc.names or self.disc.base is None:
            return list(self.disc.names)
        if self.browsed:
            return list(self.browsed)
        exchange = await self.read(self.scout, selection_uri(self.disc.base, UNKNOWN_TOOL))
        names = available_tools(exchange, UNKNOWN_TOOL) or []
        return [n for n in dict.fromkeys(names) if n not in self.disc.meta]

    async def safe_calls(self, names: list[str]) -> tuple[list[SafeCall], str]:
        """The tools among `names` the profile may invoke (--call-tool, else readOnlyHint=true), or why none.

        Annotations come from tools/list, else from the definitions, which the scout reads.
        """
        disc = self.disc
        if self.call_tool is not None and self.call_tool not in names:
            return [], f"--call-tool {self.call_tool} is not among the tools this profile found"
        if disc.base is None and not any(isinstance(t.get("annotations"), dict) for t in disc.tools):
            return [], "no tool_descriptions resource to learn which tools are read-only from; pass --call-tool NAME"
        await learn_definitions(self.scout, disc, names=names)
        listed = {t["name"]: t.get("annotations") for t in disc.tools}
        found: list[SafeCall] = []
        for name in names:
            annotations = listed.get(name) if isinstance(listed.get(name), dict) else disc.hints.get(name)
            named = name == self.call_tool
            if not named and not (isinstance(annotations, dict) and annotations.get("readOnlyHint") is True):
                continue
            entry = disc.entries.get(name)
            arguments = self.call_args if named and self.call_args is not None else None
            if arguments is None and isinstance(entry, dict):
                arguments = example_arguments(entry)
            if arguments is not None:
                found.insert(0 if named else len(found), SafeCall(name, dict(arguments)))
        if found:
            return found, ""
        return [], (
            "no tool it found is annotated readOnlyHint=true with an example (or an all-optional schema), so the "
            "suite will not invoke any; pass --call-tool NAME --args JSON to name one that is safe to call"
        )


async def _patient(send: Callable[[], Awaitable[Exchange]]) -> Exchange:
    exchange = await send()
    for _ in range(2):
        outcome = classify_call(exchange) if exchange.method == "tools/call" else None
        document = outcome.document if outcome is not None else None
        if exchange.error is not None:
            document = error_document(exchange.error.data)
        if document is None or document.get("code") != _RATE_LIMITED:
            return exchange
        wait = document.get("retry_after_seconds")
        await anyio.sleep(min(float(wait), _MAX_WAIT) if isinstance(wait, int | float) and wait > 0 else 1.0)
        exchange = await send()
    return exchange


def gate_refused(outcome: CallOutcome) -> bool:
    """Refused by the describe-before-call gate."""
    return outcome.kind == "refused" and outcome.code == TOOL_DESCRIPTION_REQUIRED


def skip_profile(rec: Recorder, profile: str, reason: str) -> ProfileRun:
    rec.skip_scenario(profile, reason)
    return ProfileRun(profile, False, reason)
