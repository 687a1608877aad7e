"""The description store: per-tool JSON files, validated once, served from memory, reloaded on change.

It also merges those files with the tools a server registers in code (the catalog), so a tool
without a file still has a full definition and a file for a tool the server lacks is reported.
Knows nothing about sessions or transports.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import mcp_types as types
from pydantic import ValidationError

from ._model import ToolDefinition, first_sentence

__all__ = ["Catalog", "DescriptionStore", "ListedTool", "Problem", "listed_name"]

logger = logging.getLogger("mcp_pd.store")

MAX_FILE_BYTES: Final = 1 << 20
ChangeListener = Callable[[frozenset[str]], Awaitable[None]]


@dataclass(frozen=True)
class Problem:
    """Something wrong with a definition source, said so an author can fix it."""

    source: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}"


def _is_definition_file(path: Path) -> bool:
    # Editors and atomic writers leave temporaries beside the real file; only `name.json` counts.
    return path.suffix == ".json" and not path.name.startswith((".", "#", "~"))


def _read_definition(path: Path) -> ToolDefinition:
    """Parse and validate one file; raises ValueError with a reason fit for a log line."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"file is {size} bytes; definitions are limited to {MAX_FILE_BYTES}")
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read file: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object describing one tool")
    try:
        definition = ToolDefinition.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"not a valid tool definition: {details}") from None
    if definition.name != path.stem:
        raise ValueError(f"the file is named {path.name!r} but defines tool {definition.name!r}; they must match")
    return definition


class DescriptionStore:
    """Last-good definitions from a directory of `<tool>.json` files.

    A file that fails to parse never removes a tool: its last good version stays served and the
    reason is kept in `problems` and logged. Deleting a file drops its definition.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._definitions: dict[str, ToolDefinition] = {}
        self._problems: dict[str, Problem] = {}
        self._listeners: list[ChangeListener] = []
        self.generation = 0
        if self.directory is not None:
            self._load_all()

    # -- reading ---------------------------------------------------------------------------------
    def get(self, name: str) -> ToolDefinition | None:
        return self._definitions.get(name)

    def names(self) -> frozenset[str]:
        return frozenset(self._definitions)

    @property
    def problems(self) -> list[Problem]:
        return list(self._problems.values())

    def __len__(self) -> int:
        return len(self._definitions)

    # -- loading ---------------------------------------------------------------------------------
    def rescan(self) -> frozenset[str]:
        """Re-read the whole directory (catching up on anything missed while not watching)."""
        if self.directory is None:
            return frozenset()
        known = {self.directory / f"{name}.json" for name in self._definitions}
        return self._load_all(known)

    def _load_all(self, also: Iterable[Path] = ()) -> frozenset[str]:
        assert self.directory is not None
        if not self.directory.is_dir():
            self._set_problem(
                Problem(str(self.directory), "descriptions directory does not exist or is not a directory")
            )
            return frozenset()
        try:
            paths = sorted(p for p in self.directory.iterdir() if _is_definition_file(p))
        except OSError as exc:
            self._set_problem(Problem(str(self.directory), f"cannot list directory: {exc.strerror or exc}"))
            return frozenset()
        self._problems.pop(str(self.directory), None)
        return self.reload(sorted(set(paths) | set(also)))

    def reload(self, paths: Iterable[Path]) -> frozenset[str]:
        """Re-read `paths` (changed, added or deleted); return the tool names whose definition changed."""
        changed: set[str] = set()
        for path in paths:
            if not _is_definition_file(path):
                continue
            name = path.stem
            if not path.exists():
                self._problems.pop(str(path), None)
                if self._definitions.pop(name, None) is not None:
                    logger.info("definition removed: %s", path)
                    changed.add(name)
                continue
            try:
                definition = _read_definition(path)
            except ValueError as exc:
                kept = " (keeping the last good version)" if name in self._definitions else ""
                self._set_problem(Problem(str(path), f"{exc}{kept}"))
                continue
            self._problems.pop(str(path), None)
            if self._definitions.get(name) != definition:
                self._definitions[name] = definition
                changed.add(name)
        if changed:
            self.generation += 1
        return frozenset(changed)

    def _set_problem(self, problem: Problem) -> None:
        if self._problems.get(problem.source) != problem:
            logger.warning("tool definition problem: %s", problem)
        self._problems[problem.source] = problem

    # -- watching --------------------------------------------------------------------------------
    def add_listener(self, listener: ChangeListener, *, first: bool = False) -> None:
        """Call `listener(changed_names)` after every reload that changed something (`first`: before the others)."""
        self._listeners.insert(0 if first else len(self._listeners), listener)

    async def watch(self, *, debounce_ms: int = 50, stop_event: anyio.Event | None = None) -> None:
        """Reload files as they change until cancelled (or `stop_event` is set)."""
        if self.directory is None or not self.directory.is_dir():
            return
        from watchfiles import awatch  # imported lazily: a server that never watches never loads the watcher

        caught_up = self.rescan()  # edits made before watching started
        if caught_up:
            await self._notify(caught_up)
        async for changes in awatch(
            self.directory, debounce=debounce_ms, step=20, stop_event=stop_event, recursive=False
        ):
            changed = self.reload({Path(path) for _, path in changes})
            if changed:
                await self._notify(changed)

    async def _notify(self, changed: frozenset[str]) -> None:
        for listener in self._listeners:
            try:
                await listener(changed)
            except Exception:  # one failing listener must not stop reloads
                logger.exception("description change listener failed")


# A listed tool as the server's handler returned it: an SDK `Tool` model or its wire-form dict.
ListedTool = types.Tool | Mapping[str, Any]


def listed_name(tool: ListedTool) -> str | None:
    """The name of a listed tool, or None when it has none."""
    name = tool.name if isinstance(tool, types.Tool) else tool.get("name")
    return name if isinstance(name, str) else None


def _wire(tool: ListedTool) -> Mapping[str, Any]:
    # Only read by `_merge`: a dict is already the catalog's own copy, so it is not copied again.
    if isinstance(tool, types.Tool):
        return tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return tool


@dataclass(slots=True)
class _CatalogEntry:
    # A shallow copy of the listed tool, not a dumped one: re-listing compares against it cheaply (`==`
    # over the shared schema dicts) and nothing is held twice. Reassigning a field of a listed model is
    # seen; mutating a nested dict in place (e.g. a schema's properties) is not: list a new dict instead.
    source: ListedTool
    file_generation: int
    definition: ToolDefinition
    minimal: dict[str, Any]
    full: dict[str, Any]
    # `full` as JSON text, made on the first read: serializing a definition was most of a read's cost.
    full_text: str | None = None


@dataclass
class Catalog:
    """The tools a server really has, each merged with its JSON file (if any).

    Fed from the server's own `tools/list` output, so it sees exactly what the server would list.
    `list_annotations`: minimal entries keep `title` and `annotations` (see `ToolDefinition.minimal_entry`).
    """

    store: DescriptionStore
    list_annotations: bool = False
    _entries: dict[str, _CatalogEntry] = field(default_factory=dict)
    _reported: set[str] = field(default_factory=set)
    refreshed_at: float = float("-inf")
    complete: bool = False

    def update(self, tools: Iterable[ListedTool], *, complete: bool) -> None:
        """Merge a listing (SDK `Tool` models or wire-form dicts). `complete` means it was the whole catalog."""
        seen: set[str] = set()
        generation = self.store.generation
        for tool in tools:
            name = listed_name(tool)
            if name is None:
                continue
            seen.add(name)
            entry = self._entries.get(name)
            if entry is not None and entry.file_generation == generation and entry.source == tool:
                continue
            # Copied: the server may change and re-list the very object it listed before.
            source = tool.model_copy() if isinstance(tool, types.Tool) else dict(tool)
            self._entries[name] = self._build(source, generation)
        if complete:
            for gone in set(self._entries) - seen:
                del self._entries[gone]
            self.complete = True
            self._report_orphans()
        self.refreshed_at = time.monotonic()

    def _build(self, source: ListedTool, generation: int) -> _CatalogEntry:
        definition = self._merge(_wire(source))
        return _CatalogEntry(
            source,
            generation,
            definition,
            definition.minimal_entry(list_annotations=self.list_annotations),
            definition.full_entry(),
        )

    def _entry(self, name: str) -> _CatalogEntry | None:
        entry = self._entries.get(name)
        if entry is not None and entry.file_generation != self.store.generation:
            # A file changed since this entry was merged: rebuild it now, so reads see edits at once.
            entry = self._entries[name] = self._build(entry.source, self.store.generation)
        return entry

    def get(self, name: str) -> ToolDefinition | None:
        entry = self._entry(name)
        return entry.definition if entry else None

    def minimal(self, name: str) -> dict[str, Any] | None:
        entry = self._entry(name)
        return entry.minimal if entry else None

    def full(self, name: str) -> dict[str, Any] | None:
        entry = self._entry(name)
        return entry.full if entry else None

    def full_text(self, name: str) -> str | None:
        """`full(name)` as JSON text (`json.dumps(..., ensure_ascii=False)`), serialized once per version."""
        entry = self._entry(name)
        if entry is None:
            return None
        if entry.full_text is None:
            entry.full_text = json.dumps(entry.full, ensure_ascii=False)
        return entry.full_text

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def orphans(self) -> list[str]:
        """Definition files naming a tool the server does not have."""
        return sorted(self.store.names() - set(self._entries)) if self.complete else []

    def _report_orphans(self) -> None:
        for name in self.orphans():
            if name not in self._reported:
                self._reported.add(name)
                logger.warning(
                    "%s.json describes a tool this server does not have; it is not listed or served",
                    self.store.directory / name if self.store.directory else name,
                )

    def _merge(self, tool: Mapping[str, Any]) -> ToolDefinition:
        """The code tool enriched by its file; the registered schema wins when the file's disagrees."""
        name = str(tool["name"])
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {"type": "object"}
        assert isinstance(schema, dict)
        # Docstring-derived descriptions keep their source indentation; clean it as help() would.
        code_description = inspect.cleandoc(str(tool.get("description") or ""))
        file_def = self.store.get(name)
        if file_def is None:
            return ToolDefinition.model_validate(
                {
                    "name": name,
                    "title": tool.get("title"),
                    "description": code_description or f"The {name} tool.",
                    "minimal_description": first_sentence(code_description) if code_description else None,
                    "inputSchema": schema,
                    "outputSchema": tool.get("outputSchema"),
                    "annotations": tool.get("annotations"),
                    "_meta": tool.get("_meta"),
                }
            )
        updates: dict[str, Any] = {}
        if not _same_parameters(file_def.input_schema, schema):
            logger.warning(
                "%s.json: its inputSchema parameters differ from the registered tool's; serving the registered schema",
                self.store.directory / name if self.store.directory else name,
            )
            updates["input_schema"] = schema
        for attr, key in (("title", "title"), ("output_schema", "outputSchema"), ("annotations", "annotations")):
            if getattr(file_def, attr) is None and tool.get(key) is not None:
                updates[attr] = tool[key]
        return file_def.model_copy(update=updates) if updates else file_def


def _same_parameters(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    props_a = a.get("properties") or {}
    props_b = b.get("properties") or {}
    return set(props_a) == set(props_b) and set(a.get("required") or ()) == set(b.get("required") or ())
