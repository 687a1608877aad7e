"""A host's tool filters: which tools of one upstream its config keeps away from the model.

Gemini CLI's `includeTools` / `excludeTools`, Windsurf's `disabledTools` and Codex CLI's `enabled_tools` /
`disabled_tools` all say the same thing: only these tools (an allow-list, when given), never those (a deny-list,
which wins). The gateway applies a filter to an upstream's listing as it arrives, before anything else sees it,
so an excluded tool is never listed, described, searched, suggested or routed (and never called: a call needs a
route). Knows nothing about processes, sessions or the SDK beyond a tool's name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

logger = logging.getLogger("mcp_pd.gateway")

__all__ = ["ToolFilter", "filtered"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


def _listed(names: Iterable[str], limit: int = 12) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@dataclass(frozen=True)
class ToolFilter:
    """`include`: the only tools served (None: every tool); `exclude`: never served, whatever `include` says.
    `include_key` / `exclude_key`: how the file spelled them, for messages (`includeTools`, `disabledTools`, ...)."""

    include: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    include_key: str = "includeTools"
    exclude_key: str = "excludeTools"

    def __bool__(self) -> bool:
        return self.include is not None or bool(self.exclude)

    def allows(self, name: str) -> bool:
        return name not in self.exclude and (self.include is None or name in self.include)

    def apply(self, tools: Sequence[T]) -> tuple[tuple[T, ...], tuple[str, ...]]:
        """The tools kept, and the names left out, in listing order."""
        kept = tuple(t for t in tools if self.allows(t.name))
        return kept, tuple(t.name for t in tools if not self.allows(t.name))

    def describe(self) -> str:
        """What the filter serves, for the start-up line."""
        parts = []
        if self.include is not None:
            parts.append(
                f"only {_listed(self.include)} ({self.include_key})"
                if self.include
                else f"no tool ({self.include_key} is empty)"
            )
        if self.exclude:
            parts.append(f"never {_listed(self.exclude)} ({self.exclude_key})")
        return "; ".join(parts)

    def report(self, upstream: str, tools: Sequence[_Named]) -> str:
        """One line on what a listing of `upstream` lost to the filter, and the filter's names it does not list
        (a typo there would otherwise go unnoticed: the tool it meant is then served, or missing, silently)."""
        listed = {t.name for t in tools}
        left_out = [t.name for t in tools if not self.allows(t.name)]
        line = f"upstream '{upstream}': "
        line += (
            f"{len(left_out)} of its {len(listed)} tool(s) left out by its config: {_listed(left_out)}"
            if left_out
            else f"its config's tool filter left out none of its {len(listed)} tool(s)"
        )
        unknown = sorted(((self.include or frozenset()) | self.exclude) - listed)
        if unknown:
            keys = " / ".join(k for k, v in ((self.include_key, self.include), (self.exclude_key, self.exclude)) if v)
            line += f"; {keys} name(s) it does not list: {_listed(unknown)}"
        return line


def filtered(chosen: ToolFilter | None, upstream: str, tools: list[T], said: str | None) -> tuple[list[T], str]:
    """`tools` without what `chosen` excludes, and the line on what it left out: logged when it differs from `said`
    (what was said of this upstream last; None: say nothing, as for a client's own session of it)."""
    if not chosen:
        return tools, said or ""
    note = chosen.report(upstream, tools)
    if said is not None and note != said:
        logger.warning("%s", note)
    return list(chosen.apply(tools)[0]), note if said is not None else ""
