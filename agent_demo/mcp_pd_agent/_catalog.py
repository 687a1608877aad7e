"""Merge a folder of catalogs (one sub-folder of `<tool>.json` per server) into one definitions directory.

Names used by more than one catalog are prefixed with their catalog's name (`<catalog>_<tool>`, made
API-safe), so the merged set can be served at once in simulation mode. Each catalog keeps its sub-folder,
which a catalog-mode server takes as the tools' category (a progressive one serves them all the same).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MergedCatalog", "merge_catalogs"]


@dataclass
class MergedCatalog:
    directory: Path
    per_catalog: dict[str, int] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)  # new name -> "<catalog>/<old name>"

    @property
    def tools(self) -> int:
        return sum(self.per_catalog.values())


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def merge_catalogs(source: Path, target: Path) -> MergedCatalog:
    """Write every catalog's definitions into `target` (created), renaming collisions."""
    catalogs = sorted(p for p in source.iterdir() if p.is_dir() and any(p.glob("*.json")))
    if not catalogs:
        raise ValueError(f"{source} has no catalog folders with <tool>.json files")
    loaded: list[tuple[str, dict[str, object]]] = []
    for catalog in catalogs:
        for path in sorted(catalog.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                loaded.append((catalog.name, data))
    counts = Counter(str(data["name"]) for _, data in loaded)
    target.mkdir(parents=True, exist_ok=True)
    merged = MergedCatalog(target)
    for origin, data in loaded:
        name = str(data["name"])
        if counts[name] > 1:
            new = _safe(f"{origin}_{name}")
            merged.renamed[new] = f"{origin}/{name}"
            data = {**data, "name": new}
            name = new
        folder = target / _safe(origin)
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        merged.per_catalog[origin] = merged.per_catalog.get(origin, 0) + 1
    return merged
