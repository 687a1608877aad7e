"""Scenario resource-read: ?tools= selection and the response format of spec 4.3, 4.4 and 6.3."""

from __future__ import annotations

import re
from typing import Any

from ._checks import NO_RESOURCE, ONLY_OWN_TOOLS, Discovery, selection_uri, unknown_name
from ._documents import Body, example_arguments, read_body
from ._probe import Exchange, Peer, short
from ._record import Recorder

__all__ = ["resource_read"]


# -- resource-read ------------------------------------------------------------------------------------
async def resource_read(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario resource-read: ?tools= selection and the response format of spec 4.3, 4.4 and 6.3."""
    if disc.base is None or not disc.names:
        reason = NO_RESOURCE if disc.base is None else ONLY_OWN_TOOLS if disc.tools else "no tools to read"
        rec.skip_scenario("resource-read", reason)
        return
    base, names = disc.base, disc.names
    reads: list[tuple[list[str], Exchange, Body]] = []
    for requested in ([names[0]], names[:2]) if len(names) >= 2 else ([names[0]],):
        exchange = await peer.read(selection_uri(base, *requested))
        reads.append((requested, exchange, read_body(exchange)))

    requested, exchange, body = reads[0]
    got = body.mapping
    if got is not None and requested[0] in got:
        rec.ok("resource-read/single-tool", f"?tools={requested[0]} returned its description")
    else:
        rec.fail(
            "resource-read/single-tool",
            f"?tools={requested[0]} did not return a JSON object keyed by {requested[0]}: "
            + ((body.problem or "no JSON object") if got is None else f"keys {sorted(got)[:6]}"),
            expected=f'{{"{requested[0]}": {{"name": ..., "description": ..., "inputSchema": ...}}}}',
            exchange=exchange,
        )
    if len(reads) > 1:
        requested, exchange, body = reads[1]
        got = body.mapping
        if got is not None and all(n in got for n in requested):
            rec.ok("resource-read/comma-separated", f"?tools={','.join(requested)} returned both")
        else:
            rec.fail(
                "resource-read/comma-separated",
                f"?tools={','.join(requested)} did not return both tools: "
                + ((body.problem or "no JSON object") if got is None else f"keys {sorted(got)[:6]}"),
                expected=f"a JSON object with keys {requested}",
                exchange=exchange,
            )
    else:
        rec.skip("resource-read/comma-separated", "the server lists a single tool")

    _judge_bodies(rec, disc, reads)
    await _exact_match(peer, rec, disc, names[0])
    await _unknown_name(peer, rec, disc)


def _judge_bodies(rec: Recorder, disc: Discovery, reads: list[tuple[list[str], Exchange, Body]]) -> None:
    """only-requested, no-preamble and the entry checks, over every read of valid names."""
    listed = set(disc.names)
    selection_problems: list[tuple[str, Exchange]] = []
    preamble_problems: list[tuple[str, Exchange]] = []
    entries: dict[str, tuple[Any, Exchange, Body]] = {}
    for requested, exchange, body in reads:
        got = body.mapping
        if body.prefix:
            preamble_problems.append((f"text precedes the JSON: {body.prefix[:60]!r}", exchange))
        if got is None:
            continue
        extra = [k for k in got if k not in requested and k in listed]
        missing = [n for n in requested if n not in got]
        if extra or missing:
            parts = [f"{len(extra)} unrequested tools returned ({', '.join(extra[:5])})"] if extra else []
            parts += [f"missing {missing}"] if missing else []
            selection_problems.append((f"requested {requested}: {'; '.join(parts)}", exchange))
        strangers = [k for k in got if k not in requested and k not in listed]
        if strangers:
            preamble_problems.append((f"requested {requested}: extra top-level keys {strangers[:5]}", exchange))
        for name in requested:
            if name in got and name not in entries:
                entries[name] = (got[name], exchange, body)
    # Every definition the run learned is judged, not only those of the reads above: reading one has no side effect.
    for name, entry in disc.entries.items():
        if name not in entries and name in disc.read_from:
            entries[name] = (entry, disc.read_from[name], read_body(disc.read_from[name]))
    if not any(body.mapping is not None for _, _, body in reads):
        reason = "no read returned a JSON object (see resource-read/single-tool)"
        for check in ("only-requested", "no-preamble", "full-entry", "complete-schema", "examples", "error-guidance"):
            if check != "no-preamble" or not preamble_problems:
                rec.skip(f"resource-read/{check}", reason)
        rec.skip("resource-read/version-info", reason)
    rec.judge(
        "resource-read/only-requested",
        selection_problems,
        ok=f"{len(reads)} reads returned exactly the requested tools",
        expected="exactly the requested tools",
        shown=None,
    )
    rec.judge(
        "resource-read/no-preamble",
        preamble_problems,
        ok="every top-level key is a requested tool name",
        expected="every top-level key is a requested tool name, and nothing precedes the JSON",
        shown=None,
    )
    _judge_entries(rec, entries, len(disc.names))


def _judge_entries(rec: Recorder, entries: dict[str, tuple[Any, Exchange, Body]], listed: int) -> None:
    """full-entry, complete-schema, examples and error-guidance over every definition read (at most
    _definitions.MAX_DEFINITIONS of them: the first listed tools'). An entry named after another tool is
    resource-read/entries-match-keys' to judge."""
    bad: list[tuple[str, Exchange]] = []
    thin: list[tuple[str, Exchange]] = []
    no_examples: list[tuple[str, Exchange]] = []
    no_guidance: list[tuple[str, Exchange]] = []
    versions: list[str] = []
    for name, (entry, exchange, body) in entries.items():
        if not isinstance(entry, dict):
            bad.append((f"{name}: the entry is not an object", exchange))
            continue
        problems = []
        if not isinstance(entry.get("name"), str):
            problems.append(f"name is {entry.get('name')!r}")
        if not isinstance(entry.get("description"), str) or not entry["description"].strip():
            problems.append("no description")
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            problems.append("no object inputSchema")
        elif not (
            schema.get("properties")
            or schema.get("additionalProperties") is False
            or any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref"))
        ):
            used = example_arguments(entry)
            if used:  # the tool takes arguments, yet its schema does not declare them
                problems.append(f"its examples pass {sorted(used)[:5]} but its inputSchema declares no properties")
            elif not isinstance(schema.get("properties"), dict):
                # "properties": {} says the tool takes no arguments (what SDKs serve for such tools); the open
                # placeholder of 3.1 says nothing.
                thin.append((name, exchange))
        if problems:
            bad.append((f"{name}: {', '.join(problems)}", exchange))
        if not (isinstance(entry.get("examples"), list) and entry["examples"]):
            no_examples.append((name, exchange))
        if not (entry.get("error_guidance") or entry.get("errorGuidance")):
            no_guidance.append((name, exchange))
        for key in ("version", "etag", "updated_at", "updatedAt", "last_modified"):
            if entry.get(key):
                versions.append(f"{name}.{key}={short(entry[key], 40)}")
        if body.meta:
            versions.append(f"content _meta keys {sorted(body.meta)}")
    if not entries:
        return
    served = f"{len(entries)} definitions ({short(', '.join(entries), 80)})"
    if len(entries) < listed:
        served += f", the first of {listed} listed tools"

    def judge(check_id: str, problems: list[tuple[str, Exchange]], ok: str, fail: str, expected: str) -> None:
        rec.judge(check_id, problems, ok=ok, expected=expected, prefix=fail, shown=4)

    judge(
        "resource-read/full-entry",
        bad,
        f"{served}: each has name, description and inputSchema",
        "",
        'each entry: {"name": <the name>, "description": "...", "inputSchema": {"type": "object", ...}}',
    )
    judge(
        "resource-read/complete-schema",
        thin,
        "served schemas declare their parameters",
        f"{len(thin)} of {len(entries)} inputSchemas declare no properties (no more than the minimal form): ",
        "the complete schema: properties, required, types",
    )
    judge(
        "resource-read/examples",
        no_examples,
        f"examples in {served}",
        f"no examples in {len(no_examples)} of {len(entries)} definitions: ",
        '"examples": [{"description": ..., "input": {...}}]',
    )
    judge(
        "resource-read/error-guidance",
        no_guidance,
        f"error guidance in {served}",
        f"no error_guidance in {len(no_guidance)} of {len(entries)} definitions: ",
        '"error_guidance": {...}',
    )
    found = list(dict.fromkeys(versions))[:3]
    message = f"version information: {'; '.join(found)}" if found else "no version information"
    rec.info("resource-read/version-info", message)


async def _unknown_name(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    assert disc.base is not None
    unknown = unknown_name(disc.names)
    exchange = await peer.read(selection_uri(disc.base, unknown))
    entry = (read_body(exchange).mapping or {}).get(unknown)
    expected = f'{{"{unknown}": {{"error": "Tool \'{unknown}\' not found", "available_tools": [...]}}}}'
    if exchange.error is not None:
        rec.fail(
            "resource-read/unknown-tool-entry",
            "an unknown name made the whole read fail instead of getting an error entry",
            expected=expected,
            exchange=exchange,
        )
    elif (
        isinstance(entry, dict)
        and isinstance(entry.get("error"), str)
        and isinstance(entry.get("available_tools"), list)
    ):
        strangers = [n for n in entry["available_tools"] if n not in disc.names]
        wording = f"Tool '{unknown}' not found"
        if not re.fullmatch(re.escape(wording) + r"(?:[.;:,!]\s*.*|\s+\(.*)?", entry["error"], re.DOTALL):
            rec.fail(
                "resource-read/unknown-tool-entry",
                f"the error reads {short(entry['error'], 100)!r}, not the spec's wording",
                expected=f'"error": "{wording}" (spec 6.3; a hint may follow it)',
                exchange=exchange,
            )
        elif strangers:
            rec.fail(
                "resource-read/unknown-tool-entry",
                f"available_tools names tools not in tools/list: {strangers[:5]}",
                expected="available_tools drawn from tools/list",
                exchange=exchange,
            )
        else:
            rec.ok("resource-read/unknown-tool-entry", f"error entry: {entry['error']!r}")
    else:
        rec.fail(
            "resource-read/unknown-tool-entry",
            "no {error, available_tools} entry for an unknown name",
            expected=expected,
            exchange=exchange,
        )


async def _exact_match(peer: Peer, rec: Recorder, disc: Discovery, name: str) -> None:
    assert disc.base is not None
    variant = next(
        (v for v in (name.swapcase(), name.upper(), name.lower(), name.title()) if v != name and v not in disc.names),
        None,
    )
    if variant is None:
        rec.skip("resource-read/exact-match", f"{name!r} has no letters to change the case of")
        return
    exchange = await peer.read(selection_uri(disc.base, variant))
    if exchange.error is not None:
        rec.ok("resource-read/exact-match", f"?tools={variant} was refused (JSON-RPC error)")
        return
    got = read_body(exchange).mapping or {}
    served = got.get(variant)
    others = [k for k in got if k in disc.names and k != name]
    if others:
        rec.skip(
            "resource-read/exact-match",
            f"?tools={variant} returned unrequested tools ({', '.join(others[:3])}; see resource-read/only-requested), "
            "so case sensitivity cannot be judged",
        )
    elif name in got and not isinstance(served, dict):
        rec.fail(
            "resource-read/exact-match",
            f"?tools={variant} returned the description of {name}",
            expected=f"no description for {variant!r} (names are case-sensitive); an error entry at most",
            exchange=exchange,
        )
    elif isinstance(served, dict) and "inputSchema" in served and "error" not in served:
        rec.fail(
            "resource-read/exact-match",
            f"?tools={variant} was served as if it were {name}",
            expected=f"no description for {variant!r} (names are case-sensitive); an error entry at most",
            exchange=exchange,
        )
    else:
        rec.ok("resource-read/exact-match", f"?tools={variant} was not served as {name}")
