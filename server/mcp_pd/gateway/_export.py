"""Exported definitions: one `<tool>.json` per served tool in the layout the library serves, plus a manifest.

`export` writes them from live upstreams, ready to be enriched by hand (examples, guidance); re-exporting keeps
what was written by hand and refreshes what the upstream owns (its schemas, annotations, and its description
unless that was edited by hand). `load_cache` reads them back so the gateway can list and describe every tool
without starting any upstream. The manifest (`.gateway.json`; a dot file, which the description store ignores)
maps each file to its upstream and tool, and keeps a digest of each description export wrote, so that a
description edited by hand can be told from one copied from the upstream (`CachedServer.hand_written`).

Files are named after tools, and tools are named by upstreams: a name that is not a SEP-986 tool name, starts
with a dot, or whose file would resolve outside the folder (`../x`, an absolute path, a link out) is skipped with
a warning, by `export` and by `load_cache` alike; nothing is read or written outside the folder. Every file is
read as the description store reads definitions (`mcp_pd._store._read_regular`): only a regular file, opened
without blocking, of bounded size, so a FIFO or a device named like a cached definition is refused with why
instead of hanging the gateway's start.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from mcp_pd._model import TOOL_NAME_PATTERN
from mcp_pd._store import _read_regular

from ._names import assign_names
from ._server import UPSTREAM_FIELDS, CachedServer

__all__ = ["MANIFEST", "ExportReport", "definition_file", "load_cache", "write_export"]

MANIFEST: Final = ".gateway.json"
FORMAT: Final = 1
# The manifest names every tool of every upstream (about 100 bytes each): room for far more than any catalog.
_MANIFEST_BYTES: Final = 32 << 20
# Fields the upstream owns: refreshed on every export. Everything else in a file is the author's and is kept (the
# description too, once edited by hand).
_UPSTREAM_FIELDS: Final = UPSTREAM_FIELDS


@dataclass
class ExportReport:
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # existing files that could not be merged, and why


def _shown(name: str) -> str:
    """A name as a warning line shows it: quoted, escaped, and cut short."""
    return repr(name[:80]) + ("..." if len(name) > 80 else "")


def definition_file(directory: Path, name: str) -> Path | str:
    """`<directory>/<name>.json`, or why a tool so named can have no file there (it is then skipped)."""
    if not TOOL_NAME_PATTERN.fullmatch(name):
        return "its name is not a SEP-986 tool name (1-128 characters of A-Z a-z 0-9 _ - .)"
    if name.startswith("."):
        return "its name starts with a dot (a hidden file, which the description store ignores)"
    path = directory / f"{name}.json"
    try:
        inside = path.resolve().parent == directory.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, say
        return f"its file cannot be resolved ({exc})"
    return path if inside else f"its file {path} resolves outside {directory} (a link?)"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    temporary = path.with_name(f".{path.name}.tmp")  # dot-named: the store ignores it while it is written
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _definition(served: str, tool: types.Tool, category: str, upstream: Mapping[str, Any]) -> dict[str, Any]:
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    body: dict[str, Any] = {"name": served}
    if "title" in wire:
        body["title"] = wire["title"]
    body["description"] = wire.get("description") or f"The {tool.name} tool of {category}."
    for key in _UPSTREAM_FIELDS[1:]:
        if key in wire:
            body[key] = wire[key]
    body["category"] = category
    # An upstream that serves its own full definitions (progressive disclosure) has examples and guidance already.
    body["examples"] = upstream.get("examples") or []
    for key in ("usage_guidance", "error_guidance"):
        if upstream.get(key) is not None:
            body[key] = upstream[key]
    return body


def write_export(
    out: Path,
    listings: Mapping[str, tuple[types.Tool, ...]],
    *,
    instructions: Mapping[str, str | None],
    prefixes: Mapping[str, str],
    categories: Mapping[str, str],
    reserved: Iterable[str],
    definitions: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> ExportReport:
    """Write (or merge into) `out`: a definition file per served tool and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    routes = assign_names({s: [t.name for t in tools] for s, tools in listings.items()}, prefixes, reserved)
    by_route = {(s, t.name): t for s, tools in listings.items() for t in tools}
    report = ExportReport()
    manifest = _read_manifest(out)
    servers = manifest.setdefault("servers", {})
    # Per server: each served name with a file, and the digest of the description export wrote there ("": unknown).
    exported: dict[str, dict[str, str]] = {}
    for served, route in routes.items():
        path = definition_file(out, served)
        if isinstance(path, str):
            report.skipped.append(f"tool {_shown(route.tool)} of upstream '{route.server}' not exported: {path}")
            continue
        own = (definitions or {}).get(route.server, {}).get(route.tool, {})
        fresh = _definition(
            served, by_route[(route.server, route.tool)], categories.get(route.server, route.server), own
        )
        written = exported.setdefault(route.server, {})
        written[served] = before = _recorded(servers.get(route.server), served)
        if not path.exists():
            _write_json(path, fresh)
            report.written.append(served)
            written[served] = _digest(fresh["description"])
            continue
        try:
            existing = json.loads(_read_regular(path))
            if not isinstance(existing, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            report.skipped.append(f"{path}: left as it is ({exc}); delete it to export it again")
            continue
        merged = {k: v for k, v in existing.items() if k not in _UPSTREAM_FIELDS}
        merged.update({k: fresh[k] for k in _UPSTREAM_FIELDS if k in fresh})
        merged["name"] = served
        description = existing.get("description")
        if not isinstance(description, str) or _digest(description) == before:
            merged["description"] = fresh["description"]  # what export wrote last time: the upstream's to refresh
        written[served] = _digest(merged["description"]) if merged["description"] == fresh["description"] else before
        for key in ("category", "examples"):
            merged.setdefault(key, fresh[key])
        if merged == existing:
            report.unchanged.append(served)
        else:
            _write_json(path, merged)
            report.updated.append(served)
    for server in listings:
        written = exported.get(server, {})
        servers[server] = {
            "instructions": instructions.get(server),
            "tools": {served: r.tool for served, r in routes.items() if r.server == server and served in written},
            # What export last wrote as each description (absent: written by hand since the first export).
            "descriptions": {served: digest for served, digest in written.items() if digest},
        }
    _write_json(out / MANIFEST, {"format": FORMAT, "servers": servers})
    return report


def _recorded(entry: Any, served: str) -> str:
    """The digest of the description export last wrote for `served`, or "" when it is not known."""
    digests = entry.get("descriptions") if isinstance(entry, dict) else None
    digest = digests.get(served) if isinstance(digests, dict) else None
    return digest if isinstance(digest, str) else ""


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        return {}
    if path.resolve().parent != directory.resolve():
        raise ValueError(f"{path}: resolves outside {directory} (a link?); not read")
    try:
        data = json.loads(_read_regular(path, _MANIFEST_BYTES))
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("servers"), dict):
        raise ValueError(f"{path}: not a gateway manifest of format {FORMAT}; export again with mcp-pd export")
    return data


def load_cache(directory: Path, servers: Iterable[str]) -> tuple[dict[str, CachedServer], list[str]]:
    """The cached tools of each configured server found in `directory`, and the problems met.

    Tools are returned under their upstream names (the gateway names them again, the same way). A tool whose file
    could lie outside `directory` is skipped (a problem says so); the rest of its server is still cached.
    """
    manifest = _read_manifest(directory)
    if not manifest:
        raise ValueError(f"{directory}: no {MANIFEST}; write the cache with `mcp-pd export --out {directory}`")
    cached: dict[str, CachedServer] = {}
    problems: list[str] = []
    for server in servers:
        entry = manifest["servers"].get(server)
        listed = entry.get("tools") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(listed, dict | None):
            problems.append(f"server {server!r} is not in the cache; it is started now to list its tools")
            continue
        tools = []
        hand_written = set()
        for served, upstream_name in sorted((listed or {}).items()):
            path = definition_file(directory, served)
            if isinstance(path, str) or not isinstance(upstream_name, str):
                why = path if isinstance(path, str) else "its upstream tool name is not a string"
                problems.append(f"{directory / MANIFEST}: tool {_shown(served)} of {server!r} skipped: {why}")
                continue
            try:
                data = json.loads(_read_regular(path))
                wire = {k: data[k] for k in ("description", *_UPSTREAM_FIELDS) if k in data}
                tools.append(types.Tool.model_validate({**wire, "name": upstream_name}))
            except (OSError, ValueError, TypeError) as exc:
                problems.append(f"{path}: cannot be used as a cached definition ({exc}); {server} is started instead")
                break
            description = wire.get("description")
            if not isinstance(description, str) or _digest(description) != _recorded(entry, served):
                hand_written.add(upstream_name)
        else:
            instructions = entry.get("instructions")
            cached[server] = CachedServer(
                tuple(tools), instructions if isinstance(instructions, str) else None, frozenset(hand_written)
            )
    return cached, problems
