"""Profile catalog: catalog mode's meta-tools (interpretation I-16).

The scout browses every category (which also yields the catalog's names) and searches; none of that
authorizes anything. Session P then calls a safe tool T through call_tool and by name before describing it
(both refused), describes it (both run), sends call_tool arguments that break a described tool's schema and a
misspelt name; session Q, open from the start, calls T both ways at the end (refused).
"""

from __future__ import annotations

import json
from typing import Any

from ._browse import BROWSE, CALL, DETAIL, Catalog, walk
from ._definitions import WRONG_VALUES
from ._documents import Answer, answer, classify_call
from ._model import ProfileRun
from ._probe import ConnectFailure, Exchange, Held, Peer, short
from ._profiles import ProfileContext, SafeCall, gate_refused, skip_profile

__all__ = ["catalog_profile"]

PROFILE = "catalog"
SEARCH = "search_tools"
NOT_CATALOG = "the server is not in catalog mode: tools/list has no search_tools"
NONSENSE = "qzxvj wplkkr frobnitzel"  # a query no tool can explain
UNKNOWN_CATEGORY = "pd_conformance_no_such_category"
DEFAULT_LIMIT = 5
SUMMARY_LIMIT = 300  # a result's description is one line, not documentation


def _id(check: str) -> str:
    return f"{PROFILE}/{check}"


async def catalog_profile(ctx: ProfileContext) -> ProfileRun:
    """Run the profile; skipped as a whole when tools/list has no search_tools."""
    rec, disc = ctx.rec, ctx.disc
    listed = [t["name"] for t in disc.tools]
    if SEARCH not in listed:
        return skip_profile(rec, PROFILE, NOT_CATALOG)
    describe = ctx.describe_tool() or "describe_tools"
    catalog = await _browse(ctx)
    _fixed_list(ctx, listed, describe, catalog)
    probe = next((n for n in catalog.names if len(catalog.summaries.get(n, "").split()) >= 3), None)
    if probe is None:
        reason = "browse_tools named no tool with a one-line description to search for (see catalog/browse)"
        for check in ("search-results", "search-abstains", "search-filters"):
            rec.skip(_id(check), reason)
    else:
        await _search_results(ctx, catalog, probe)
        await _search_abstains(ctx, catalog)
        await _search_filters(ctx, catalog, probe)
    names = catalog.names or list(disc.names)
    ctx.browsed = catalog.names
    safe, why = await ctx.safe_calls(names) if names else ([], "browse_tools named no tools (see catalog/browse)")
    if not safe:
        for check in ("call-gated", "call-validates", "call-unknown"):
            rec.skip(_id(check), why)
        return ProfileRun(PROFILE, True)
    held: list[Held] = []
    try:
        try:
            held = await ctx.open(2)  # P, and Q for the isolation part of call-gated
        except ConnectFailure as exc:
            rec.skip_scenario(PROFILE, f"could not open a session: {exc.message}")
            return ProfileRun(PROFILE, True)
        p, q = held[0].peer, held[1].peer
        await _call_gated(ctx, p, q, describe, safe[0])
        await _call_validates(ctx, p, describe, safe)
        await _call_unknown(ctx, p, safe[0], names)
    finally:
        for session in held:
            await session.close()
    return ProfileRun(PROFILE, True)


async def _meta(ctx: ProfileContext, peer: Peer, tool: str, arguments: dict[str, Any]) -> Answer:
    return answer(await ctx.call(peer, tool, arguments))


# -- browse and the list ------------------------------------------------------------------------------------
async def _browse(ctx: ProfileContext) -> Catalog:
    """catalog/browse: the categories, then every page of every category (bounded)."""

    async def meta(tool: str, arguments: dict[str, Any]) -> Answer:
        return await _meta(ctx, ctx.scout, tool, arguments)

    found = await walk(meta)
    _judge_browse(ctx, found)
    return found


def _judge_browse(ctx: ProfileContext, found: Catalog) -> None:
    sizes = ", ".join(f"{c} ({len(n)})" for c, n in list(found.members.items())[:6])
    ctx.rec.judge(
        _id("browse"),
        found.problems,
        ok=f"{len(found.members)} categories, {len(found.names)} tools in {found.pages} pages: {sizes}",
        expected='{"categories": [{"name", "count", "description"}]}, and per category {"tools": [{"name", '
        '"description"}], "nextCursor"?} pages holding exactly count tools',
    )


def _fixed_list(ctx: ProfileContext, listed: list[str], describe: str, catalog: Catalog) -> None:
    wanted = [SEARCH, BROWSE, describe, CALL]
    missing = [n for n in wanted if n not in listed]
    others = [n for n in listed if n not in wanted]
    problems = [f"tools/list lacks {', '.join(missing)}"] if missing else []
    whole = catalog.names
    if len(whole) > 1 and set(whole) <= set(others):
        problems.append(f"tools/list lists the whole catalog ({len(whole)} tools) beside the meta-tools: it grows")
    check = _id("fixed-list")
    if problems:
        ctx.rec.fail(
            check,
            "; ".join(problems),
            expected=f"{', '.join(wanted)}, and no more than the few tools an author pins",
            exchange=Exchange("tools/list", {}, {"tools": [{"name": n} for n in listed[:12]]}),
        )
    else:
        pinned = f", and {len(others)} pinned: {', '.join(others[:5])}" if others else ""
        ctx.rec.ok(check, f"tools/list holds {', '.join(wanted)}{pinned}; the catalog has {len(whole)} tools")


# -- search ---------------------------------------------------------------------------------------------------
def _results(
    got: Answer, label: str, catalog: Catalog, problems: list[tuple[str, Exchange]], compact: bool = False
) -> list[str]:
    """The result names of a search answer; what is off about its shape (and size, if `compact`) goes to `problems`.

    Names are checked against the catalog only when browsing completed: else browse is what failed.
    """
    results = got.mapping.get("results")
    if got.problem or got.is_error or not isinstance(results, list):
        problems.append((f"{label}: {got.problem or short(got.document, 160)}", got.exchange))
        return []
    names = []
    for result in results:
        if not isinstance(result, dict) or not all(isinstance(result.get(k), str) for k in ("name", "category")):
            what = f"{label}: a result is not {{name, category, description}}: {short(result)}"
            problems.append((what, got.exchange))
            continue
        detail = [k for k in DETAIL if k in result]
        if compact and (detail or len(str(result.get("description") or "")) > SUMMARY_LIMIT):
            what = f"carries {detail}" if detail else f"has a {len(str(result['description']))}-character description"
            problems.append((f"{label}: the result {result['name']} {what}: not compact", got.exchange))
        if catalog.names and not catalog.problems and result["name"] not in catalog.names:
            problems.append((f"{label}: {result['name']} is not a tool browse_tools lists", got.exchange))
        names.append(result["name"])
    return names


async def _search_results(ctx: ProfileContext, catalog: Catalog, probe: str) -> None:
    query = catalog.summaries[probe]
    problems: list[tuple[str, Exchange]] = []
    got = await _meta(ctx, ctx.scout, SEARCH, {"query": query})
    names = _results(got, f"query {query!r}", catalog, problems, compact=True)
    total = got.mapping.get("total")
    if not got.is_error and not got.problem:
        if len(names) > DEFAULT_LIMIT:
            problems.append((f"{len(names)} results without a limit (the default is {DEFAULT_LIMIT})", got.exchange))
        if not isinstance(total, int) or total < len(names):
            problems.append((f"total is {total!r} for {len(names)} results", got.exchange))
        if probe not in names:
            missed = f"searching for {probe}'s own one-line description did not find it: {names}"
            problems.append((missed, got.exchange))
    one = await _meta(ctx, ctx.scout, SEARCH, {"query": query, "limit": 1})
    limited = _results(one, "limit 1", catalog, problems, compact=True)
    if len(limited) > 1:
        problems.append((f"limit 1 answered {len(limited)} results", one.exchange))
    ctx.rec.judge(
        _id("search-results"),
        problems,
        ok=f"{probe}'s own description found it among {len(names)} compact results (total {total})",
        expected='{"results": [{"name", "category", "description"}], "total": N} (structuredContent and its JSON '
        "text), at most limit results, no schemas",
    )


async def _search_abstains(ctx: ProfileContext, catalog: Catalog) -> None:
    got = await _meta(ctx, ctx.scout, SEARCH, {"query": NONSENSE})
    problems: list[tuple[str, Exchange]] = []
    names = _results(got, f"query {NONSENSE!r}", catalog, problems)
    hint = got.mapping.get("hint")
    if not problems:
        if names:
            problems.append((f"{len(names)} results for a query nothing fits: {names[:5]}", got.exchange))
        if got.mapping.get("abstained") is not True:
            problems.append(('no "abstained": true', got.exchange))
        if not isinstance(hint, str) or not any(c and c in hint for c in catalog.members):
            problems.append((f"the hint {short(hint, 120)!r} names no category to browse", got.exchange))
    ctx.rec.judge(
        _id("search-abstains"),
        problems,
        ok=f"{NONSENSE!r}: no results, abstained, hint {short(hint, 100)!r}",
        expected='{"results": [], "total": 0, "abstained": true, "hint": "... browse a category: <categories>"}',
    )


async def _search_filters(ctx: ProfileContext, catalog: Catalog, probe: str) -> None:
    query, home = catalog.summaries[probe], catalog.category(probe)
    problems: list[tuple[str, Exchange]] = []
    checked = []
    for category in [home, *(c for c in catalog.members if c != home)][:2]:
        if category is None:
            continue
        got = await _meta(ctx, ctx.scout, SEARCH, {"query": query, "category": category})
        names = _results(got, f"category {category!r}", catalog, problems)
        strays = [n for n in names if catalog.category(n) != category]
        if strays:
            problems.append((f"category {category!r} answered tools of other categories: {strays[:4]}", got.exchange))
        if category == home and probe not in names and not got.is_error:
            problems.append((f"category {category!r} lost {probe}, which is in it", got.exchange))
        checked.append(f"category {category!r}")
    like = await _meta(ctx, ctx.scout, SEARCH, {"like": probe})
    similar = _results(like, f"like {probe!r}", catalog, problems)
    if not like.is_error and (not similar or probe in similar):
        what = "nothing" if not similar else f"{probe} itself among {similar[:5]}"
        problems.append((f"like {probe!r} answered {what}", like.exchange))
    checked.append(f"like {probe!r}")
    wrong = await _meta(ctx, ctx.scout, SEARCH, {"query": query, "category": UNKNOWN_CATEGORY})
    text = json.dumps(wrong.document)
    if not wrong.is_error or not any(f'"{c}"' in text for c in catalog.members if c):
        problems.append((f"an unknown category: {short(wrong.document, 160)}", wrong.exchange))
    checked.append("an unknown category")
    ctx.rec.judge(
        _id("search-filters"),
        problems,
        ok=f"{', '.join(checked)} answered as asked",
        expected="results of that category only; like: other tools similar to it; an unknown category: an "
        "isError answer naming the valid categories",
    )


# -- call_tool -----------------------------------------------------------------------------------------------
async def _call_gated(ctx: ProfileContext, p: Peer, q: Peer, describe: str, t: SafeCall) -> None:
    via_call = {"name": t.name, "arguments": t.arguments}
    problems: list[tuple[str, Exchange]] = []

    async def expect(peer: Peer, label: str, refused: bool, tool: str, arguments: dict[str, Any]) -> None:
        exchange = await ctx.call(peer, tool, arguments)
        got = answer(exchange)
        outcome = "refused with TOOL_DESCRIPTION_REQUIRED" if _gate(exchange) else _said(got)
        if _gate(exchange) != refused:
            problems.append((f"{label}: {outcome}", exchange))

    await expect(p, f"call_tool {t.name} before describing it", True, CALL, via_call)
    await expect(p, f"{t.name} by name before describing it", True, t.name, t.arguments)
    described = await _meta(ctx, p, describe, {"tools": [t.name]})
    if described.is_error or t.name not in described.mapping:
        problems.append((f"{describe} did not serve {t.name}: {short(described.document, 120)}", described.exchange))
    await expect(p, f"call_tool {t.name} after {describe}", False, CALL, via_call)
    await expect(p, f"{t.name} by name after {describe}", False, t.name, t.arguments)
    await expect(q, f"call_tool {t.name} in another session", True, CALL, via_call)
    await expect(q, f"{t.name} by name in another session", True, t.name, t.arguments)
    ctx.rec.judge(
        _id("call-gated"),
        problems,
        ok=f"{t.name} via call_tool and by name: refused before {describe}, ran after; not elsewhere",
        expected=f"TOOL_DESCRIPTION_REQUIRED until this session described {t.name}, then both ways run",
    )


def _gate(exchange: Exchange) -> bool:
    return gate_refused(classify_call(exchange))


def _said(got: Answer) -> str:
    if not got.is_error:
        return "it ran"
    code = (got.error or {}).get("code")
    return f"refused with {code}" if code else f"failed without an error document: {short(got.exchange.received, 120)}"


def _violation(ctx: ProfileContext, safe: list[SafeCall]) -> tuple[SafeCall, str, dict[str, Any]] | None:
    """A safe tool, one of its typed parameters, and arguments giving that parameter a value of the wrong type."""
    for tool in safe:
        schema = (ctx.disc.entries.get(tool.name) or {}).get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        for prop, rule in (properties or {}).items():
            kind = rule.get("type") if isinstance(rule, dict) else None
            if isinstance(kind, str) and kind in WRONG_VALUES:
                return tool, prop, {**tool.arguments, prop: WRONG_VALUES[kind]}
    return None


async def _call_validates(ctx: ProfileContext, p: Peer, describe: str, safe: list[SafeCall]) -> None:
    check = _id("call-validates")
    found = _violation(ctx, safe)
    if found is None:
        ctx.rec.skip(check, "no safe tool's schema has a typed parameter to give a wrong value")
        return
    tool, prop, arguments = found
    if tool.name != safe[0].name:
        await _meta(ctx, p, describe, {"tools": [tool.name]})
    exchange = await ctx.call(p, CALL, {"name": tool.name, "arguments": arguments})
    got = answer(exchange)
    error = got.error or {}
    sent = f"call_tool {tool.name} with {prop}={json.dumps(arguments[prop])}"
    named = f'"{prop}"' in json.dumps(error) or prop in str(error.get("message"))
    if _gate(exchange):
        what = f"{sent} after {describe}: refused by the gate"
        ctx.rec.fail(check, what, expected="a validation error", exchange=exchange)
    elif error.get("code") != "INVALID_ARGUMENTS" or not named:
        ctx.rec.fail(
            check,
            f"{sent}: {_said(got)}",
            expected=f'INVALID_ARGUMENTS naming the field "{prop}" (field, rule, message, schema fragment); the tool '
            "does not run",
            exchange=exchange,
        )
    else:
        ctx.rec.ok(check, f"{sent}: INVALID_ARGUMENTS naming {prop}: {short(error.get('message'), 120)}")


def _misspelt(name: str, names: list[str]) -> str:
    for cut in range(len(name) // 2, len(name)):
        candidate = name[:cut] + name[cut + 1 :]
        if candidate and candidate not in names:
            return candidate
    return name + "x"


async def _call_unknown(ctx: ProfileContext, p: Peer, t: SafeCall, names: list[str]) -> None:
    wrong = _misspelt(t.name, names)
    exchange = await ctx.call(p, CALL, {"name": wrong, "arguments": t.arguments})
    got = answer(exchange)
    error = got.error or {}
    lists = [v for v in error.values() if isinstance(v, list) and all(isinstance(n, str) for n in v)]
    close = any(t.name in v[:5] for v in lists)
    check = _id("call-unknown")
    if error.get("code") == "TOOL_NOT_FOUND" and close:
        ctx.rec.ok(check, f"call_tool {wrong!r}: TOOL_NOT_FOUND, closest names lead with {t.name}")
    else:
        ctx.rec.fail(
            check,
            f"call_tool {wrong!r}: {_said(got)}" + ("" if close else f", {t.name} not among the first closest names"),
            expected=f"TOOL_NOT_FOUND with the closest names ({t.name} among the first five)",
            exchange=exchange,
        )
