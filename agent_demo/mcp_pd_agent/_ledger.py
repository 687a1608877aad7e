"""The token ledger: what the model carries under eager loading vs progressive disclosure, per task.

* eager: the agent's base prompt + every tool's full definition up front (exactly as the resource serves
  it, so both sides give the model the same information).
* progressive, per host: the base prompt + the spec-8 guidance + the server's instructions (the whole system
  prompt the loop sends) + the minimal tools/list as listed (the server's describe tool included) + in the
  resources host the `read_tool_descriptions` function (which carries the resource description) + the
  definitions this run actually fetched + the error documents it saw. The tools-only host has no reader
  function: it fetches with the describe tool, whose entry is already in the list.
* catalog, a catalog-mode server run as a tools-only host: the same parts, where the list is the four meta-tools
  (and the instructions the catalog-mode ones), plus the search_tools / browse_tools answers the run read.

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
    "HostCost",
    "Ledger",
    "LedgerRow",
    "TokenCounter",
    "build_ledger",
    "render_markdown",
    "render_summary_markdown",
    "render_svg",
    "render_table",
    "side_label",
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
class HostCost:
    """What one host's run of a task carried: the definitions it fetched, the errors it saw, the tokens."""

    fetched: list[str]
    errors: list[str]
    total: dict[str, int]
    parts: dict[str, dict[str, int]] = field(default_factory=dict)

    def label(self) -> str:
        """What the run fetched, and (once each) the error codes it saw: `a, b (+CODE)`."""
        label = ", ".join(self.fetched) or "-"
        if self.errors:
            label += " (+" + ", ".join(dict.fromkeys(self.errors)) + ")"
        return label

    def as_json(self) -> dict[str, Any]:
        return {"fetched": self.fetched, "errors": self.errors, "total": self.total, "parts": self.parts}


@dataclass
class LedgerRow:
    """One task: the eager context, and per host (in run order) what its progressive run carried."""

    key: str
    label: str
    eager: dict[str, int]
    hosts: dict[str, HostCost]

    @property
    def first(self) -> HostCost:
        return next(iter(self.hosts.values()))

    @property
    def fetched(self) -> list[str]:
        return self.first.fetched

    @property
    def errors(self) -> list[str]:
        return self.first.errors

    @property
    def progressive(self) -> dict[str, int]:
        """The first host's total (the resources host in a documented run)."""
        return self.first.total

    @property
    def parts(self) -> dict[str, dict[str, int]]:
        return self.first.parts

    def cost(self, host: str | None = None) -> dict[str, int]:
        return self.hosts[host].total if host is not None else self.progressive

    def saved(self, unit: str, host: str | None = None) -> float:
        eager = self.eager.get(unit, 0)
        return 1.0 - self.cost(host).get(unit, 0) / eager if eager else 0.0

    def fetched_label(self) -> str:
        """The first host's `a, b (+CODE)`, then any other host's where it differs."""
        first = self.first.label()
        others = [f"{host}: {cost.label()}" for host, cost in list(self.hosts.items())[1:] if cost.label() != first]
        return "; ".join([first, *others])


@dataclass
class Ledger:
    title: str
    tools: int
    units: list[str]
    rows: list[LedgerRow]
    eager_parts: dict[str, dict[str, int]]
    wire_list: dict[str, int]  # a plain tools/list of the same tools (no examples or guidance), for reference
    note: str | None = None
    hosts: list[str] = field(default_factory=lambda: ["resources"])
    passed: dict[str, int] = field(default_factory=dict)  # host -> tasks whose check held (when known)

    def total(self, side: str) -> dict[str, int]:
        """`side`: "eager", a host, or "progressive" (the first host)."""
        result: dict[str, int] = {}
        for row in self.rows:
            if side == "eager":
                _add(result, row.eager)
            elif side in row.hosts:
                _add(result, row.hosts[side].total)
            elif side == "progressive":
                _add(result, row.progressive)
        return result

    def saved(self, unit: str, host: str | None = None) -> float:
        eager = self.total("eager").get(unit, 0)
        side = host if host is not None else "progressive"
        return 1.0 - self.total(side).get(unit, 0) / eager if eager else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "tools": self.tools,
            "units": self.units,
            "hosts": self.hosts,
            "passed": self.passed,
            "eager_parts": self.eager_parts,
            "plain_tools_list": self.wire_list,
            "rows": [
                {
                    "task": r.key,
                    "label": r.label,
                    "eager": r.eager,
                    "hosts": {host: cost.as_json() for host, cost in r.hosts.items()},
                }
                for r in self.rows
            ],
            "totals": {
                "eager": self.total("eager"),
                **{host: self.total(host) for host in self.hosts},
                "saved": {host: {u: round(self.saved(u, host), 4) for u in self.units} for host in self.hosts},
            },
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ledger:
        """The ledger `as_json` wrote (e.g. in `mcp-pd demo --json`)."""
        rows = [
            LedgerRow(
                r["task"],
                r["label"],
                r["eager"],
                {host: HostCost(c["fetched"], c["errors"], c["total"], c["parts"]) for host, c in r["hosts"].items()},
            )
            for r in data["rows"]
        ]
        parts, plain = data["eager_parts"], data["plain_tools_list"]
        return cls(
            data["title"],
            data["tools"],
            data["units"],
            rows,
            parts,
            plain,
            data.get("note"),
            list(data["hosts"]),
            dict(data.get("passed") or {}),
        )


def build_ledger(
    title: str,
    definitions: dict[str, dict[str, Any]],
    runs: Iterable[tuple[str, Run]],
    counter: TokenCounter | None = None,
    *,
    passed: dict[str, int] | None = None,
) -> Ledger:
    """One row per task: the same eager context against what each host's run carried (`Run.host`).

    `runs` may hold one run per task and host; rows and hosts keep the order they first appear in.
    """
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
    rows: dict[str, LedgerRow] = {}
    hosts: list[str] = []
    for key, run in runs:
        context = run.context
        parts = {
            "system prompt": counter.count(context.system_prompt),
            "minimal list": counter.count(compact_json({"tools": context.minimal_list})),
            # the tools-only host has no reader function: the describe tool is in the minimal list
            "read function": counter.count(compact_json(context.read_function) if context.read_function else ""),
            "fetched definitions": counter.count("".join(context.fetched)),
            "error documents": counter.count("".join(context.errors)),
            "search results": counter.count("".join(context.searched)),
        }
        progressive: dict[str, int] = {}
        for counts in parts.values():
            _add(progressive, counts)
        errors = [code for code in run.error_codes() if code != "TOOL_ERROR"]
        if run.setup not in hosts:
            hosts.append(run.setup)
        row = rows.setdefault(key, LedgerRow(key, run.prompt, dict(eager), {}))
        row.hosts[run.setup] = HostCost(run.fetched_tools(), errors, progressive, parts)
    # A task compares hosts only where it ran in each (a run that crashed has no record to count).
    complete = [row for row in rows.values() if all(host in row.hosts for host in hosts)]
    left_out = [row.key for row in rows.values() if row not in complete]
    notes = [counter.problem] if counter.problem else []
    if left_out:
        notes.append(f"left out (no run in every host): {', '.join(left_out)}")
    return Ledger(
        title,
        len(full),
        counter.units,
        complete,
        eager_parts,
        counter.count(compact_json({"tools": wire})),
        "; ".join(notes) or None,
        hosts or ["resources"],
        dict(passed or {}),
    )


# -- terminal table ------------------------------------------------------------------------------------


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(ledger: Ledger) -> str:
    """A fixed-width table: per task, eager vs each host in each unit, and the share saved."""
    units = ledger.units
    head = f"{'task':<16} {'fetched (+ errors seen)':<44}"
    for unit in units:
        short = unit.replace("_base", "")
        head += f" | {'eager ' + short:>13}"
        for host in ledger.hosts:
            head += f" {host + ' ' + short:>18} {'saved':>6}"
    lines = [f"Token ledger: {ledger.title} ({ledger.tools} tools)", head, "-" * len(head)]
    for row in ledger.rows:
        line = f"{_cell(row.key, 16):<16} {_cell(row.fetched_label(), 44):<44}"
        for unit in units:
            line += f" | {row.eager.get(unit, 0):>13,}"
            for host in ledger.hosts:
                line += f" {row.cost(host).get(unit, 0):>18,} {row.saved(unit, host):>6.1%}"
        lines.append(line)
    lines.append("-" * len(head))
    total = f"{'total':<16} {f'{len(ledger.rows)} tasks':<44}"
    eager = ledger.total("eager")
    for unit in units:
        total += f" | {eager.get(unit, 0):>13,}"
        for host in ledger.hosts:
            total += f" {ledger.total(host).get(unit, 0):>18,} {ledger.saved(unit, host):>6.1%}"
    lines.append(total)
    first = units[0]
    per_task = ledger.rows[0].eager.get(first, 0) if ledger.rows else 0
    plain = ledger.wire_list.get(first, 0)
    lines.append(
        f"eager per task = base prompt + all {ledger.tools} full definitions = {per_task:,} {first}; "
        f"a plain tools/list of the same tools (schemas, no examples/guidance) is {plain:,}."
    )
    if ledger.passed:
        lines.append(_passed_sentence(ledger))
    if ledger.note:
        lines.append(f"note: {ledger.note}")
    return "\n".join(lines)


# -- markdown (README blocks) ----------------------------------------------------------------------------

_BLOCK_END: Final = "<!-- END GENERATED -->"
_BLOCKS: Final = ("ledger summary", "ledger tables")


def _short(unit: str) -> str:
    return unit.replace("_base", "")


def side_label(side: str) -> str:
    """How the docs name a ledger column: "resources host", "tools-only host", "catalog mode"."""
    return "catalog mode" if side == "catalog" else f"{side} host"


def _passed_sentence(ledger: Ledger) -> str:
    tasks = len(ledger.rows)
    return "passed: " + ", ".join(f"{ledger.passed.get(h, 0)} of {tasks} ({side_label(h)})" for h in ledger.hosts)


def render_markdown(ledger: Ledger) -> str:
    """The per-task ledger as a markdown table (eager, then each host), with its totals row."""
    head = "| task | fetched (+ errors seen) |"
    rule = "|---|---|"
    for unit in ledger.units:
        head += f" eager {_short(unit)} |"
        rule += "---:|"
        for host in ledger.hosts:
            head += f" {host} {_short(unit)} | saved |"
            rule += "---:|---:|"
    lines = [head, rule]
    for row in ledger.rows:
        line = f"| `{row.key}` | {row.fetched_label()} |"
        for unit in ledger.units:
            line += f" {row.eager.get(unit, 0):,} |"
            for host in ledger.hosts:
                line += f" {row.cost(host).get(unit, 0):,} | {row.saved(unit, host):.1%} |"
        lines.append(line)
    eager = ledger.total("eager")
    total = f"| **total** | {len(ledger.rows)} tasks |"
    for unit in ledger.units:
        total += f" **{eager.get(unit, 0):,}** |"
        for host in ledger.hosts:
            total += f" **{ledger.total(host).get(unit, 0):,}** | **{ledger.saved(unit, host):.1%}** |"
    lines.append(total)
    return "\n".join(lines)


def render_summary_markdown(ledgers: Sequence[Ledger]) -> str:
    """One row per ledger: tools, tasks (passed per column), total context eager vs each column, saved."""
    units = ledgers[0].units if ledgers else list(ENCODINGS)
    hosts = ledgers[0].hosts if ledgers else ["resources"]
    head = f"| server | tools | tasks (passed: {' / '.join(hosts)}) |"
    rule = "|---|---:|---:|"
    for unit in units:
        head += f" eager {_short(unit)} |"
        rule += "---:|"
        for host in hosts:
            head += f" {host} {_short(unit)} | saved |"
            rule += "---:|---:|"
    lines = [head, rule]
    for ledger in ledgers:
        passed = " / ".join(f"{ledger.passed[h]}" for h in hosts if h in ledger.passed)
        line = f"| {ledger.title} | {ledger.tools} | {len(ledger.rows)}{f' ({passed})' if passed else ''} |"
        eager = ledger.total("eager")
        for unit in units:
            line += f" {eager.get(unit, 0):,} |"
            for host in hosts:
                line += f" {ledger.total(host).get(unit, 0):,} | **{ledger.saved(unit, host):.1%}** |"
        lines.append(line)
    return "\n".join(lines)


def update_markdown(text: str, ledgers: Sequence[Ledger]) -> str:
    """`text` with its generated ledger blocks rewritten; raises ValueError when it has none.

    Blocks run from `<!-- BEGIN GENERATED: ledger summary -->` (or `ledger tables`) to `<!-- END GENERATED -->`.
    """
    bodies = {
        "ledger summary": render_summary_markdown(ledgers),
        "ledger tables": "\n\n".join(
            f"**{ledger.title}**: {ledger.tools} tools, {len(ledger.rows)} tasks"
            + (f"; {_passed_sentence(ledger)}" if ledger.passed else "")
            + f".\n\n{render_markdown(ledger)}"
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


# Fill classes per column, in run order: (fixed part, per-task part).
_HOST_STYLES: Final = (("f", "p"), ("g", "q"), ("c", "d"))
_FIXED_LABELS: Final = {
    "resources": "prompt + list + reader function",
    "tools-only": "prompt + list",
    "catalog": "prompt + the four meta-tools",
}


def render_svg(ledgers: Sequence[Ledger], unit: str | None = None) -> str:
    """Horizontal bars per task (eager grey, then one bar per host), one panel per ledger, own scale each."""
    width, left, right, bar, gap = 980, 150, 170, 10, 8
    hosts = ledgers[0].hosts if ledgers else ["resources"]
    row_height = (1 + len(hosts)) * bar + gap
    panels: list[str] = []
    y = 64 + 16 * len(hosts)
    chosen = unit
    for ledger in ledgers:
        use = chosen if chosen in ledger.units else ledger.units[0]
        chosen = use
        eager = ledger.total("eager")
        top = max([r.eager.get(use, 0) for r in ledger.rows] + [1])
        scale = (width - left - right) / top
        totals = ", ".join(
            f"{host} {ledger.total(host).get(use, 0):,} ({ledger.saved(use, host):.1%} saved)" for host in ledger.hosts
        )
        title = f"{ledger.title}: {ledger.tools} tools, {len(ledger.rows)} tasks; eager {eager.get(use, 0):,}; {totals}"
        panels.append(f'<text x="20" y="{y}" class="h">{_esc(title)}</text>')
        y += 14
        for row in ledger.rows:
            e = row.eager.get(use, 0)
            panels.append(f'<text x="{left - 8}" y="{y + bar + 4}" class="l" text-anchor="end">{_esc(row.key)}</text>')
            panels.append(f'<rect x="{left}" y="{y}" width="{e * scale:.1f}" height="{bar}" class="e"/>')
            panels.append(f'<text x="{left + e * scale + 6:.1f}" y="{y + bar - 1}" class="n">{e:,}</text>')
            for index, host in enumerate(ledger.hosts):
                cost = row.hosts[host]
                fixed_class, task_class = _HOST_STYLES[index % len(_HOST_STYLES)]
                p = cost.total.get(use, 0)
                top_y = y + (index + 1) * bar
                fixed = sum(cost.parts.get(k, {}).get(use, 0) for k in _FIXED_PARTS) if cost.parts else p
                panels.append(
                    f'<rect x="{left}" y="{top_y}" width="{max(fixed * scale, 1):.1f}" height="{bar}" '
                    f'class="{fixed_class}"/>'
                )
                panels.append(
                    f'<rect x="{left + fixed * scale:.1f}" y="{top_y}" width="{max((p - fixed) * scale, 0):.1f}" '
                    f'height="{bar}" class="{task_class}"/>'
                )
                panels.append(
                    f'<text x="{left + p * scale + 6:.1f}" y="{top_y + bar - 1}" class="n">{p:,} '
                    f"({row.saved(use, host):.0%} saved, {_esc(host)})</text>"
                )
            y += row_height
        y += 34
    height = y
    legend_unit = chosen or "tokens"
    legend = [
        f'<text x="20" y="24" class="t">Context the model carries per task ({_esc(legend_unit)} tokens): '
        "eager loading vs progressive disclosure" + (" and catalog mode" if "catalog" in hosts else "") + "</text>",
        '<rect x="20" y="34" width="12" height="10" class="e"/><text x="38" y="43" class="l">eager: every full '
        "definition up front</text>",
    ]
    for index, host in enumerate(hosts):
        fixed_class, task_class = _HOST_STYLES[index % len(_HOST_STYLES)]
        fixed_parts = _FIXED_LABELS.get(host, "prompt + list")
        per_task = (
            "searches + definitions fetched + errors seen" if host == "catalog" else "definitions fetched + errors seen"
        )
        line_y = 34 + 16 * index
        legend.append(
            f'<rect x="300" y="{line_y}" width="12" height="10" class="{fixed_class}"/>'
            f'<rect x="314" y="{line_y}" width="12" height="10" class="{task_class}"/>'
            f'<text x="332" y="{line_y + 9}" class="l">{_esc(side_label(host))}: fixed ({fixed_parts}), then per task '
            f"({per_task})</text>"
        )
    style = (
        "<style>.t{font:bold 15px sans-serif;fill:#222}.h{font:bold 12px sans-serif;fill:#222}"
        ".l{font:11px sans-serif;fill:#333}.n{font:10px sans-serif;fill:#555}"
        ".e{fill:#b8bec6}.f{fill:#8fbce8}.p{fill:#1f5fa8}.g{fill:#f3c48b}.q{fill:#c7660e}.c{fill:#9ed9a6}.d{fill:#2e8b46}"
        "</style>"
    )
    body = "".join(panels)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'{style}<rect width="100%" height="100%" fill="#fff"/>{"".join(legend)}{body}</svg>\n'
    )
