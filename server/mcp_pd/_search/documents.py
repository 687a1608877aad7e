"""What the index knows of one tool, read from a definition as served. Knows tools' fields, nothing of indexes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .text import first_sentence, name_words

__all__ = ["SearchDocument"]


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """What the index knows of one tool. `version` keys the vector cache: same version, same text."""

    name: str
    category: str = ""
    summary: str = ""
    description: str = ""
    title: str = ""
    parameters: Mapping[str, str] = field(default_factory=dict)
    examples: Sequence[str] = ()
    version: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("SearchDocument needs a non-empty tool name")
        if not self.version:
            object.__setattr__(self, "version", self.digest())

    def digest(self) -> str:
        payload = json.dumps(
            [
                self.name,
                self.category,
                self.summary,
                self.description,
                self.title,
                dict(self.parameters),
                list(self.examples),
            ],
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any], category: str = "", version: str = "") -> SearchDocument:
        """From a tool definition as served (MCP fields, plus this project's `minimal_description`, `examples`,
        `usage_guidance` and `category` when present)."""
        description = str(definition.get("description") or "")
        annotations = definition.get("annotations")
        title = str(definition.get("title") or (annotations or {}).get("title") or "")
        summary = str(definition.get("minimal_description") or first_sentence(description))
        guidance = definition.get("usage_guidance")
        if isinstance(guidance, Mapping) and guidance.get("when_to_use"):
            description = f"{description}\n{guidance['when_to_use']}"
        schema = definition.get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        parameters: dict[str, str] = {}
        if isinstance(properties, Mapping):
            for pname, prop in properties.items():
                text = str(prop.get("description") or "") if isinstance(prop, Mapping) else ""
                if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list):
                    text += " " + " ".join(str(v) for v in prop["enum"][:30])
                parameters[str(pname)] = text
        examples = []
        for example in definition.get("examples") or ():
            if isinstance(example, Mapping) and example.get("description"):
                examples.append(str(example["description"]))
            elif isinstance(example, str):
                examples.append(example)
        return cls(
            name=str(definition["name"]),
            category=category or str(definition.get("category") or ""),
            summary=summary,
            description=description,
            title=title,
            parameters=parameters,
            examples=tuple(examples),
            version=version,
        )

    def embedding_text(self) -> str:
        """The text embedded for semantic search: name words, title, summary, the description's opening."""
        words = name_words(self.name)
        head = " ".join(self.description.split())[:400]
        return ". ".join(p.rstrip(" .") for p in (words, self.title, self.summary, head) if p)
