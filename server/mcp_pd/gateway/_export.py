"""Exported definitions: one `<tool>.json` per served tool in the layout the library serves, plus a manifest.

`export` writes them from live upstreams, ready to be enriched by hand (examples, guidance); re-exporting keeps
what was written by hand and refreshes only what the upstream owns (its schemas and annotations). `load_cache`
reads them back so the gateway can list and describe every tool without starting any upstream. The manifest
(`.gateway.json`; a dot file, which the description store ignores) maps each file to its upstream and tool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from ._names import assign_names
from ._server import CachedServer

__all__ = ["MANIFEST", "ExportReport", "load_cache", "write_export"]

MANIFEST: Final = ".gateway.json"
FORMAT: Final = 1
# Fields the upstream owns: refreshed on every export. Everything else in a file is the author's and is kept.
_UPSTREAM_FIELDS: Final = ("title", "inputSchema", "outputSchema", "annotations", "icons", "execution", "_meta")


@dataclass
class ExportReport:
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # existing files that could not be merged, and why


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
    for served, route in routes.items():
        own = (definitions or {}).get(route.server, {}).get(route.tool, {})
        fresh = _definition(
            served, by_route[(route.server, route.tool)], categories.get(route.server, route.server), own
        )
        path = out / f"{served}.json"
        if not path.exists():
            _write_json(path, fresh)
            report.written.append(served)
            continue
        try:
            existing = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(existing, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            report.skipped.append(f"{path}: left as it is ({exc}); delete it to export it again")
            continue
        merged = {k: v for k, v in existing.items() if k not in _UPSTREAM_FIELDS}
        merged.update({k: fresh[k] for k in _UPSTREAM_FIELDS if k in fresh})
        merged["name"] = served
        for key in ("description", "category", "examples"):
            merged.setdefault(key, fresh[key])
        if merged == existing:
            report.unchanged.append(served)
        else:
            _write_json(path, merged)
            report.updated.append(served)
    manifest = _read_manifest(out)
    servers = manifest.setdefault("servers", {})
    for server in listings:
        servers[server] = {
            "instructions": instructions.get(server),
            "tools": {served: r.tool for served, r in routes.items() if r.server == server},
        }
    _write_json(out / MANIFEST, {"format": FORMAT, "servers": servers})
    return report


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("servers"), dict):
        raise ValueError(f"{path}: not a gateway manifest of format {FORMAT}; export again with mcp-pd export")
    return data


def load_cache(directory: Path, servers: Iterable[str]) -> tuple[dict[str, CachedServer], list[str]]:
    """The cached tools of each configured server found in `directory`, and the problems met.

    Tools are returned under their upstream names (the gateway names them again, the same way).
    """
    manifest = _read_manifest(directory)
    if not manifest:
        raise ValueError(f"{directory}: no {MANIFEST}; write the cache with `mcp-pd export --out {directory}`")
    cached: dict[str, CachedServer] = {}
    problems: list[str] = []
    for server in servers:
        entry = manifest["servers"].get(server)
        if not isinstance(entry, dict):
            problems.append(f"server {server!r} is not in the cache; it is started now to list its tools")
            continue
        tools = []
        for served, upstream_name in sorted((entry.get("tools") or {}).items()):
            path = directory / f"{served}.json"
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                wire = {k: data[k] for k in ("description", *_UPSTREAM_FIELDS) if k in data}
                tools.append(types.Tool.model_validate({**wire, "name": upstream_name}))
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: cannot be used as a cached definition ({exc}); {server} is started instead")
                break
        else:
            instructions = entry.get("instructions")
            cached[server] = CachedServer(tuple(tools), instructions if isinstance(instructions, str) else None)
    return cached, problems
