"""`mcp-pd lint DIR`: every definition file's problems, with its path and what to do; judged against the tool too.

Alone, lint reads DIR as a server would (broken JSON, invalid schemas, examples a whole file's own schema rejects, a
file named for another tool, two files for one tool). Given the server (`--stdio CMD`, `--url URL`) or its saved
listing (`--listing FILE`), it also judges each file against the tool it describes, as the server does at load:
a file for a tool the server does not have, what the file may not change of the tool (`_overlay`: weaker safety
hints, other parameter types or constraints) and examples against the schema the model will actually receive (the
server's served definition, read from its descriptions resource where it has one). File names are printed escaped
(`_display.printable`): a hostile folder does not reach the terminal raw.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ._display import printable

__all__ = ["lint", "lint_parser", "registered_tools"]

# Names per read of the descriptions resource (well under any server's cap on one selection).
_BATCH: Final = 20
_META_TOOLS: Final = frozenset({"search_tools", "browse_tools", "call_tool"})
# Marks a tool whose definition could not be read (only its name is known).
_UNREAD: Final = "mcp-pd-lint/unread"


def lint_parser(sub: Any) -> None:
    """The `lint` subcommand's flags."""
    p = sub.add_parser(
        "lint",
        help="check a definitions directory: every file's problems, with its path (against the server, if given)",
        description="Read every <tool>.json under DIR as a server would and print each problem with its file's path "
        "(broken JSON, invalid schemas, examples the schema rejects, a file named for another tool, two files for "
        "one tool). A file with a description and an inputSchema defines a tool whole; one without them is an "
        "overlay that adds examples, guidance, a better description or more cautious annotations to the tool the "
        "server registers under that name. Given the server (--stdio, --url) or its listing (--listing), each file "
        "is also judged against its tool: a file for a tool the server does not have, safety hints weaker than the "
        "tool's, parameter types or constraints other than the tool's, examples the schema the model receives "
        "rejects. Exit status 1 when there is a problem, 2 when the server cannot be read.",
    )
    p.add_argument("descriptions", type=Path, metavar="DIR", help="directory of <tool>.json definitions")
    server = p.add_mutually_exclusive_group()
    server.add_argument("--stdio", metavar="COMMAND", help="the server's command line, e.g. 'python server.py'")
    server.add_argument(
        "--url", metavar="URL", help="the server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp"
    )
    server.add_argument(
        "--listing",
        type=Path,
        metavar="FILE",
        help='a saved tools/list result of the server (JSON: {"tools": [...]} or the list itself)',
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME: VALUE",
        help="with --url: an HTTP header to send, e.g. 'Authorization: Bearer TOKEN' (repeatable)",
    )


def lint(args: argparse.Namespace) -> int:
    """Run `mcp-pd lint`; the exit status."""
    from ._store import DescriptionStore

    logging.getLogger("mcp_pd").setLevel(logging.ERROR)  # each problem is printed once, below, not logged too
    if not args.descriptions.is_dir():
        raise SystemExit(f"mcp-pd lint: {printable(args.descriptions)} is not a directory")
    if args.header and not args.url:
        raise SystemExit("mcp-pd lint: --header applies to --url only")
    registered, against = _registered(args)
    store = DescriptionStore(args.descriptions)
    problems = [str(problem) for problem in store.problems]
    notes: list[str] = []
    for name in sorted(store.names()):
        where = printable(store.source(name))
        problems += [f"{where}: {why}" for why in judge_file(store, name, registered)]
        notes += [f"{where}: note: {note}" for note in spelling_notes(store, name)]
    for line in problems + notes:
        print(line)
    overlays = sum(store.is_overlay(name) for name in store.names())
    print(
        f"mcp-pd lint: {len(store)} definition(s) in {printable(args.descriptions)}: {len(store) - overlays} whole, "
        f"{overlays} overlay(s) (each adds to the tool the server registers under its name); {against}; "
        f"{len(problems)} problem(s)" + (f", {len(notes)} note(s)" if notes else ""),
        file=sys.stderr,
    )
    return 1 if problems else 0


def _registered(args: argparse.Namespace) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """The server's tools (wire form, by name) and how lint came by them; None without a server."""
    if args.listing is not None:
        listed = _from_listing(args.listing)
        return listed, f"judged against the {len(listed)} tools listed in {printable(args.listing)}"
    if args.stdio is None and args.url is None:
        return None, "not judged against a server (give --stdio, --url or --listing to judge overlays and names)"
    headers: dict[str, str] = {}
    for header in args.header:
        key, colon, value = header.partition(":")
        if not colon or not key.strip():
            raise SystemExit(f"mcp-pd lint: --header {printable(header)!r} is not 'NAME: VALUE'")
        headers[key.strip()] = value.strip()
    import anyio

    target = args.stdio if args.stdio is not None else args.url
    try:
        tools, how = anyio.run(lambda: registered_tools(target, stdio=args.stdio is not None, headers=headers))
    except Exception as exc:  # a person's mistake (a wrong command, a server that is down): said, no traceback
        raise SystemExit(
            f"mcp-pd lint: cannot read the server's tools ({'--stdio' if args.stdio is not None else '--url'} "
            f"{printable(target)}): {printable(_why(exc))}"
        ) from None
    if set(tools) >= _META_TOOLS:  # catalog mode lists its meta-tools (and pinned ones), not the catalog
        raise SystemExit(
            "mcp-pd lint: the server serves catalog mode (its listing is the meta-tools, not the catalog); lint "
            "against it in progressive mode (e.g. mcp-pd serve --mode progressive) or give its --listing"
        )
    return tools, f"judged against the server's {len(tools)} tools ({how})"


def _why(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _from_listing(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SystemExit(f"mcp-pd lint: --listing {printable(path)}: cannot read it as JSON ({exc})") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise SystemExit(f'mcp-pd lint: --listing {printable(path)}: expected {{"tools": [...]}} or a list of tools')
    return {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}


async def registered_tools(
    target: str, *, stdio: bool, headers: Mapping[str, str] | None = None
) -> tuple[dict[str, dict[str, Any]], str]:
    """Every tool the server at `target` lists (all pages), by name in wire form, with its full definition where the
    server serves progressive disclosure (its listing is then minimal: the descriptions resource holds what the model
    receives); and which of the two it came from."""
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    from ._model import MINIMAL_INPUT_SCHEMA, selection_uri

    source: Any
    if stdio:
        argv = shlex.split(target)
        if not argv:
            raise ValueError("--stdio needs a command line, e.g. --stdio 'python server.py'")
        source = StdioServerParameters(command=argv[0], args=argv[1:])
    elif headers:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=dict(headers), timeout=httpx2.Timeout(30, read=120))
        source = streamable_http_client(target, http_client=http)
    else:
        source = target
    tools: dict[str, dict[str, Any]] = {}
    async with Client(source, mode="legacy", cache=None) as client:
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                tools[tool.name] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            cursor = page.next_cursor
            if not cursor:
                break
        minimal = [n for n, t in tools.items() if t.get("inputSchema") == MINIMAL_INPUT_SCHEMA]
        if not minimal:
            return tools, "tools/list"
        unread: list[str] = []
        for start in range(0, len(minimal), _BATCH):
            batch = minimal[start : start + _BATCH]
            document: Any = None
            try:
                read = await client.read_resource(selection_uri(batch))
                document = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            except (MCPError, ValueError, AttributeError, IndexError):
                if "describe_tools" in tools:  # a server without the resource may still have the describe tool
                    with contextlib.suppress(MCPError, ValueError, AttributeError, IndexError):
                        result = await client.call_tool("describe_tools", {"tools": batch})
                        document = json.loads(result.content[0].text)  # type: ignore[union-attr]
            for name in batch:
                entry = document.get(name) if isinstance(document, dict) else None
                if isinstance(entry, dict) and isinstance(entry.get("inputSchema"), dict):
                    tools[name] = entry
                else:
                    # Only the minimal listing: its placeholder schema and missing hints say nothing of the tool.
                    tools[name] = {"name": name, _UNREAD: True}
                    unread.append(name)
    if unread:
        return tools, f"their served definitions; {len(unread)} could not be read, judged by name only"
    return tools, "their served definitions"


def judge_file(store: Any, name: str, registered: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """What is wrong with `name`'s file beyond what the store found when reading it: examples its own schema rejects
    (a whole file, without a server), else everything `_overlay` and the served schema say against the tool."""
    from ._model import example_problems
    from ._overlay import judge_overlay

    definition = store.get(name)
    if definition is None:
        return []
    if registered is None:
        if store.is_overlay(name):
            return []  # an overlay's examples meet the registered tool's schema: only the server can judge them
        return [f"example {i + 1}: {why}" for i, why in example_problems(definition).items()]
    tool = registered.get(name)
    if tool is None:
        close = difflib.get_close_matches(name, list(registered), n=1, cutoff=0.75)
        hint = f" (did you mean '{close[0]}'? then name the file {close[0]}.json)" if close else ""
        return [
            f"the server has no tool named '{name}'{hint}; the server does not serve this file: rename it to the "
            "name of the tool it describes, or remove it"
        ]
    if tool.get(_UNREAD):
        return []  # its definition could not be read: nothing to judge the file against but its name
    given = store.given(name)
    wire = definition.model_dump(mode="json", by_alias=True, exclude_none=True)
    verdict = judge_overlay(tool, wire, fields=given)
    problems = list(verdict.reasons)
    schema = verdict.updates.get("inputSchema") or (
        definition.input_schema if "inputSchema" in given else tool.get("inputSchema")
    )
    if isinstance(schema, dict):
        served = definition.model_copy(update={"input_schema": schema})
        problems += [
            f"example {i + 1}: {why}, as the model receives the tool's inputSchema; fix the example's input"
            for i, why in example_problems(served).items()
        ]
    return problems


def spelling_notes(store: Any, name: str) -> list[str]:
    """A note per example that names its arguments `arguments`: read as `input`, the spec's spelling (spec 4.4)."""
    definition = store.get(name)
    if definition is None:
        return []
    return [
        f'example {i + 1} names its arguments "arguments"; the spec\'s key is "input" (both are read: rename it)'
        for i, example in enumerate(definition.examples)
        if isinstance(example, dict) and "arguments" in example and "input" not in example
    ]
