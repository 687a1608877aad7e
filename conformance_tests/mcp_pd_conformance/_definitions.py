"""Full definitions checked for truth, and every read of the run checked whole.

`learn_definitions` reads the definitions of the first `MAX_DEFINITIONS` gated tools (in batches,
one name at a time when a batch is refused). `schema_valid` validates each served inputSchema and
each example against it with jsonschema; `listed_schema_agrees` checks that the minimal schema in tools/list
accepts every call the full one does; `violating_arguments` builds a call its full schema rejects (to probe a
gate without running the tool). `judge_reads` looks at every resources/read the run sent:
every content item, its MIME type, whether a successful read silently held fewer tools than asked, whether each
entry is its key's definition (the same in every read), and whether reads naming unknown tools kept to the
requested names as keys.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from jsonschema.exceptions import SchemaError

from ._checks import Discovery, selection_uri
from ._documents import base_uri, read_body, schema_identity
from ._probe import Exchange, Peer, short
from ._record import Recorder

__all__ = [
    "MAX_DEFINITIONS",
    "WRONG_VALUES",
    "judge_reads",
    "learn_definitions",
    "listed_schema_agrees",
    "schema_valid",
    "violating_arguments",
]

MAX_DEFINITIONS = 50
_BATCH = 10
# A value of the wrong JSON type for each declared type (and one no enum or const admits).
WRONG_VALUES: dict[str, Any] = {
    "integer": "not-a-number",
    "number": "not-a-number",
    "string": 12345,
    "boolean": "not-a-boolean",
    "array": "not-an-array",
    "object": "not-an-object",
    "null": "not-null",
}
_OUTSIDE_ENUM = "pd_conformance_not_allowed"


async def learn_definitions(
    peer: Peer, disc: Discovery, limit: int = MAX_DEFINITIONS, names: list[str] | None = None
) -> None:
    """Fill `disc.entries` (and `disc.hints`, `disc.read_from`) for the first `limit` of `names` (default: the
    listed tools); every one of them is judged (resource-read/full-entry and the rest), whatever the tool does."""
    if disc.base is None:
        return
    pending = [n for n in (disc.names if names is None else names)[:limit] if n not in disc.entries]
    size = _BATCH
    while pending:
        batch = pending[:size]
        exchange = await peer.read(selection_uri(disc.base, *batch))
        body = read_body(exchange)
        if body.mapping is None and size > 1:
            size = 1  # perhaps fewer names per read are allowed
            continue
        pending = pending[len(batch) :]
        for name in batch:
            entry = (body.mapping or {}).get(name)
            # An entry named after another tool is not this tool's definition (resource-read/entries-match-keys).
            if isinstance(entry, dict) and "error" not in entry and entry.get("name", name) == name:
                disc.entries[name] = entry
                disc.read_from[name] = exchange
                if isinstance(entry.get("annotations"), dict):
                    disc.hints.setdefault(name, entry["annotations"])


def _examples(entry: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    found = []
    for i, example in enumerate(entry.get("examples") or []):
        if isinstance(example, dict):
            for key in ("input", "arguments", "args", "params", "parameters"):
                if isinstance(example.get(key), dict):
                    found.append((i, example[key]))
                    break
    return found


def _tools_own_schema(disc: Discovery, name: str) -> dict[str, Any] | None:
    """The inputSchema the listing gives `name` when it is the tool's own (it constrains something), not the minimal
    stand-in: where visible, what the tool itself accepts."""
    listed = next((t.get("inputSchema") for t in disc.gated_tools if t.get("name") == name), None)
    if not isinstance(listed, dict) or not (listed.get("properties") or listed.get("required")):
        return None
    return listed


def _example_errors(validator: Any, name: str, entry: dict[str, Any], against: str) -> list[str]:
    problems = []
    for i, arguments in _examples(entry):
        try:
            error = next(iter(validator.iter_errors(arguments)), None)
        except Exception as exc:  # an unresolvable $ref, for one: the schema cannot be used as served
            problems.append(f"{name}: validating example {i} failed ({type(exc).__name__}: {short(str(exc), 80)})")
            break
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            problems.append(
                f"{name}: example {i} {short(arguments, 80)} does not validate against {against} at {where}: "
                f"{short(error.message, 100)}"
            )
    return problems


def schema_valid(rec: Recorder, disc: Discovery) -> None:
    """resource-read/schema-valid over every definition read: each example against the served inputSchema, and
    against the tool's own where the listing shows it (an example the tool rejects teaches a failing call)."""
    problems = []
    checked = 0
    for name, entry in disc.entries.items():
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict):
            continue  # resource-read/full-entry reports it
        checked += 1
        try:
            validator = _validator(schema)
        except SchemaError as exc:
            problems.append(f"{name}: the inputSchema is not a valid JSON Schema ({short(exc.message, 100)})")
            continue
        found = _example_errors(validator, name, entry, "the served inputSchema")
        own = _tools_own_schema(disc, name)
        if not found and own is not None and own != schema:
            # A listed schema that is no schema is resource-read/listed-schema-agrees's to report.
            with suppress(SchemaError):
                found = _example_errors(_validator(own), name, entry, "the inputSchema tools/list gives the tool")
        problems += found
    if not checked:
        rec.skip("resource-read/schema-valid", "no definition with an inputSchema was read")
    elif problems:
        rec.fail(
            "resource-read/schema-valid",
            f"{len(problems)} problems: " + "; ".join(problems[:4]),
            expected="a valid JSON Schema, and every example's input valid against it",
        )
    else:
        rec.ok("resource-read/schema-valid", f"{checked} served schemas are valid and their examples validate")


def _validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for `schema` in the dialect it declares (2020-12 if none); SchemaError if invalid."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _rejects(validator: Any, instance: Any) -> bool:
    try:
        return next(iter(validator.iter_errors(instance)), None) is not None
    except Exception:  # an unresolvable $ref and the like: no verdict
        return False


def _wrong_value(schema: Any) -> Any:
    """A value `schema` (one property's) rejects, or None when it constrains nothing the suite can break."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema or "const" in schema:
        return _OUTSIDE_ENUM
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if kinds and all(isinstance(k, str) for k in kinds):
        # A value of a type none of them allows.
        return next((v for t, v in WRONG_VALUES.items() if t not in kinds and type(v) is not bool), None)
    return None


def violating_arguments(schema: Any) -> dict[str, Any] | None:
    """Arguments `schema` rejects, as harmless as can be: every required parameter left out, every other constrained
    one given a value of the wrong type. None when the schema rejects nothing the suite can build (no required and
    no constrained parameter): a call would then be a real call."""
    if not isinstance(schema, dict):
        return None
    try:
        validator = _validator(schema)
    except SchemaError:
        return None
    properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    arguments = {
        name: wrong
        for name, sub in properties.items()
        if name not in required and (wrong := _wrong_value(sub)) is not None
    }
    return arguments if _rejects(validator, arguments) else None


def listed_schema_agrees(rec: Recorder, disc: Discovery) -> None:
    """resource-read/listed-schema-agrees: the minimal inputSchema of tools/list may be omitted or loosened
    (PD-3.1-05), never narrowed: a host that validates arguments against the listing would refuse real calls."""
    compared, problems = 0, []
    for tool in disc.gated_tools:
        name, listed, entry = tool["name"], tool.get("inputSchema"), disc.entries.get(tool["name"]) or {}
        full = entry.get("inputSchema")
        if listed is None or not isinstance(full, dict):
            continue
        compared += 1
        try:
            checker = _validator(listed) if isinstance(listed, dict) else None
        except SchemaError:
            checker = None
        if checker is None:
            problems.append(f"{name}: the listed inputSchema is not a valid JSON Schema")
            continue
        calls = [arguments for _, arguments in _examples(entry)]
        properties: dict[str, Any] = full["properties"] if isinstance(full.get("properties"), dict) else {}
        closed = listed.get("additionalProperties") is False
        listed_properties = listed.get("properties") if isinstance(listed.get("properties"), dict) else {}
        shut_out = [p for p in properties if closed and p not in listed_properties]
        wanted = listed.get("required") if isinstance(listed, dict) else None
        demanded = [p for p in wanted or [] if isinstance(p, str) and p not in (full.get("required") or [])]
        rejected = [arguments for arguments in calls if _rejects(checker, arguments)]
        if shut_out or demanded or rejected:
            why = (
                f"additionalProperties: false shuts out {', '.join(shut_out[:4])}"
                if shut_out
                else f"requires {', '.join(demanded[:4])}, which the full schema does not"
                if demanded
                else f"rejects its own example {short(rejected[0], 80)}"
            )
            problems.append(f"{name}: the listed inputSchema {why}")
    if not compared:
        rec.skip("resource-read/listed-schema-agrees", "no listed tool with both a listed and a served inputSchema")
        return
    if problems:
        rec.fail(
            "resource-read/listed-schema-agrees",
            f"{len(problems)} of {compared} tools: " + "; ".join(problems[:3]),
            expected='a listed inputSchema omitted, or loosened (e.g. {"type": "object", "additionalProperties": '
            "true}), never closed: hosts validate calls against it",
        )
    else:
        rec.ok(
            "resource-read/listed-schema-agrees",
            f"the listed inputSchemas of {compared} tools accept every call their full schemas accept",
        )


def _requested(uri: str, base: str) -> list[str] | None:
    """The names of a plain `<base>?tools=a,b` read (the form the suite sends); None for any other form."""
    if base_uri(uri) != base or "%" in uri or "&" in uri or "#" in uri:
        return None
    query = urlsplit(uri).query
    if not query.startswith("tools="):
        return None
    return [n for n in query[len("tools=") :].split(",") if n]


_KEY_CHECKS = ("entries-match-keys", "requested-keys-only")


def _plain_reads(disc: Discovery, reads: list[Exchange]) -> list[tuple[list[str], dict[str, Any], Exchange]]:
    """The reads of the `<base>?tools=a,b` form that returned a JSON object: (names, object, exchange)."""
    assert disc.base is not None
    found = []
    for exchange in reads:
        requested = _requested(str(exchange.params["uri"]), disc.base)
        got = read_body(exchange).mapping
        if requested and got is not None:
            found.append((requested, got, exchange))
    return found


def _folded(name: str) -> str:
    return name.casefold().translate(_PUNCTUATION)


_PUNCTUATION = str.maketrans("", "", "_-. ")


def _definition_of(entry: Any, key: str, disc: Discovery) -> str | None:
    """The listed tool whose definition `entry` (under `key`, no listed name) is: named so, or (unnamed) with an
    inputSchema only that tool's definition has. None for an error entry, or for a case or punctuation variant of
    `key` (resource-read/exact-match and punctuation-match judge those)."""
    if not isinstance(entry, dict) or "error" in entry:
        return None
    named = entry.get("name")
    if not isinstance(named, str):
        schema = json.dumps(entry.get("inputSchema"), sort_keys=True)
        alike = [n for n, e in disc.entries.items() if json.dumps(e.get("inputSchema"), sort_keys=True) == schema]
        named = alike[0] if "inputSchema" in entry and len(alike) == 1 else None
    if named is None or named == key or named not in disc.names or _folded(named) == _folded(key):
        return None
    return named


def _entries_match_keys(rec: Recorder, disc: Discovery, reads: list[Exchange]) -> None:
    """resource-read/entries-match-keys (4.4): under each requested name, that tool's definition, in every read of
    the run: named after its key, the same inputSchema whichever names were read with it, and the hints tools/list
    gave it. A server that pairs names with definitions by position passes a one-name read and fails here."""
    listed = set(disc.names)
    hinted = {t["name"]: t["annotations"] for t in disc.gated_tools if isinstance(t.get("annotations"), dict)}
    first: dict[str, tuple[str, str]] = {}  # name -> (its inputSchema as JSON, the selection it was first read in)
    problems: dict[str, tuple[str, Exchange]] = {}  # one per tool
    judged = strays = 0
    for requested, got, exchange in _plain_reads(disc, reads):
        selection = f"?tools={','.join(requested)}"
        for name in requested:
            entry = got.get(name)
            if name not in listed and name not in problems:
                strays += 1
                other = _definition_of(entry, name, disc)
                if other is not None:
                    problems[name] = (
                        f"{selection}: the entry under {name}, which is no listed tool, is the definition of {other!r}",
                        exchange,
                    )
                continue
            if not isinstance(entry, dict) or "error" in entry or name in problems:
                continue
            judged += 1
            named, hints, schema = entry.get("name"), entry.get("annotations"), entry.get("inputSchema")
            if isinstance(named, str) and named != name:
                problems[name] = (f"{selection}: the entry under {name} is the definition of {named!r}", exchange)
                continue
            if isinstance(hints, dict) and name in hinted:
                clash = next(
                    (
                        f"{hint}={json.dumps(hinted[name][hint])} in tools/list, {json.dumps(hints[hint])} in its entry"
                        for hint in ("readOnlyHint", "destructiveHint")
                        if isinstance(hinted[name].get(hint), bool)
                        and isinstance(hints.get(hint), bool)
                        and hinted[name][hint] != hints[hint]
                    ),
                    None,
                )
                if clash:
                    problems[name] = (f"{selection}: {name} has {clash}", exchange)
                    continue
            text = schema_identity(schema)
            seen, where = first.setdefault(name, (text, selection))
            if seen != text:
                properties = sorted(schema.get("properties") or {}) if isinstance(schema, dict) else schema
                problems[name] = (
                    f"{name}: its inputSchema in {selection} (properties {short(properties, 60)}) is not the one "
                    f"{where} served",
                    exchange,
                )
    if not judged:
        rec.skip("resource-read/entries-match-keys", "no read returned a definition of a listed tool")
        return
    rec.judge(
        "resource-read/entries-match-keys",
        list(problems.values()),
        ok=f"{judged} entries in the run's reads: each the definition of its key, the same in every read"
        + (f"; none of {strays} entries under unknown names is a tool's definition" if strays else ""),
        expected='under each requested name, that tool\'s definition: {"<name>": {"name": "<name>", ...}}, the same '
        "whichever names are read with it",
        prefix=f"{len(problems)} requested name{' was' if len(problems) == 1 else 's were'} answered with another "
        "tool's definition: ",
    )


def _requested_keys_only(rec: Recorder, disc: Discovery, reads: list[Exchange]) -> None:
    """resource-read/requested-keys-only (4.4: only the requested names as keys), in reads naming unknown tools:
    a key that only such reads carry (e.g. {"errors": {...}} grouping them) is neither a tool nor requested. Keys
    that reads of listed names carry too are resource-read/no-preamble's to judge."""
    listed = set(disc.names)
    plain = _plain_reads(disc, reads)
    usual = {k for requested, got, _ in plain if set(requested) <= listed for k in got if k not in requested}
    naming = [(requested, got, x) for requested, got, x in plain if not set(requested) <= listed]
    if not naming:
        rec.skip("resource-read/requested-keys-only", "no read of the run named an unknown tool")
        return
    problems: dict[tuple[str, ...], tuple[str, Exchange]] = {}
    for requested, got, exchange in naming:
        strangers = tuple(k for k in got if k not in requested and k not in listed and k not in usual)
        unknown = [n for n in requested if n not in listed]
        grouped = [k for k in strangers if any(n in json.dumps(got[k]) for n in unknown)]
        if strangers and strangers not in problems:
            why = f" (holding {', '.join(unknown[:2])})" if grouped else ""
            message = f"?tools={','.join(requested)}: unrequested top-level keys {list(strangers[:4])}{why}"
            problems[strangers] = (message, exchange)
    rec.judge(
        "resource-read/requested-keys-only",
        list(problems.values()),
        ok=f"{len(naming)} reads naming unknown tools kept to the requested names as keys",
        expected='only requested names as keys; an unknown name\'s error entry under that name: {"<name>": {"error": '
        "...}}",
        prefix="",
    )


def judge_reads(rec: Recorder, disc: Discovery, reads: list[Exchange]) -> None:
    """content-items, content-mime-type and complete-responses over every successful read of the run."""
    if disc.base is None:
        return
    mine = [r for r in reads if base_uri(str(r.params.get("uri", ""))) == disc.base and r.error is None]
    if not mine:
        for check in ("content-items", "content-mime-type", "complete-responses", *_KEY_CHECKS):
            rec.skip(f"resource-read/{check}", "no read of the resource succeeded")
        return
    _entries_match_keys(rec, disc, mine)
    _requested_keys_only(rec, disc, mine)
    split: list[tuple[str, Exchange]] = []
    mime: list[tuple[str, Exchange]] = []
    short_reads: list[tuple[str, Exchange]] = []
    listed = set(disc.names)
    for exchange in mine:
        uri = str(exchange.params["uri"])
        contents = (exchange.result or {}).get("contents")
        items = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
        if len(items) != 1:
            kinds = [short(c.get("text") or c.get("blob") or c, 40) for c in items[1:3]]
            split.append((f"{uri}: {len(items)} content items" + (f" (more: {kinds})" if kinds else ""), exchange))
        for item in items:
            if item.get("mimeType") != "application/json":
                mime.append((f"{uri}: mimeType {item.get('mimeType')!r}", exchange))
                break
        for item in items[1:]:
            text = item.get("text")
            if isinstance(text, str):
                try:
                    json.loads(text)
                except ValueError:
                    split.append((f"{uri}: a further item holds text {short(text, 60)!r}", exchange))
        requested = _requested(uri, disc.base)
        got = read_body(exchange).mapping
        if requested and got is not None:
            missing = [n for n in requested if n in listed and n not in got]
            if missing:
                short_reads.append(
                    (f"{uri}: {len(missing)} requested tools missing ({', '.join(missing[:4])})", exchange)
                )

    def judge(check: str, problems: list[tuple[str, Exchange]], ok: str, expected: str) -> None:
        rec.judge(check, problems, ok=ok, expected=expected, prefix=f"{len(problems)} of {len(mine)} reads: ")

    judge(
        "resource-read/content-items",
        split,
        f"all {len(mine)} successful reads returned one content item",
        "exactly one content item, the JSON object of spec 4.4",
    )
    judge(
        "resource-read/content-mime-type",
        mime,
        f"every content item of {len(mine)} reads is application/json",
        '"mimeType": "application/json" on every content item',
    )
    judge(
        "resource-read/complete-responses",
        short_reads,
        f"no successful read of {len(mine)} left out a requested tool",
        "every requested, listed tool in the answer, or an error (e.g. RATE_LIMITED) for the whole read",
    )
