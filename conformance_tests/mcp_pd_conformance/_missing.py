"""Scenario missing-selection: reads that select no tool (spec 4.3) and their error document (6.1)."""

from __future__ import annotations

from typing import Any

from ._checks import NO_RESOURCE, Discovery
from ._documents import MISSING_MESSAGE, MISSING_TOOL_SELECTION, error_document, read_body
from ._probe import Exchange, Peer, short
from ._record import Recorder

__all__ = ["MISSING_DOCUMENT", "error_document_in_era", "missing_selection"]

MISSING_DOCUMENT = "missing-selection/error-document"


# -- missing-selection --------------------------------------------------------------------------------
def _missing_selection_doc(exchange: Exchange) -> tuple[dict[str, Any] | None, str]:
    if exchange.error is not None:
        return error_document(exchange.error.data), "error"
    return error_document(read_body(exchange).value), "content"


def _wrapped(exchange: Exchange) -> bool:
    """Whether the error document came as spec 6.1 writes it, inside {"error": {...}} (not the inner object bare)."""
    value = exchange.error.data if exchange.error is not None else read_body(exchange).value
    return isinstance(value, dict) and isinstance(value.get("error"), dict)


async def missing_selection(peer: Peer, rec: Recorder, disc: Discovery, era: str | None) -> None:
    """Scenario missing-selection: reads without tool names (spec 4.3, 6.1). The error document is judged here for
    `era` (the protocol this session speaks; None: an era not asked for), and in each other era's own session by
    `error_document_in_era`."""
    if disc.base is None:
        rec.skip_scenario("missing-selection", NO_RESOURCE)
        return
    documents: list[tuple[dict[str, Any], Exchange]] = []
    for check_id, uri in (
        ("missing-selection/no-query", disc.base),
        ("missing-selection/empty-tools", f"{disc.base}?tools="),
    ):
        exchange = await peer.read(uri)
        document, via = _missing_selection_doc(exchange)
        expected = "a JSON-RPC error whose data is {error: {code: MISSING_TOOL_SELECTION, ...}}"
        if document is not None and document.get("code") == MISSING_TOOL_SELECTION:
            documents.append((document, exchange))
            if via == "error":
                rec.ok(check_id, f"reading {uri} failed with MISSING_TOOL_SELECTION")
            else:
                rec.warn(
                    check_id,
                    f"reading {uri} succeeded with the MISSING_TOOL_SELECTION document as content",
                    expected=expected + " (a failed read, so clients cannot mistake it for descriptions)",
                    exchange=exchange,
                )
        else:
            what = f"failed with {document.get('code')}" if document else "did not return MISSING_TOOL_SELECTION"
            rec.fail(check_id, f"reading {uri} {what}", expected=expected, exchange=exchange)
    await _no_tools_parameter(peer, rec, disc.base)
    await _blank_selection(peer, rec, disc.base)
    if era is not None:
        _judge_document(rec, disc.base, documents, era)


async def error_document_in_era(peer: Peer, rec: Recorder, base: str, era: str) -> None:
    """missing-selection/error-document in `era`'s own session: a server may build its refusal per protocol version,
    and a 2026-07-28 MISSING_TOOL_SELECTION without its document is as wrong as a 2025-11-25 one (6.1)."""
    exchange = await peer.read(base)
    document, _via = _missing_selection_doc(exchange)
    found = [(document, exchange)] if document is not None and document.get("code") == MISSING_TOOL_SELECTION else []
    if not found:
        what = f"was refused with {document.get('code')}" if document else f"got {short(exchange.received, 160)}"
        rec.fail(
            "missing-selection/error-document",
            f"in protocol {peer.protocol_version}, a read of {base} without a selection {what}: no "
            "MISSING_TOOL_SELECTION document",
            expected=f'{{"error": {{"code": "MISSING_TOOL_SELECTION", "message": "{MISSING_MESSAGE}", "examples": '
            "[...]}} as the JSON-RPC error's data, in every protocol era (spec 6.1)",
            exchange=exchange,
            era=era,
        )
        return
    _judge_document(rec, base, found, era)


def _judge_document(rec: Recorder, base: str, documents: list[tuple[dict[str, Any], Exchange]], era: str) -> None:
    if not documents:
        rec.skip("missing-selection/error-document", "no MISSING_TOOL_SELECTION document was returned", era=era)
        return
    document, first = documents[0]
    problems = []
    if not _wrapped(first):
        problems.append('the document is the bare {"code", ...} object, not wrapped in {"error": {...}}')
    message = document.get("message")
    if message != MISSING_MESSAGE:
        problems.append(f"the message is {short(message, 120)!r}, not the spec's")
    examples = document.get("examples")
    wanted = [f"{base}?tools=tool_name", f"{base}?tools=tool1,tool2"]
    if examples != wanted:
        problems.append(f"examples are {short(examples, 160)}, not the spec's two")
    if problems:
        rec.fail(
            "missing-selection/error-document",
            "; ".join(problems),
            expected=f'{{"error": {{"code": "MISSING_TOOL_SELECTION", "message": "{MISSING_MESSAGE}", '
            f'"examples": {short(wanted)}}}}} (spec 6.1, with this server\'s base URI)',
            exchange=first,
            era=era,
        )
    else:
        rec.ok("missing-selection/error-document", f"message {message!r}, examples {short(examples, 160)}", era=era)


async def _not_missing_selection(peer: Peer, base: str, queries: tuple[str, ...]) -> list[tuple[str, Exchange]]:
    """The reads among `queries` that were not refused with MISSING_TOOL_SELECTION."""
    problems: list[tuple[str, Exchange]] = []
    for query in queries:
        exchange = await peer.read(base + query)
        document, _via = _missing_selection_doc(exchange)
        if document is None or document.get("code") != MISSING_TOOL_SELECTION:
            got = f"refused with {document.get('code')}" if document else short(exchange.received, 120)
            problems.append((f"{query}: {got}", exchange))
    return problems


async def _no_tools_parameter(peer: Peer, rec: Recorder, base: str) -> None:
    """Spec 4.3: a read without the tools parameter MUST fail with MISSING_TOOL_SELECTION; other parameters or an
    empty query do not make it a selection."""
    queries = ("?tool=x", "?other=1", "?")
    rec.judge(
        "missing-selection/no-tools-parameter",
        await _not_missing_selection(peer, base, queries),
        ok=f"{len(queries)} reads without a tools parameter got MISSING_TOOL_SELECTION",
        expected="MISSING_TOOL_SELECTION for a read whose query has no tools parameter (spec 4.3)",
        prefix="reads without a tools parameter were not refused as MISSING_TOOL_SELECTION: ",
    )


async def _blank_selection(peer: Peer, rec: Recorder, base: str) -> None:
    """Selections that name no tool (I-3 rule 8, ours): each must be refused like a missing one."""
    queries = ("?tools=,,", "?tools=%20", "?tools=%20,%20", "?tools")
    rec.judge(
        "missing-selection/blank-selection",
        await _not_missing_selection(peer, base, queries),
        ok=f"{len(queries)} selections naming no tool got MISSING_TOOL_SELECTION",
        expected="MISSING_TOOL_SELECTION for blank names, commas only or a bare 'tools'",
        prefix="selections naming no tool were not refused as MISSING_TOOL_SELECTION: ",
    )
