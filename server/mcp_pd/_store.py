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
import stat
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import mcp_types as types
from pydantic import ValidationError

from ._display import printable
from ._model import ToolDefinition, example_problems, first_sentence
from ._overlay import judge_overlay

__all__ = ["CATEGORY_META", "Catalog", "DescriptionStore", "ListedTool", "Problem", "listed_name"]

logger = logging.getLogger("mcp_pd.store")

MAX_FILE_BYTES: Final = 1 << 20
# The `_meta` key a listed tool names its category with (catalog mode); a plain `category` key is read too.
CATEGORY_META: Final = "io.github.mcp-pd/category"
ChangeListener = Callable[[frozenset[str]], Awaitable[None]]


@dataclass(frozen=True)
class Problem:
    """Something wrong with a definition source, said so an author can fix it."""

    source: str
    reason: str

    def __str__(self) -> str:
        # A file's name is anyone's to choose: printed escaped, never raw (issue 39.14).
        return f"{printable(self.source)}: {printable(self.reason)}"


def _dir_identity(directory: Path) -> tuple[int, int] | None:
    """(device, inode) of a directory, or None when there is no directory there now."""
    try:
        info = directory.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


def _is_definition_file(path: Path) -> bool:
    # Editors and atomic writers leave temporaries beside the real file; only `name.json` counts.
    return path.suffix == ".json" and not path.name.startswith((".", "#", "~"))


def _read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file (symlinks followed), at most `limit` bytes; anything else is refused.

    Opened non-blocking and checked with fstat on the open descriptor: a FIFO named `x.json` must not hang the
    server, and a link to /dev/zero (which stat reports as size 0) must not be read until memory runs out.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file (a FIFO, device, socket or directory); definitions are plain files")
        if info.st_size > limit:
            raise ValueError(f"file is {info.st_size} bytes; definitions are limited to {limit}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ValueError(f"file grew past {limit} bytes while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _reason(exc: BaseException) -> str:
    """A validation failure as an author reads it: `field.path: what is wrong`, no Python internals."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
    return str(exc)


# What a file must hold to define a tool by itself. A file without them is an overlay: it adds to (or overrides
# fields of) the tool the server registers under its name, which supplies the rest.
WHOLE: Final = frozenset({"description", "inputSchema"})
# Stands in for what an overlay leaves to the registered tool until the catalog merges the two: never served.
_FROM_SERVER: Final = {"description": "(from the registered tool)", "inputSchema": {"type": "object"}}


def _read_definition(path: Path) -> tuple[ToolDefinition, frozenset[str]]:
    """Parse and fully validate one file: its definition and the fields it gave (an overlay lacks `WHOLE`'s; its
    `name` may be left to the file's name). Raises ValueError with a reason fit for a log line."""
    try:
        data = json.loads(_read_regular(path))
    except OSError as exc:
        raise ValueError(f"cannot read file: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        raise ValueError(
            f"not a tool definition: the file holds {kind}, and a definition is one JSON object (name, description, "
            "inputSchema); not served (move other JSON files out of the definitions folder to silence this)"
        )
    given = frozenset(data)
    data = {"name": path.stem, **{k: v for k, v in _FROM_SERVER.items() if k not in given}, **data}
    try:
        definition = ToolDefinition.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"not a valid tool definition: {_reason(exc)}") from None
    except RecursionError:
        raise ValueError("not a valid tool definition: nested too deeply") from None
    if definition.name != path.stem:
        raise ValueError(f"the file is named {path.name!r} but defines tool {definition.name!r}; they must match")
    return definition, given


class DescriptionStore:
    """Last-good definitions from a directory of `<tool>.json` files.

    A file that fails to parse never removes a tool: its last good version stays served and the
    reason is kept in `problems` and logged. Deleting a file drops its definition.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._definitions: dict[str, ToolDefinition] = {}
        self._given: dict[str, frozenset[str]] = {}  # the fields each file gave (an overlay lacks some of `WHOLE`)
        # The one file that defines each tool (its category folder, if any, is the tool's category).
        self._owners: dict[str, Path] = {}
        self._problems: dict[str, Problem] = {}
        self._broken: set[str] = set()  # files whose problem is their own content (cleared once they read well)
        self._listeners: list[ChangeListener] = []
        self.generation = 0
        if self.directory is not None:
            self._load_all()

    # -- reading ---------------------------------------------------------------------------------
    def get(self, name: str) -> ToolDefinition | None:
        return self._definitions.get(name)

    def names(self) -> frozenset[str]:
        return frozenset(self._definitions)

    def source(self, name: str) -> str:
        """The path of the file that defines `name` (as problems name it), or the name when there is none."""
        owner = self._owners.get(name)
        if owner is not None:
            return str(owner)
        return str(self.directory / f"{name}.json") if self.directory is not None else name

    def given(self, name: str) -> frozenset[str]:
        """The fields `name`'s file gave (empty when there is no file)."""
        return self._given.get(name, frozenset())

    def is_overlay(self, name: str) -> bool:
        """Whether `name`'s file only adds to a registered tool (it lacks a description or an inputSchema)."""
        return name in self._definitions and not self.given(name) >= WHOLE

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
        return self._load_all(self._owners.values())

    def category(self, name: str) -> str | None:
        """The tool's category: its definition's `category`, else the subfolder its file is in."""
        definition = self._definitions.get(name)
        if definition is not None and definition.category:
            return definition.category
        owner = self._owners.get(name)
        return owner.parent.name if owner is not None and owner.parent != self.directory else None

    def _candidates(self) -> list[Path]:
        """`<dir>/<tool>.json` and `<dir>/<category>/<tool>.json` (one level of category folders)."""
        assert self.directory is not None
        found: list[Path] = []
        for entry in sorted(self.directory.iterdir()):
            if _is_definition_file(entry):
                found.append(entry)
            elif entry.is_dir() and not entry.name.startswith((".", "_")) and not entry.name.endswith(".json"):
                found += sorted(p for p in entry.iterdir() if _is_definition_file(p))
        return found

    def _load_all(self, also: Iterable[Path] = ()) -> frozenset[str]:
        assert self.directory is not None
        if not self.directory.is_dir():
            self._set_problem(
                Problem(str(self.directory), "descriptions directory does not exist or is not a directory")
            )
            return frozenset()
        try:
            paths = self._candidates()
        except OSError as exc:
            self._set_problem(Problem(str(self.directory), f"cannot list directory: {exc.strerror or exc}"))
            return frozenset()
        self._problems.pop(str(self.directory), None)
        return self.reload(sorted(set(paths) | set(also)))

    def _in_scope(self, path: Path) -> bool:
        return (
            _is_definition_file(path)
            and self.directory is not None
            and (path.parent == self.directory or path.parent.parent == self.directory)
        )

    def reload(self, paths: Iterable[Path]) -> frozenset[str]:
        """Re-read `paths` (changed, added or deleted); return the tool names whose definition changed.

        A name is owned by one file; the same name in a second file (another category folder) is reported with
        both paths and not served, so which file defines a tool never depends on the order events arrive in.
        """
        changed: set[str] = set()
        pending = sorted(set(paths))
        while pending:
            path = pending.pop(0)
            if not self._in_scope(path):
                continue
            name = path.stem
            owner = self._owners.get(name)
            if owner is not None and owner != path:
                if os.path.lexists(path):
                    self._set_problem(
                        Problem(str(path), f"defines tool {name!r}, which {owner} already defines; not served")
                    )
                else:
                    self._problems.pop(str(path), None)
                continue
            if not os.path.lexists(path):
                self._problems.pop(str(path), None)
                self._owners.pop(name, None)
                self._given.pop(name, None)
                if self._definitions.pop(name, None) is not None:
                    logger.info("definition removed: %s", printable(path))
                    changed.add(name)
                # A same-named file elsewhere that was refused while this one owned the name may take over now.
                pending += [p for p in self._same_named(name) if p != path and p not in pending]
                continue
            try:
                definition, given = _read_definition(path)
            except Exception as exc:  # any file, however broken, costs only itself
                kept = " (keeping the last good version)" if name in self._definitions else ""
                reason = str(exc) if isinstance(exc, ValueError) else f"unexpected error: {type(exc).__name__}: {exc}"
                self._set_problem(Problem(str(path), f"{reason}{kept}"))
                self._broken.add(str(path))
                self._owners.setdefault(name, path)
                continue
            fresh = self._definitions.get(name) != definition or self._given.get(name) != given
            if fresh or str(path) in self._broken:  # what was said of an unchanged file (`report`) still holds
                self._problems.pop(str(path), None)
                self._broken.discard(str(path))
            self._owners[name] = path
            if fresh:
                self._definitions[name] = definition
                self._given[name] = given
                changed.add(name)
        if changed:
            self.generation += 1
        return frozenset(changed)

    def _same_named(self, name: str) -> list[Path]:
        assert self.directory is not None
        try:
            return sorted(p for p in self._candidates() if p.stem == name)
        except OSError:
            return []

    def report(self, problem: Problem) -> None:
        """Record (and log once) a problem found outside the files, e.g. a registered tool that cannot be served."""
        self._set_problem(problem)

    def resolved(self, source: str) -> None:
        """Forget what `report` said of `source` once it no longer holds (a file's own read problems stay)."""
        if source not in self._broken:
            self._problems.pop(source, None)

    def _set_problem(self, problem: Problem) -> None:
        if self._problems.get(problem.source) != problem:
            logger.warning("tool definition problem: %s", problem)
        self._problems[problem.source] = problem

    # -- watching --------------------------------------------------------------------------------
    def add_listener(self, listener: ChangeListener, *, first: bool = False) -> None:
        """Call `listener(changed_names)` after every reload that changed something (`first`: before the others)."""
        self._listeners.insert(0 if first else len(self._listeners), listener)

    async def watch(
        self, *, debounce_ms: int = 50, stop_event: anyio.Event | None = None, retry_seconds: float = 1.0
    ) -> None:
        """Reload files as they change until cancelled (or `stop_event` is set).

        Survives anything a directory can do: an error in the watcher restarts it after `retry_seconds`, and a
        deleted (or replaced) directory is waited for and watched again once it is back, with the catch-up
        rescan; each recovery is logged.
        """
        if self.directory is None:
            return
        from watchfiles import awatch  # imported lazily: a server that never watches never loads the watcher

        directory = self.directory
        trouble: str | None = None
        while stop_event is None or not stop_event.is_set():
            identity = _dir_identity(directory)
            if identity is None:
                if trouble is None:
                    trouble = "the directory is gone"
                    logger.warning(
                        "descriptions directory %s is gone; waiting for it to come back", printable(directory)
                    )
                await anyio.sleep(retry_seconds)
                continue
            try:
                caught_up = self.rescan()  # edits made before (or while not) watching
                if trouble is not None:
                    logger.warning(
                        "watching descriptions directory %s again (after: %s)", printable(directory), printable(trouble)
                    )
                    trouble = None
                if caught_up:
                    await self._notify(caught_up)
                async for changes in awatch(
                    directory,
                    debounce=debounce_ms,
                    step=20,
                    stop_event=stop_event,
                    recursive=True,  # category folders, one level deep (`_in_scope` drops the rest)
                    rust_timeout=int(retry_seconds * 1000),
                    yield_on_timeout=True,
                ):
                    if changes:
                        changed = self.reload({Path(path) for _, path in changes})
                        if changed:
                            await self._notify(changed)
                    if _dir_identity(directory) != identity:
                        # Deleted or replaced: the old watch is on a dead inode and would never fire again.
                        trouble = "the directory was deleted or replaced"
                        logger.warning("descriptions directory %s was deleted or replaced", printable(directory))
                        break
            except Exception as exc:
                trouble = f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "the definitions watcher failed (%s); restarting in %g s", printable(trouble), retry_seconds
                )
                await anyio.sleep(retry_seconds)

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
    # Bumped whenever an entry is added, rebuilt or removed (indexes over the names key their caches on it).
    revision: int = 0
    # The last complete listing as the server returned it: the same list again, of the same length and with
    # no file changed since, is unchanged (a server that caches its listing costs nothing to re-list).
    _last_listing: tuple[list[ListedTool], int, int] | None = None
    # Per tool, the fields (wire names) in which the listed tool wins over its file: for files that copy the
    # server (the gateway's cache: a snapshot, not an author's text). By default the file wins in all of them.
    listed_wins: Callable[[str], Collection[str]] = field(default=lambda _name: ())

    def update(self, tools: Iterable[ListedTool], *, complete: bool) -> None:
        """Merge a listing (SDK `Tool` models or wire-form dicts). `complete` means it was the whole catalog."""
        generation = self.store.generation
        last = self._last_listing
        if complete and last is not None and tools is last[0] and (len(tools), generation) == last[1:]:
            self.refreshed_at = time.monotonic()
            return
        seen: set[str] = set()
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
            built = self._build(source, generation)
            if built is None:
                continue
            self._entries[name] = built
            self.revision += 1
        if complete:
            for gone in set(self._entries) - seen:
                del self._entries[gone]
                self.revision += 1
            self.complete = True
            self._report_orphans()
            # Held (not its id, which a freed list's successor could reuse) to compare identity next time.
            self._last_listing = (tools, len(tools), generation) if isinstance(tools, list) else None
        self.refreshed_at = time.monotonic()

    def _build(self, source: ListedTool, generation: int) -> _CatalogEntry | None:
        try:
            definition = self._merge(_wire(source))
        except (ValidationError, ValueError, TypeError) as exc:
            # A tool the server lists with a definition no client could use (e.g. a non-object inputSchema):
            # it cannot be described, so it is neither listed nor callable; the rest of the catalog is served.
            self.store.report(Problem(f"tool {listed_name(source)!r}", f"not served: {_reason(exc)}"))
            return None
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
            rebuilt = self._build(entry.source, self.store.generation)
            if rebuilt is not None:
                entry = self._entries[name] = rebuilt
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

    def category(self, name: str) -> str:
        """The tool's category: its definition's `category`, its file's category folder, or `_meta.category`."""
        definition = self.get(name)
        if definition is None:
            return ""
        if definition.category:
            return definition.category
        folder = self.store.category(name) if self.store.get(name) is not None else None
        if folder:
            return folder
        meta = definition.meta or {}
        # Our namespaced key first: the gateway sets it (the upstream's name) over whatever the upstream put there.
        found = meta.get(CATEGORY_META, meta.get("category"))
        return found if isinstance(found, str) else ""

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def orphans(self) -> list[str]:
        """Definition files naming a tool the server does not have."""
        return sorted(self.store.names() - set(self._entries)) if self.complete else []

    def _report_orphans(self) -> None:
        for name in self.orphans():
            path = self.store.directory / name if self.store.directory else name
            if self.store.is_overlay(name):  # said every time (a problem is logged once while it stays the same)
                missing = ", ".join(sorted(WHOLE - self.store.given(name)))
                self.store.report(
                    Problem(
                        f"{path}.json",
                        f"adds to a tool named {name!r}, which this server does not register; a file for a tool "
                        f"the server does not have must define it whole (it lacks {missing}); not served",
                    )
                )
            elif name not in self._reported:
                self._reported.add(name)
                logger.warning(
                    "%s.json describes a tool this server does not have; it is not listed or served", printable(path)
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
                    "execution": tool.get("execution"),  # task support: a client must see it as served
                    "_meta": tool.get("_meta"),
                }
            )
        updates: dict[str, Any] = {}
        given = self.store.given(name)
        if "description" not in given:  # an overlay: the registered tool's own text, as with no file
            updates["description"] = code_description or f"The {name} tool."
            if "minimal_description" not in given and code_description:
                updates["minimal_description"] = first_sentence(code_description)
        if "inputSchema" not in given:
            updates["input_schema"] = schema
        inherited = (("title", "title"), ("output_schema", "outputSchema"), ("annotations", "annotations"))
        for attr, key in (*inherited, ("execution", "execution")):
            if getattr(file_def, attr) is None and tool.get(key) is not None:
                updates[attr] = tool[key]
        # What a file may change of the tool it meets (`_overlay`): what the rule refuses takes the tool's value.
        wins = frozenset(self.listed_wins(name))
        mine = {
            "inputSchema": schema,
            "outputSchema": tool.get("outputSchema"),
            "annotations": tool.get("annotations"),
            "_meta": tool.get("_meta"),
        }
        theirs = {
            "inputSchema": file_def.input_schema,
            "outputSchema": file_def.output_schema,
            "annotations": file_def.annotations,
            "_meta": file_def.meta,
        }
        verdict = judge_overlay(mine, theirs, fields=given - wins)
        for key, value in verdict.updates.items():
            updates[_LISTED_FIELDS[key]] = value
        reasons = list(verdict.reasons)
        for key in self.listed_wins(name):
            target = _LISTED_FIELDS.get(key)
            if target == "description":
                updates[target] = code_description or file_def.description
            elif target == "input_schema":
                updates[target] = schema
            elif target is not None:
                updates[target] = tool.get(key)
        merged = file_def.model_copy(update=updates) if updates else file_def
        problems = example_problems(merged)
        if problems:
            # An example the served schema rejects teaches the model a call that fails: it is not served.
            reasons.append("; ".join(problems.values()) + " (those examples are not served)")
            kept = [e for i, e in enumerate(merged.examples) if i not in problems]
            merged = merged.model_copy(update={"examples": kept})
        source = self.store.source(name)
        if reasons:
            self.store.report(Problem(source, "; ".join(reasons)))
        else:  # e.g. the tool's code now says what the file said: what was reported no longer holds
            self.store.resolved(source)
        return merged


# The wire fields `Catalog.listed_wins` may name, and the definition's attribute for each.
_LISTED_FIELDS: Final = {
    "title": "title",
    "description": "description",
    "inputSchema": "input_schema",
    "outputSchema": "output_schema",
    "annotations": "annotations",
    "icons": "icons",
    "execution": "execution",
    "_meta": "meta",
}
