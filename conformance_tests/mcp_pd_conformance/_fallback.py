"""Profile tool-fallback: the describe tool checked the way the core checks the resource (interpretation I-13).

Session P starts with nothing fetched. It calls a safe tool T (the gate must refuse it and name the describe
tool call), gives the describe tool the selections the resource refuses and compares each answer with the
resource's, describes an unknown name and a case variant of T, then another tool U, calling T after each (still
refused), compares describe answers with reads of the same names, and last describes T and calls it
(authorized). Session Q, open from the start and fetching nothing, calls T at the end (refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._checks import selection_uri, unknown_name
from ._documents import (
    MISSING_TOOL_SELECTION,
    Answer,
    CallOutcome,
    answer,
    classify_call,
    error_document,
    read_body,
)
from ._model import ProfileRun
from ._probe import ConnectFailure, Exchange, Held, Peer, short
from ._profiles import ProfileContext, SafeCall, gate_refused, skip_profile

__all__ = ["tool_fallback_profile"]

PROFILE = "tool-fallback"
NO_TOOL = (
    "the server has no describe tool: tools/list lists no describe_tools and its capabilities advertise no "
    "describeTool (a server without it is checked by the core through the resource)"
)
NO_RESOURCE = "no tool_descriptions resource to compare the describe tool with (see resource-listing/listed)"
NO_NAMES = (
    "no tool name to describe: tools/list lists only the extension's own tools and an unknown-name read names "
    "no available_tools"
)
# Selections the describe tool must refuse exactly as the resource does (or serve exactly as it does).
_MANY = 100
_LONG = 300
_GATE_CHECKS = ("authorizes", "only-described", "isolated", "required-names-describe")


def _id(check: str) -> str:
    return f"{PROFILE}/{check}"


@dataclass
class _P:
    """Session P's state: the describe tool, the safe tool T, and what was observed on the way."""

    ctx: ProfileContext
    tool: str
    peer: Peer
    base: str
    t: SafeCall | None
    gated: bool = False
    gate_refusals: list[tuple[str, Answer]] = field(default_factory=list)  # describe calls refused by the gate
    leaks: list[tuple[str, Exchange]] = field(default_factory=list)
    mismatches: list[tuple[str, Exchange]] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)

    async def describe(self, names: list[str]) -> Answer:
        got = answer(await self.ctx.call(self.peer, self.tool, {"tools": names}))
        if gate_refused(classify_call(got.exchange)):
            self.gate_refusals.append((json.dumps(names)[:80], got))
        return got

    async def read(self, names: list[str]) -> Exchange:
        uri = selection_uri(self.base, *names) if names else f"{self.base}?tools="
        return await self.ctx.read(self.peer, uri)

    async def call_t(self, peer: Peer | None = None) -> tuple[CallOutcome, Exchange]:
        assert self.t is not None
        exchange = await self.ctx.call(peer or self.peer, self.t.name, self.t.arguments)
        return classify_call(exchange), exchange

    async def still_refused(self, after: str) -> None:
        """T must stay refused: nothing described so far served its definition."""
        if self.gated:
            outcome, exchange = await self.call_t()
            if not gate_refused(outcome):
                self.leaks.append((f"after {after}: {outcome.describe()}", exchange))

    async def compare(self, names: list[str], got: Answer) -> None:
        """The describe answer against a resources/read of the same names, in this session."""
        read = await self.read(names)
        label = json.dumps({"tools": names})
        body = read_body(read)
        if got.problem:
            self.mismatches.append((f"{label}: {got.problem}", got.exchange))
        elif got.is_error:
            self.mismatches.append((f"{label} was refused: {short(got.document, 160)}", got.exchange))
        elif read.error is not None or body.value is None:
            self.mismatches.append((f"{label}: the resource read failed ({body.problem}): nothing to compare", read))
        elif body.value != got.document:
            self.mismatches.append((f"{label}: {_difference(body.value, got.document)}", got.exchange))
        else:
            self.compared.append(label)


def _difference(resource: Any, tool: Any) -> str:
    if not isinstance(resource, dict) or not isinstance(tool, dict):
        return f"the resource returned {short(resource, 80)}, the describe tool {short(tool, 80)}"
    only_r, only_t = [k for k in resource if k not in tool], [k for k in tool if k not in resource]
    changed = [k for k in resource if k in tool and resource[k] != tool[k]]
    parts = [f"keys only the resource has {only_r[:4]}"] if only_r else []
    parts += [f"keys only the describe tool has {only_t[:4]}"] if only_t else []
    parts += [f"entries that differ {changed[:4]}"] if changed else []
    return "the document differs from the resource's: " + "; ".join(parts)


async def tool_fallback_profile(ctx: ProfileContext) -> ProfileRun:
    """Run the profile; skipped as a whole when the server has no describe tool or no resource."""
    rec, disc = ctx.rec, ctx.disc
    tool = ctx.describe_tool()
    if tool is None:
        return skip_profile(rec, PROFILE, NO_TOOL)
    if disc.base is None:
        return skip_profile(rec, PROFILE, NO_RESOURCE)
    _listed(ctx, tool)
    names = await ctx.known_names()
    if not names:
        rec.skip_scenario(PROFILE, NO_NAMES)
        return ProfileRun(PROFILE, True)
    safe, why = await ctx.safe_calls(names)
    t = safe[0] if safe else None
    held: list[Held] = []
    try:
        try:
            held = await ctx.open(2 if t is not None else 1)  # P, and Q for the isolation check
        except ConnectFailure as exc:
            rec.skip_scenario(PROFILE, f"could not open a session: {exc.message}")
            return ProfileRun(PROFILE, True)
        p = _P(ctx, tool, held[0].peer, disc.base, t)
        await _run(p, held[1].peer if len(held) > 1 else None, names, why)
    finally:
        for session in held:
            await session.close()
    return ProfileRun(PROFILE, True)


def _listed(ctx: ProfileContext, tool: str) -> None:
    entry = next(t for t in ctx.disc.tools if t["name"] == tool)
    schema = entry.get("inputSchema")
    tools = schema.get("properties", {}).get("tools") if isinstance(schema, dict) else None
    problems = []
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        problems.append("its inputSchema is not an object schema")
    elif not isinstance(tools, dict):
        problems.append('its inputSchema declares no "tools" property: a model cannot see how to call it')
    else:
        kinds = tools.get("type")
        if "array" not in (kinds if isinstance(kinds, list) else [kinds]):
            problems.append(f'"tools" is of type {kinds!r}, not an array of names')
        items = tools.get("items")
        if isinstance(items, dict) and items.get("type", "string") != "string":
            problems.append(f'"tools" items are {items.get("type")!r}, not strings')
    if len(json.dumps(schema)) > 2000:
        problems.append(f"its inputSchema is {len(json.dumps(schema))} characters: not small")
    check = _id("listed")
    if problems:
        ctx.rec.fail(
            check,
            f"{tool}: " + "; ".join(problems),
            expected='{"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}}',
            exchange=Exchange("tools/list", {}, {"tools": [entry]}),
        )
    else:
        ctx.rec.ok(check, f"{tool} is listed with the schema {short(schema, 160)}")


async def _run(p: _P, q: Peer | None, names: list[str], why: str) -> None:
    rec, t = p.ctx.rec, p.t
    blocked = why
    if t is not None:
        outcome, probe = await p.call_t()
        if gate_refused(outcome):
            p.gated = True
            _hint(p, outcome, probe)
        else:
            blocked = (
                f"{t.name} was not refused in a fresh session that fetched nothing ({outcome.describe()}); the gate "
                "is the core's to judge (authorization, grants)"
            )
    if not p.gated:
        for check in _GATE_CHECKS:
            rec.skip(_id(check), blocked)

    await _same_errors(p)
    await p.still_refused("the describe tool was given the selections the resource refuses")
    unknown = unknown_name(names)
    described = ["selections the resource refuses", "an unknown name"]
    await p.describe([unknown])
    await p.still_refused("describing an unknown name")
    variant = _case_variant(t.name, names) if t is not None else None
    if variant is not None:
        await p.describe([variant])
        await p.still_refused(f"describing a case variant ({variant})")
        described.append(f"a case variant ({variant})")

    others = [n for n in names if t is None or n != t.name]
    first = others[0] if others else names[0]
    got = await p.describe([first])
    _callable(p, first, got)
    if t is None or first != t.name:
        await p.still_refused(f"describing only {first}")
        described.append(f"another tool ({first})")
    await p.compare([first], got)
    mixed = [first, unknown]
    await p.compare(mixed, await p.describe(mixed))

    if p.gated:
        assert t is not None
        if p.leaks:
            rec.fail(
                _id("only-described"),
                "; ".join(text for text, _ in p.leaks[:3]),
                expected=f"{t.name} refused with TOOL_DESCRIPTION_REQUIRED: the describe tool had not served it",
                exchange=p.leaks[0][1],
            )
        else:
            rec.ok(_id("only-described"), f"{t.name} stayed refused after describing {', '.join(described)}")
        own = got if first == t.name else await p.describe([t.name])
        if await _authorizes(p, own):
            await _isolated(p, q)
        else:
            p.ctx.rec.skip(
                _id("isolated"), "the describe tool never authorized session P (see tool-fallback/authorizes)"
            )
        await p.compare([t.name], own)  # last: the read authorizes T in P, whatever the describe tool did
    _same_document(p)


def _case_variant(name: str, listed: list[str]) -> str | None:
    candidates = (name.swapcase(), name.upper(), name.lower(), name.title())
    return next((v for v in candidates if v != name and v not in listed), None)


def _hint(p: _P, outcome: CallOutcome, exchange: Exchange) -> None:
    assert p.t is not None
    document = outcome.document or {}
    wanted = {"name": p.tool, "arguments": {"tools": [p.t.name]}}
    check = _id("required-names-describe")
    if document.get("describe_tool_call") == wanted and document.get("resource_uri"):
        p.ctx.rec.ok(check, f"the refusal of {p.t.name} names {short(wanted)} beside resource_uri")
    else:
        p.ctx.rec.fail(
            check,
            f"the refusal of {p.t.name} carries describe_tool_call {short(document.get('describe_tool_call'), 120)}"
            + ("" if document.get("resource_uri") else " and no resource_uri"),
            expected=f'"describe_tool_call": {json.dumps(wanted)} beside "resource_uri"',
            exchange=exchange,
        )


async def _same_errors(p: _P) -> None:
    """What the resource refuses (or serves) the describe tool refuses (or serves) with the same document."""
    problems: list[tuple[str, Exchange]] = []
    cases: list[tuple[str, list[str]]] = [
        ("an empty list", []),
        (f"{_MANY} names", [f"pdc_unknown_{i}" for i in range(_MANY)]),
        (f"a {_LONG}-character name", ["x" * _LONG]),
    ]
    for label, selection in cases:
        got = await p.describe(selection)
        read = await p.read(selection)
        if read.error is not None:
            resource = ("refused", error_document(read.error.data))
        else:
            resource = ("served", read_body(read).value)
        mine = ("refused", got.error) if got.is_error else ("served", got.document)
        if got.exchange.error is not None:
            problems.append((f"{label}: {got.problem}, not an isError tool result", got.exchange))
        elif got.problem:
            problems.append((f"{label}: {got.problem}", got.exchange))
        elif not selection and (got.error or {}).get("code") != MISSING_TOOL_SELECTION:
            problems.append((f"{label}: {_what(mine)}, not {MISSING_TOOL_SELECTION}", got.exchange))
        elif mine != resource:
            problems.append((f"{label}: the resource {_what(resource)}, the describe tool {_what(mine)}", got.exchange))
    p.ctx.rec.judge(
        _id("same-errors"),
        problems,
        ok=f"{', '.join(label for label, _ in cases)}: the same answers as the resource's",
        expected=f'{{"tools": []}} refused with {MISSING_TOOL_SELECTION}; every selection answered with the '
        "resource's own document (error documents as isError tool results)",
        shown=None,
    )


def _what(outcome: tuple[str, Any]) -> str:
    kind, document = outcome
    if kind == "refused":
        code = document.get("code") if isinstance(document, dict) else None
        return f"refused with {code}" if code else f"refused without an error document ({short(document, 80)})"
    return f"served {short(document, 100)}"


def _callable(p: _P, name: str, got: Answer) -> None:
    check = _id("callable-unfetched")
    if p.gate_refusals:
        label, refused = p.gate_refusals[0]
        p.ctx.rec.fail(
            check,
            f"{p.tool} {label} was refused with TOOL_DESCRIPTION_REQUIRED: the describe tool is gated",
            expected=f"{p.tool} answers in a session that fetched nothing",
            exchange=refused.exchange,
        )
    elif got.is_error:
        # What the document holds is same-document's to judge; here only whether the tool answered.
        p.ctx.rec.fail(
            check,
            f"{p.tool} refused to describe {name} in a session that fetched nothing: "
            + (got.problem or short(got.document, 160)),
            expected=f"{name}'s definition",
            exchange=got.exchange,
        )
    else:
        p.ctx.rec.ok(check, f"{p.tool} described {name} in a session that had fetched nothing")


async def _authorizes(p: _P, own: Answer) -> bool:
    """True when session P ended up authorized by the describe tool."""
    assert p.t is not None
    check, name = _id("authorizes"), p.t.name
    if own.is_error:
        p.ctx.rec.fail(
            check,
            f"{p.tool} refused to describe {name}: {own.problem or short(own.document, 160)}",
            expected=f"{name}'s definition, then calls of {name} that pass the gate",
            exchange=own.exchange,
        )
        return False
    for attempt in ("the call", "a second call"):
        outcome, exchange = await p.call_t()
        if gate_refused(outcome):
            p.ctx.rec.fail(
                check,
                f"after {p.tool} returned {name}'s definition, {attempt} was refused: {outcome.describe()}",
                expected=f"{name} passes the gate in this session",
                exchange=exchange,
            )
            return False
    p.ctx.rec.ok(check, f"{name} passed the gate (twice) after {p.tool} returned its definition")
    return True


async def _isolated(p: _P, q: Peer | None) -> None:
    assert p.t is not None
    check, name = _id("isolated"), p.t.name
    if q is None:
        p.ctx.rec.skip(check, "no second session")
        return
    other, exchange = await p.call_t(q)
    own, own_exchange = await p.call_t()
    note = " (over stdio each session is its own server process)" if p.ctx.target.stdio is not None else ""
    if not gate_refused(other):
        p.ctx.rec.fail(
            check,
            f"session Q never described {name}, but after session P did: {other.describe()}",
            expected="TOOL_DESCRIPTION_REQUIRED in session Q: only session P described the tool",
            exchange=exchange,
        )
    elif gate_refused(own):
        p.ctx.rec.fail(
            check,
            f"session P, which described {name}, was refused it after session Q was",
            expected="session P's call passes the gate",
            exchange=own_exchange,
        )
    else:
        p.ctx.rec.ok(check, f"session Q was refused {name} while session P stayed authorized{note}")


def _same_document(p: _P) -> None:
    check = _id("same-document")
    if p.mismatches:
        p.ctx.rec.fail(
            check,
            "; ".join(text for text, _ in p.mismatches[:3]),
            expected="the resource's document for the same names, as structuredContent and as its JSON text",
            exchange=p.mismatches[0][1],
        )
    else:
        p.ctx.rec.ok(check, f"{len(p.compared)} answers equal the resource's: {', '.join(p.compared)}")
