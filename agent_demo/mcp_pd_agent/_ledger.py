"""The token ledger: what the model carries under eager loading vs progressive disclosure, per task.

* eager: the agent's base prompt + every tool's full definition up front (exactly as the resource serves
  it, so both sides give the model the same information).
* progressive: the base prompt + the spec-8 guidance + the server's instructions (the whole system prompt
  the loop sends) + the minimal tools/list + the `read_tool_descriptions` function (which carries the
  resource description) + the definitions this run actually fetched + the error documents it saw.

Tool *results* (task data) are the same under both and are not counted. Texts are compact JSON
(`separators=(",", ":")`, like the catalogs' token counts). Tokens come from `bpe-openai`'s embedded
`o200k_base` and `cl100k_base` (identical ids to tiktoken, no download); without it only characters are shown.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ._loop import Run
from ._prompt import BASE_PROMPT

__all__ = [
    "ENCODINGS",
    "Ledger",
    "LedgerRow",
    "TokenCounter",
    "build_ledger",
    "render_markdown",
    "render_summary_markdown",
    "render_svg",
    "render_table",
    "update_markdown",
]

ENCODINGS: Final = ("o200k_base", "cl100k_base")
_CHUNK: Final = 200_000  # characters per encode call (bpe-openai caps one call at 1M chars / 200k tokens)
# Fields a plain tools/list carries; the rest (examples, guidance, version) exist because of the resource.
_FIXED_PARTS: Final = ("system prompt", "minimal list", "read function")
_WIRE_FIELDS: Final = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta")


_LOADED: dict[str, Any] = {}


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class TokenCounter:
    """Counts characters always, and tokens with each available offline encoding."""

    def __init__(self, encodings: Sequence[str] = ENCODINGS) -> None:
        self.encoders: dict[str, Any] = {}
        self.problem: str | None = None
        with warnings.catch_warnings():
            # bpe-openai 0.1.x loads its embedded tables with importlib.resources.open_binary, which
            # Python 3.11+ flags as deprecated (at import and per encoding); harmless, and not ours to fix.
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                import bpe_openai  # type: ignore[import-untyped, import-not-found, unused-ignore]
            except ImportError:
                self.problem = "bpe-openai is not installed (pip install bpe-openai): showing characters, not tokens"
                return
            for name in encodings:
                if name not in _LOADED:
                    _LOADED[name] = bpe_openai.get_encoding(name)
        self.encoders = {name: _LOADED[name] for name in encodings}

    @property
    def units(self) -> list[str]:
        """What each count is in: the encodings, or 'chars' without them."""
        return list(self.encoders) or ["chars"]

    def count(self, text: str) -> dict[str, int]:
        counts = {"chars": len(text)}
        for name, encoder in self.encoders.items():
            counts[name] = sum(
                len(encoder.encode_ordinary(text[start : start + _CHUNK])) for start in range(0, len(text), _CHUNK)
            )
        return counts


def _add(total: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        total[key] = total.get(key, 0) + value


@dataclass
class LedgerRow:
    key: str
    label: str
    fetched: list[str]
    errors: list[str]
    eager: dict[str, int]
    progressive: dict[str, int]
    parts: dict[str, dict[str, int]] = field(default_factory=dict)

    def saved(self, unit: str) -> float:
        eager = self.eager.get(unit, 0)
        return 1.0 - self.progressive.get(unit, 0) / eager if eager else 0.0

    def fetched_label(self) -> str:
        """What the run fetched, and (once each) the error codes it saw: `a, b (+CODE)`."""
        label = ", ".join(self.fetched) or "-"
        if self.errors:
            label += " (+" + ", ".join(dict.fromkeys(self.errors)) + ")"
        return label


@dataclass
class Ledger:
    title: str
    tools: int
    units: list[str]
    rows: list[LedgerRow]
    eager_parts: dict[str, dict[str, int]]
    wire_list: dict[str, int]  # a plain tools/list of the same tools (no examples or guidance), for reference
    note: str | None = None

    def total(self, side: str) -> dict[str, int]:
        result: dict[str, int] = {}
        for row in self.rows:
            _add(result, row.eager if side == "eager" else row.progressive)
        return result

    def saved(self, unit: str) -> float:
        eager = self.total("eager").get(unit, 0)
        return 1.0 - self.total("progressive").get(unit, 0) / eager if eager else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "tools": self.tools,
            "units": self.units,
            "eager_parts": self.eager_parts,
            "plain_tools_list": self.wire_list,
            "rows": [
                {
                    "task": r.key,
                    "label": r.label,
                    "fetched": r.fetched,
                    "errors": r.errors,
                    "eager": r.eager,
                    "progressive": r.progressive,
                    "progressive_parts": r.parts,
                }
                for r in self.rows
            ],
            "totals": {
                "eager": self.total("eager"),
                "progressive": self.total("progressive"),
                "saved": {u: round(self.saved(u), 4) for u in self.units},
            },
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ledger:
        """The ledger `as_json` wrote (e.g. in `mcp-pd demo --json`)."""
        rows = [
            LedgerRow(
                r["task"], r["label"], r["fetched"], r["errors"], r["eager"], r["progressive"], r["progressive_parts"]
            )
            for r in data["rows"]
        ]
        parts, plain = data["eager_parts"], data["plain_tools_list"]
        return cls(data["title"], data["tools"], data["units"], rows, parts, plain, data.get("note"))


def build_ledger(
    title: str,
    definitions: dict[str, dict[str, Any]],
    runs: Iterable[tuple[str, Run]],
    counter: TokenCounter | None = None,
) -> Ledger:
    """One row per run: the same eager context against what the run carried under progressive disclosure."""
    counter = counter or TokenCounter()
    full = list(definitions.values())
    eager_parts = {
        "system prompt": counter.count(BASE_PROMPT),
        "full definitions": counter.count(compact_json({"tools": full})),
    }
    eager: dict[str, int] = {}
    for counts in eager_parts.values():
        _add(eager, counts)
    wire = [{k: d[k] for k in _WIRE_FIELDS if k in d} for d in full]
    rows: list[LedgerRow] = []
    for key, run in runs:
        context = run.context
        parts = {
            "system prompt": counter.count(context.system_prompt),
            "minimal list": counter.count(compact_json({"tools": context.minimal_list})),
            "read function": counter.count(compact_json(context.read_function)),
            "fetched definitions": counter.count("".join(context.fetched)),
            "error documents": counter.count("".join(context.errors)),
        }
        progressive: dict[str, int] = {}
        for counts in parts.values():
            _add(progressive, counts)
        errors = [code for code in run.error_codes() if code != "TOOL_ERROR"]
        rows.append(LedgerRow(key, run.prompt, run.fetched_tools(), errors, dict(eager), progressive, parts))
    return Ledger(
        title,
        len(full),
        counter.units,
        rows,
        eager_parts,
        counter.count(compact_json({"tools": wire})),
        counter.problem,
    )


# -- terminal table ------------------------------------------------------------------------------------


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(ledger: Ledger) -> str:
    """A fixed-width table: per task, eager vs progressive in each unit, and the share saved."""
    units = ledger.units
    head = f"{'task':<16} {'fetched (+ errors seen)':<44}"
    for unit in units:
        short = unit.replace("_base", "")
        head += f" | {'eager ' + short:>13} {'PD ' + short:>11} {'saved':>6}"
    lines = [f"Token ledger: {ledger.title} ({ledger.tools} tools)", head, "-" * len(head)]
    for row in ledger.rows:
        line = f"{_cell(row.key, 16):<16} {_cell(row.fetched_label(), 44):<44}"
        for unit in units:
            line += f" | {row.eager.get(unit, 0):>13,} {row.progressive.get(unit, 0):>11,} {row.saved(unit):>6.1%}"
        lines.append(line)
    lines.append("-" * len(head))
    total = f"{'total':<16} {f'{len(ledger.rows)} tasks':<44}"
    eager, progressive = ledger.total("eager"), ledger.total("progressive")
    for unit in units:
        total += f" | {eager.get(unit, 0):>13,} {progressive.get(unit, 0):>11,} {ledger.saved(unit):>6.1%}"
    lines.append(total)
    first = units[0]
    per_task = ledger.rows[0].eager.get(first, 0) if ledger.rows else 0
    plain = ledger.wire_list.get(first, 0)
    lines.append(
        f"eager per task = base prompt + all {ledger.tools} full definitions = {per_task:,} {first}; "
        f"a plain tools/list of the same tools (schemas, no examples/guidance) is {plain:,}."
    )
    if ledger.note:
        lines.append(f"note: {ledger.note}")
    return "\n".join(lines)


# -- markdown (README blocks) ----------------------------------------------------------------------------

_BLOCK_END: Final = "<!-- END GENERATED -->"
_BLOCKS: Final = ("ledger summary", "ledger tables")


def _short(unit: str) -> str:
    return unit.replace("_base", "")


def render_markdown(ledger: Ledger) -> str:
    """The per-task ledger as a markdown table, with its totals row."""
    head = "| task | fetched (+ errors seen) |"
    rule = "|---|---|"
    for unit in ledger.units:
        head += f" eager {_short(unit)} | progressive {_short(unit)} | saved |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for row in ledger.rows:
        line = f"| `{row.key}` | {row.fetched_label()} |"
        for unit in ledger.units:
            line += f" {row.eager.get(unit, 0):,} | {row.progressive.get(unit, 0):,} | {row.saved(unit):.1%} |"
        lines.append(line)
    eager, progressive = ledger.total("eager"), ledger.total("progressive")
    total = f"| **total** | {len(ledger.rows)} tasks |"
    for unit in ledger.units:
        total += f" **{eager.get(unit, 0):,}** | **{progressive.get(unit, 0):,}** | **{ledger.saved(unit):.1%}** |"
    lines.append(total)
    return "\n".join(lines)


def render_summary_markdown(ledgers: Sequence[Ledger]) -> str:
    """One row per ledger: tools, tasks, total context eager vs progressive, saved."""
    units = ledgers[0].units if ledgers else list(ENCODINGS)
    head = "| server | tools | tasks |"
    rule = "|---|---:|---:|"
    for unit in units:
        head += f" eager {_short(unit)} | progressive {_short(unit)} | saved |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for ledger in ledgers:
        eager, progressive = ledger.total("eager"), ledger.total("progressive")
        line = f"| {ledger.title} | {ledger.tools} | {len(ledger.rows)} |"
        for unit in units:
            line += f" {eager.get(unit, 0):,} | {progressive.get(unit, 0):,} | **{ledger.saved(unit):.1%}** |"
        lines.append(line)
    return "\n".join(lines)


def update_markdown(text: str, ledgers: Sequence[Ledger]) -> str:
    """`text` with its generated ledger blocks rewritten; raises ValueError when it has none.

    Blocks run from `<!-- BEGIN GENERATED: ledger summary -->` (or `ledger tables`) to `<!-- END GENERATED -->`.
    """
    bodies = {
        "ledger summary": render_summary_markdown(ledgers),
        "ledger tables": "\n\n".join(
            f"**{ledger.title}**: {ledger.tools} tools, {len(ledger.rows)} tasks.\n\n{render_markdown(ledger)}"
            for ledger in ledgers
        ),
    }
    found = False
    for name in _BLOCKS:
        begin = f"<!-- BEGIN GENERATED: {name} -->"
        start = text.find(begin)
        if start < 0:
            continue
        end = text.find(_BLOCK_END, start)
        if end < 0:
            raise ValueError(f"'{begin}' has no '{_BLOCK_END}' after it")
        found = True
        text = text[: start + len(begin)] + "\n" + bodies[name] + "\n" + text[end:]
    if not found:
        raise ValueError("no '<!-- BEGIN GENERATED: ledger summary|ledger tables -->' block to rewrite")
    return text


# -- SVG chart (hand-written, no plotting dependency) ----------------------------------------------------


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_svg(ledgers: Sequence[Ledger], unit: str | None = None) -> str:
    """Horizontal bars per task (eager grey, progressive blue), one panel per ledger, own scale each."""
    width, left, right, bar, gap = 980, 150, 150, 10, 8
    row_height = 2 * bar + gap
    panels: list[str] = []
    y = 80
    chosen = unit
    for ledger in ledgers:
        use = chosen if chosen in ledger.units else ledger.units[0]
        chosen = use
        eager, progressive = ledger.total("eager"), ledger.total("progressive")
        top = max([r.eager.get(use, 0) for r in ledger.rows] + [1])
        scale = (width - left - right) / top
        title = (
            f"{ledger.title}: {ledger.tools} tools, {len(ledger.rows)} tasks; total {eager.get(use, 0):,} eager vs "
            f"{progressive.get(use, 0):,} progressive ({ledger.saved(use):.1%} saved)"
        )
        panels.append(f'<text x="20" y="{y}" class="h">{_esc(title)}</text>')
        y += 14
        for row in ledger.rows:
            e, p = row.eager.get(use, 0), row.progressive.get(use, 0)
            panels.append(f'<text x="{left - 8}" y="{y + bar + 4}" class="l" text-anchor="end">{_esc(row.key)}</text>')
            panels.append(f'<rect x="{left}" y="{y}" width="{e * scale:.1f}" height="{bar}" class="e"/>')
            panels.append(f'<text x="{left + e * scale + 6:.1f}" y="{y + bar - 1}" class="n">{e:,}</text>')
            fixed = sum(row.parts.get(k, {}).get(use, 0) for k in _FIXED_PARTS) if row.parts else p
            panels.append(
                f'<rect x="{left}" y="{y + bar}" width="{max(fixed * scale, 1):.1f}" height="{bar}" class="f"/>'
            )
            panels.append(
                f'<rect x="{left + fixed * scale:.1f}" y="{y + bar}" width="{max((p - fixed) * scale, 0):.1f}" '
                f'height="{bar}" class="p"/>'
            )
            panels.append(
                f'<text x="{left + p * scale + 6:.1f}" y="{y + 2 * bar - 1}" class="n">{p:,} '
                f"({row.saved(use):.0%} saved)</text>"
            )
            y += row_height
        y += 34
    height = y
    legend_unit = chosen or "tokens"
    header = (
        f'<text x="20" y="24" class="t">Context the model carries per task ({_esc(legend_unit)} tokens): '
        "eager loading vs progressive disclosure</text>"
        f'<rect x="20" y="34" width="12" height="10" class="e"/><text x="38" y="43" class="l">eager: every full '
        "definition up front</text>"
        f'<rect x="330" y="34" width="12" height="10" class="f"/><text x="348" y="43" class="l">progressive, fixed: '
        "system prompt with guidance + minimal list + reader function</text>"
        f'<rect x="330" y="50" width="12" height="10" class="p"/><text x="348" y="59" class="l">progressive, per '
        "task: definitions fetched + error documents seen</text>"
    )
    style = (
        "<style>.t{font:bold 15px sans-serif;fill:#222}.h{font:bold 12px sans-serif;fill:#222}"
        ".l{font:11px sans-serif;fill:#333}.n{font:10px sans-serif;fill:#555}"
        ".e{fill:#b8bec6}.f{fill:#8fbce8}.p{fill:#1f5fa8}</style>"
    )
    body = "".join(panels)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'{style}<rect width="100%" height="100%" fill="#fff"/>{header}{body}</svg>\n'
    )
