"""Selection parsing beyond the easy cases: long lists, mixed names, near-miss names, encodings, other parameters.

The spec's rules (4.3: comma-separated, exact names) are MUST checks; the encodings and the handling
of other parameters are the project's interpretation I-3 and only WARN.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ._checks import Discovery, selection_uri, unknown_name
from ._documents import read_body
from ._probe import Exchange, Peer, short
from ._record import Recorder

__all__ = ["near_miss", "selection_parsing", "served_as_tool"]


def served_as_tool(got: dict[str, Any], key: str) -> bool:
    """Whether `got[key]` is a full definition rather than an error entry."""
    entry = got.get(key)
    return isinstance(entry, dict) and "inputSchema" in entry and "error" not in entry


def near_miss(name: str, listed: list[str]) -> str | None:
    """`name` with its punctuation changed ('_' <-> '-', or a trailing '_'), not itself a listed name."""
    candidates = [name.replace("_", "-", 1), name.replace("-", "_", 1), name.replace(".", "_", 1), name + "_"]
    return next((v for v in candidates if v != name and v not in listed), None)


def partial_names(names: list[str]) -> tuple[str, list[str]] | None:
    """A listed name and the names that only resemble it: a prefix (two thirds of it, at least two characters) and a
    near spelling (two neighbouring letters swapped), neither of them listed. None when no listed name has three."""
    for name in names:
        if len(name) < 3:
            continue
        prefix = name[: max(2, len(name) * 2 // 3)]
        middle = len(name) // 2
        swaps = [name[:i] + name[i + 1] + name[i] + name[i + 2 :] for i in range(middle, len(name) - 1)]
        swaps += [name[:i] + name[i + 1] + name[i] + name[i + 2 :] for i in range(1, middle)]
        typo = next((v for v in swaps if v != name and v not in names), None)
        variants = [v for v in (prefix, typo) if v is not None and v not in names]
        if variants:
            return name, variants
    return None


def _error_entries(got: dict[str, Any]) -> list[str]:
    """Keys answered as unknown names: what a misparsed selection turns into."""
    return [k for k, v in got.items() if isinstance(v, dict) and "error" in v]


def _keys(exchange: Exchange) -> tuple[dict[str, Any] | None, str]:
    body = read_body(exchange)
    if body.mapping is None:
        return None, body.problem or "no JSON object"
    return body.mapping, ""


async def selection_parsing(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """resource-read/several-names, mixed-known-unknown, punctuation-match, encoded-selection, other-parameters;
    and one re-read of the first names in reverse order, for resource-read/entries-match-keys."""
    assert disc.base is not None
    base, names = disc.base, disc.names
    unknown = unknown_name(names)

    if len(names) >= 3:
        wanted = names[:5]
        exchange = await peer.read(selection_uri(base, *wanted))
        got, problem = _keys(exchange)
        # Unrequested keys are resource-read/only-requested's and no-preamble's to judge.
        missing = [n for n in wanted if got is None or not served_as_tool(got, n)]
        if got is not None and not missing:
            rec.ok("resource-read/several-names", f"?tools= with {len(wanted)} names served each of them")
        else:
            rec.fail(
                "resource-read/several-names",
                f"?tools={','.join(wanted)}: " + (problem or f"no full definition for {missing}"),
                expected=f"full definitions of each of {wanted}",
                exchange=exchange,
            )
    else:
        rec.skip("resource-read/several-names", f"the server lists {len(names)} tools; three are needed")
    # The same names again, in reverse order: resource-read/entries-match-keys compares every entry with the earlier
    # reads', so a server answering from a cache keyed by the set of names (paired by position) shows there.
    if len(names) >= 2:
        await peer.read(selection_uri(base, *reversed(names[:5])))

    known = names[:2]
    mixed = [known[0], unknown, *known[1:]]
    exchange = await peer.read(selection_uri(base, *mixed))
    got, problem = _keys(exchange)
    missing = [n for n in known if got is None or not served_as_tool(got, n)]
    if got is not None and not missing and not served_as_tool(got, unknown):
        rec.ok("resource-read/mixed-known-unknown", f"?tools={','.join(mixed)} served {', '.join(known)}")
    else:
        rec.fail(
            "resource-read/mixed-known-unknown",
            f"?tools={','.join(mixed)}: " + (problem or f"no full definition for {missing}"),
            expected=f"full definitions of {known} and an error entry (at most) for {unknown}",
            exchange=exchange,
        )

    name = names[0]
    variant = near_miss(name, names)
    if variant is None:
        rec.skip("resource-read/punctuation-match", f"no punctuation variant of {name!r} is free to try")
    else:
        exchange = await peer.read(selection_uri(base, variant))
        got, _problem = _keys(exchange)
        others = [k for k in got or {} if k in names and k != name]
        if others:
            rec.skip(
                "resource-read/punctuation-match",
                f"?tools={variant} returned unrequested tools ({', '.join(others[:3])}; see "
                "resource-read/only-requested), so exact matching cannot be judged",
            )
        elif got is not None and (served_as_tool(got, variant) or (variant not in got and served_as_tool(got, name))):
            rec.fail(
                "resource-read/punctuation-match",
                f"?tools={variant} was served as {name}",
                expected=f"no description for {variant!r} (names match exactly); an error entry at most",
                exchange=exchange,
            )
        else:
            rec.ok("resource-read/punctuation-match", f"?tools={variant} was not served as {name}")

    await _partial_names(peer, rec, base, names)
    await _encodings(peer, rec, base, names)
    await _other_parameters(peer, rec, base, name)


async def _partial_names(peer: Peer, rec: Recorder, base: str, names: list[str]) -> None:
    """resource-read/no-partial-match (4.3: exact names, no fuzzy matching): a prefix and a near spelling of a listed
    name, each read alone, must not be answered with that tool's definition (under either key)."""
    found = partial_names(names)
    if found is None:
        rec.skip("resource-read/no-partial-match", "no listed name has three characters or more to vary")
        return
    name, variants = found
    problems: list[tuple[str, Exchange]] = []
    for variant in variants:
        exchange = await peer.read(selection_uri(base, variant))
        got, _problem = _keys(exchange)
        others = [k for k in got or {} if k in names and k != name]
        if others:  # every tool, or neighbours: resource-read/only-requested's to judge, not a match
            rec.skip(
                "resource-read/no-partial-match",
                f"?tools={variant} returned unrequested tools ({', '.join(others[:3])}; see "
                "resource-read/only-requested), so exact matching cannot be judged",
            )
            return
        if got is not None and (served_as_tool(got, variant) or (variant not in got and served_as_tool(got, name))):
            problems.append((f"?tools={variant} was served as {name}", exchange))
    rec.judge(
        "resource-read/no-partial-match",
        problems,
        ok=f"{' and '.join(f'?tools={v}' for v in variants)} were not served as {name}",
        expected=f"no definition for {' or '.join(repr(v) for v in variants)} (names match exactly); an error entry "
        "at most",
        prefix="names that only resemble a listed one were answered with its definition: ",
    )


async def _encodings(peer: Peer, rec: Recorder, base: str, names: list[str]) -> None:
    a, b = names[0], names[1] if len(names) > 1 else names[0]
    both = list(dict.fromkeys([a, b]))
    cases = [
        (f"?tools={quote(a, safe='')}%2C{quote(b, safe='')}", both, "%2C as the comma"),
        ("?tools=" + "".join(f"%{byte:02X}" for byte in a.encode()), [a], "every character percent-encoded"),
        (f"?tools=%20{quote(a, safe='')}%20,%20{quote(b, safe='')}%20", both, "spaces around the names"),
        (f"?tools={quote(a, safe='')}&tools={quote(b, safe='')}", both, "a repeated tools= parameter"),
        (f"?tools={quote(a, safe='')},{quote(a, safe='')}", [a], "a duplicated name"),
    ]
    problems: list[tuple[str, Exchange]] = []
    for query, wanted, what in cases:
        exchange = await peer.read(base + query)
        got, problem = _keys(exchange)
        if got is None or not all(served_as_tool(got, n) for n in wanted) or _error_entries(got):
            problems.append((f"{what} ({query}): {problem or f'keys {short(list(got or {}), 80)}'}", exchange))
    rec.judge(
        "resource-read/encoded-selection",
        problems,
        ok=f"{len(cases)} encodings of one selection served the same tools",
        expected="percent-decoding before splitting, trimmed names, merged tools= parameters, no duplicates "
        "(interpretation I-3)",
        prefix=f"{len(problems)} of {len(cases)} encodings did not select the same tools: ",
    )


async def _other_parameters(peer: Peer, rec: Recorder, base: str, name: str) -> None:
    problems: list[tuple[str, Exchange]] = []
    for query in (f"?format=json&tools={quote(name, safe='')}", f"?tools={quote(name, safe='')}&lang=en"):
        exchange = await peer.read(base + query)
        got, problem = _keys(exchange)
        if got is None or not served_as_tool(got, name) or _error_entries(got):
            problems.append((f"{query}: {problem or f'keys {short(list(got or {}), 80)}'}", exchange))
    rec.judge(
        "resource-read/other-parameters",
        problems,
        ok="parameters beside tools= were ignored",
        expected=f"exactly {name!r}: parameters other than tools are ignored (interpretation I-3)",
        prefix="another query parameter changed the answer: ",
        shown=None,
    )
