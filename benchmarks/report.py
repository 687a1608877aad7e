"""Tables from benchmarks/results/*.json: printed, and with --write put into benchmarks/README.md.

Only the block between the README's GENERATED markers is rewritten; the prose around it is kept.
--write also rewrites the short summary block of the top-level README.md (SUMMARY_BEGIN .. END).

    python -m benchmarks.report [--results DIR] [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

from ._common import PACKAGE_DIR, RESULTS_DIR

BEGIN = "<!-- BEGIN GENERATED: python -m benchmarks.report --write -->"
END = "<!-- END GENERATED -->"
SUMMARY_BEGIN = "<!-- BEGIN GENERATED: benchmarks summary (python -m benchmarks.report --write) -->"
ORDER = (
    "context",
    "catalog",
    "overhead",
    "scale",
    "browse",
    "fastmcp",
    "memory",
    "hardening",
    "reload",
    "load",
    "search",
    "gateway",
    "redis",
)


def _load(results: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for name in (*ORDER, "run"):
        path = results / f"{name}.json"
        if path.exists():
            found[name] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _table(header: list[str], rows: list[list[Any]], left: tuple[int, ...] = (0,)) -> list[str]:
    align = ["---" if i in left else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _f(value: Any, digits: int = 1, suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _goals(data: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every goal of every benchmark, in order, with its measured value and verdict as shown in the tables."""
    goals = []
    for name in ORDER:
        for goal in data.get(name, {}).get("goals", []):
            verdict = {True: "met", False: "**missed**", None: "n/a"}[goal["met"]]
            value = "n/a" if goal["value"] is None else f"{goal['value']:g} {goal['unit']}".strip()
            goals.append({**goal, "shown": value, "verdict": verdict})
    return goals


def goals_section(data: dict[str, dict[str, Any]]) -> list[str]:
    rows = [[g["id"], g["figure"], g["target"], g["shown"], g["verdict"], g["note"]] for g in _goals(data)]
    return [
        "### Every figure against its goal",
        "",
        *_table(["#", "figure", "goal", "measured", "", "detail"], rows, left=(0, 1, 5)),
    ]


def machine_section(data: dict[str, dict[str, Any]]) -> list[str]:
    any_result = next((data[n] for n in ORDER if n in data), None)
    if any_result is None:
        return []
    m = any_result["machine"]
    lines = [
        "### Machine and run",
        "",
        f"{m.get('cores')} cores ({m.get('cpu') or 'unknown CPU'}), {m.get('memory_gib')} GiB, {m.get('platform')}; "
        f"Python {m.get('python')}, mcp {m.get('mcp')}, mcp-types {m.get('mcp_types')}, pydantic {m.get('pydantic')}, "
        f"uvicorn {m.get('uvicorn')}, bpe-openai {m.get('bpe_openai')}; repository at `{m.get('git_commit')}`"
        + (" (server/ modified)" if m.get("server_tree_modified") else "")
        + ".",
        "",
    ]
    rows = []
    for name in ORDER:
        if name in data:
            d = data[name]
            rows.append([name, _f(d["duration_s"], 0, " s"), d["load_average_before"], d["load_average_after"]])
    lines += _table(["benchmark", "took", "load average before (1/5/15 min)", "after"], rows, left=(0, 2, 3))
    run = data.get("run")
    if run:
        lines += [
            "",
            f"Whole run (`{run['command']}`): {run['total_seconds']:.0f} s ({run['total_seconds'] / 60:.1f} min). "
            "Other work was running on this machine at the same time (see the load averages): absolute times are "
            "noisy; the ratios pair each figure with its baseline in the same run.",
        ]
    return lines


def context_section(d: dict[str, Any]) -> list[str]:
    rows = []
    for name, c in d["figures"]["catalogs"].items():
        t = c["tokens"]["o200k_base"]
        rows.append(
            [
                f"`{name}`" if " " not in name else f"**{name}**",
                c["tools"],
                _f(t["eager_full_list"]),
                _f(t["progressive_total"]),
                _pct(t["reduction"]),
                _f(t["floor_total"]),
                _pct(t["floor_reduction"]),
                _pct(t["share_of_possible_savings"]),
                _pct(t["projections"]["with_title_and_annotations"]["reduction"]),
                _pct(t["task"]["ratio_median"]),
                _pct(t["task"]["ratio_three_largest"]),
            ]
        )
    combined = d["figures"]["catalogs"][next(reversed(d["figures"]["catalogs"]))]
    c100 = combined["tokens"]["cl100k_base"]
    o200 = combined["tokens"]["o200k_base"]
    return [
        "### 1. Context saved (tokens, o200k_base)",
        "",
        *_table(
            [
                "catalog",
                "tools",
                "eager tools/list",
                "progressive (list + resource + instructions)",
                "saved",
                "floor (names alone)",
                "floor saved",
                "of possible savings",
                "saved with `list_annotations=True`",
                "task: list + 3 fetched (median) / eager",
                "task, 3 largest / eager",
            ],
            rows,
        ),
        "",
        f"Combined catalog in cl100k_base: eager {c100['eager_full_list']:,}, progressive "
        f"{c100['progressive_total']:,} ({_pct(c100['reduction'])} saved), floor {c100['floor_total']:,}, "
        f"task {_pct(c100['task']['ratio_median'])}. Of the progressive total (o200k), the tool list is "
        f"{o200['progressive_list']:,}, the resource listing {o200['resource_listing']:,} and the instructions "
        f"{o200['instructions']:,}; only name/description/inputSchema (model view): "
        f"{_pct(o200['model_view']['reduction'])} saved. Entries with annotations in the minimal list: "
        f"{combined['minimal_descriptions']['entries_with_annotations']} of {combined['tools']} (they stay in the "
        "fetched definition by default; spec/interpretations.md I-5); minimal "
        f"descriptions average {combined['minimal_descriptions']['mean_chars']} characters, none empty: "
        f"{combined['minimal_descriptions']['empty'] == 0}.",
    ]


def overhead_section(d: dict[str, Any]) -> list[str]:
    rows = []
    for transport, f in d["figures"].items():
        for op, c in f["client"].items():
            s = f.get("server", {}).get(op, {})
            ci = c["ratio"]["p50_ci95"]
            rows.append(
                [
                    transport,
                    c["what"],
                    f"{_f(c['plain']['p50_us'])} / {_f(c['plain']['p95_us'])}",
                    f"{_f(c['pd']['p50_us'])} / {_f(c['pd']['p95_us'])}",
                    f"{c['ratio']['p50']:.3f}x ({ci[0]:.2f}-{ci[1]:.2f})",
                    f"{c['ratio']['p95']:.3f}x",
                    f"{_f(s.get('plain', {}).get('p50_us'))} -> {_f(s.get('pd', {}).get('p50_us'))}" if s else "n/a",
                    f"{s['ratio']['p50']:.2f}x" if s.get("ratio") else "n/a",
                ]
            )
    cpu = [
        f"{t}: {f['server_cpu_ratio']:.2f}x ({f['server_cpu_per_iteration_us']['plain']:.0f} -> "
        f"{f['server_cpu_per_iteration_us']['pd']:.0f} us)"
        for t, f in d["figures"].items()
        if "server_cpu_ratio" in f
    ]
    return [
        "### 2. Overhead on the same MCPServer (microseconds)",
        "",
        *_table(
            [
                "transport",
                "operation",
                "plain p50 / p95",
                "extension p50 / p95",
                "p50 ratio (95% CI)",
                "p95 ratio",
                "server-side p50",
                "server-side ratio",
            ],
            rows,
            left=(0, 1),
        ),
        "",
        "Server CPU per iteration (all seven requests), extension/plain: " + "; ".join(cpu) + ".",
    ]


def _pair(plain: dict[str, Any], ours: dict[str, Any], ratios: dict[str, Any], key: str, digits: int) -> str:
    text = f"{plain[key]['p50_ms']:.{digits}f} -> {ours[key]['p50_ms']:.{digits}f}"
    # A baseline that only hands back a cached object (well under 0.1 ms) makes any ratio meaningless.
    return text if plain[key]["p50_ms"] < 0.1 else f"{text} ({ratios[key]['p50']:.2f}x)"


def scale_section(d: dict[str, Any], image: str | None) -> list[str]:
    rows = []
    for size, r in d["figures"]["tools"].items():
        p, e, q = r["plain"], r["pd"], r["ratios"]
        rows.append(
            [
                f"{int(size):,}",
                f"{p['startup_s']:.2f} -> {e['startup_s']:.2f} ({q['startup']:.2f}x)",
                _pair(p, e, q, "list_server", 1),
                _pair(p, e, q, "list_client", 0),
                _pair(p, e, q, "fetch_server", 3),
                _pair(p, e, q, "fetch_client", 3),
                f"{p['rss_end_mb']:.0f} -> {e['rss_end_mb']:.0f} (peak {e['rss_peak_mb']:.0f})",
            ]
        )
    srows = []
    for count, s in d["figures"]["sessions"].items():
        srows.append(
            [
                f"{int(count):,}",
                f"{s['traced_mb']:.1f}",
                f"{s['traced_bytes_per_session']:.0f}",
                ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in s["traced_breakdown_mb"].items()),
                f"{s['rss_delta_mb']:.1f}",
                f"{s['lookup']['p50_us']:.2f} / {s['lookup']['p95_us']:.2f}",
                f"{s['lookup_ratio_vs_dict']['p50']:.1f}x",
                f"{s['call']['ratio']['p50']:.3f}x",
            ]
        )
    lines = [
        "### 3. Scale",
        "",
        "Tools (plain simulated server -> with the extension; times are p50). The simulated server caches its",
        "`ListToolsResult` per definitions generation, so its own tools/list handler takes ~0.01 ms and no ratio is",
        "shown; the extension's server-side time is building the minimal page (the catalog merges only new or",
        "changed tools). Client-observed times compare the whole round trip, serialization included:",
        "",
        *_table(
            [
                "tools",
                "start-up (s)",
                "tools/list server-side (ms)",
                "tools/list client-observed (ms)",
                "one-tool fetch server-side (ms)",
                "one-tool fetch client-observed (ms)",
                "RSS (MB)",
            ],
            rows,
        ),
        "",
        "Authorized sessions (3 tools each):",
        "",
        *_table(
            [
                "sessions",
                "state, traced (MB)",
                "bytes/session",
                "of which (MB)",
                "RSS growth (MB)",
                "lookup p50 / p95 (us)",
                "lookup vs dict of sets",
                "authorized call vs plain (p50)",
            ],
            srows,
            left=(0, 3),
        ),
    ]
    if image:
        lines += ["", f"![growth with catalog size and session count](results/{image})"]
    return lines


def reload_section(d: dict[str, Any]) -> list[str]:
    rows = []
    for mode in ("in_place", "atomic"):
        e = d["figures"][mode]
        rows.append(
            [
                mode.replace("_", " "),
                e["edits"],
                f"{_f(e['served'].get('p50_ms'), 0)} / {_f(e['served'].get('p95_ms'), 0)}",
                f"{_f(e['raw_watcher_baseline'].get('p50_ms'), 0)} / {_f(e['raw_watcher_baseline'].get('p95_ms'), 0)}",
                _f(e.get("ratio_p50_vs_raw_watcher"), 2, "x"),
                f"{_f(e['list_changed_notification'].get('p50_ms'), 0)} / "
                f"{_f(e['list_changed_notification'].get('p95_ms'), 0)}",
                e["not_served_within_5s"],
            ]
        )
    return [
        "### 4. Hot reload (milliseconds from the write)",
        "",
        *_table(
            [
                "write",
                "edits",
                "served p50 / p95",
                "bare watcher p50 / p95",
                "p50 vs bare watcher",
                "list_changed received p50 / p95",
                "not served in 5 s",
            ],
            rows,
        ),
    ]


def load_section(d: dict[str, Any]) -> list[str]:
    t = d["figures"]["totals"]
    rows = []
    for variant in ("plain", "pd"):
        v = t[variant]
        rows.append(
            [
                "plain server" if variant == "plain" else "with extension",
                v["rounds"],
                f"{v['requests']:,}",
                f"{v['throughput_rps']:.0f}",
                f"{v['p50_ms']:.1f}",
                f"{v['p95_ms']:.1f}",
                v["errors"],
                v["leaks"] if variant == "pd" else "n/a",
                f"{v['server_cpu_per_request_us']:.0f}",
            ]
        )
    r = t["ratios"]
    per_round = ", ".join(f"{x['variant']} {x['throughput_rps']:.0f}" for x in d["figures"]["rounds"])
    return [
        f"### 5. Streamable HTTP under load ({d['figures']['sessions']} sessions, {d['figures']['iterations']} "
        "iterations each per round)",
        "",
        *_table(
            [
                "server",
                "rounds",
                "requests",
                "requests/s",
                "p50 (ms)",
                "p95 (ms)",
                "errors",
                "leaks",
                "server CPU/request (us)",
            ],
            rows,
        ),
        "",
        f"Extension/plain: throughput {r['throughput']:.2f}x, p95 {r['p95']:.2f}x, server CPU per request "
        f"{r['server_cpu_per_request']:.2f}x. Requests/s per round, in order: {per_round}.",
    ]


def search_section(d: dict[str, Any]) -> list[str]:
    f = d["figures"]
    header = ["set (who wrote it)", "variant", "top-1", "top-5", "MRR", "recall@5", "abstained", "false abst.", "kinds"]
    rows = []
    for set_name, table in f["quality"].items():
        for variant, s in table.items():
            if not isinstance(s, dict) or "all" not in s:
                continue
            kinds = ", ".join(
                f"{k} {_pct(v['top1'])}/{_pct(v['top5'])}" for k, v in s["kinds"].items() if len(s["kinds"]) > 1
            )
            rows.append(
                [
                    f"{set_name} ({table['who'].split(':')[0].split(' (')[0]}; {table['tools']} tools)",
                    variant,
                    _pct(s["all"]["top1"]),
                    _pct(s["all"]["top5"]),
                    f"{s['all']['mrr']:.3f}",
                    _pct(s["all"]["recall5"]),
                    _pct(s["unanswerable"]["abstention"]),
                    _pct(s["all"]["false_abstention"]),
                    kinds,
                ]
            )
    ablation = []
    for label, row in f["ablation"].items():
        for set_name, s in row.items():
            base = f["quality"][set_name]["restarted (hybrid)"]["all"]
            ablation.append(
                [
                    set_name,
                    f"hybrid {label}",
                    f"{_pct(s['top1'])} ({(s['top1'] - base['top1']) * 100:+.1f})",
                    f"{_pct(s['top5'])} ({(s['top5'] - base['top5']) * 100:+.1f})",
                    f"{_pct(s['recall5'])} ({(s['recall5'] - base['recall5']) * 100:+.1f})",
                ]
            )
    speed = []
    for size, entry in f["speed"].items():
        for mode, e in entry.items():
            speed.append(
                [
                    f"{int(size):,}",
                    mode,
                    f"{e['build_s']:.1f} / {e['build_cpu_s']:.1f}",
                    f"{e['rss_growth_mb']:.0f}",
                    f"{e['p50_ms']:.2f} / {e['p95_ms']:.2f}",
                    f"{e['cpu_p50_ms']:.2f} / {e['cpu_p95_ms']:.2f}",
                ]
            )
    lines = [
        "### 6. Tool search (catalog mode's index)",
        "",
        "Only the public sets predict what users see: ours were written by the people who wrote the vocabulary. "
        "`kinds` shows top-1/top-5 per kind of query.",
        "",
        *_table(header, rows, left=(0, 1, 8)),
        "",
        "What each idea buys on the public sets (hybrid; the change against the full configuration in points):",
        "",
        *_table(["set", "variant", "top-1", "top-5", "recall@5"], ablation, left=(0, 1)),
    ]
    processes = f.get("processes")
    if processes:
        cold, restarted, indexed = processes["cold"], processes["restarted"], processes["index_command"]
        lines += [
            "",
            f"Real processes (322 tools): a cold start answered its first search with **{cold['ranking']}** ranking "
            f"({cold['first_search_ms']:.0f} ms); `mcp-pd index` took {indexed['seconds']:.0f} s ({indexed['said']}); "
            f"a restarted process answered its first search with **{restarted['ranking']}** ranking "
            f"({restarted['first_search_ms']:.0f} ms).",
        ]
    t = f["answer_tokens_o200k"]
    lines += [
        "",
        f"A 5-result answer (name, category, one line each, JSON): {t['mean']:.0f} tokens on average, p95 "
        f"{t['p95']}, max {t['max']} (o200k, {t['answers']} answers).",
        "",
        "Speed (synthetic catalogs cycle the 322 definitions; build = wall / CPU seconds, hybrid at 322 includes "
        "loading the model and embedding every tool):",
        "",
        *_table(
            [
                "tools",
                "index",
                "build s (wall / CPU)",
                "RSS growth (MB)",
                "search p50 / p95 (ms)",
                "CPU p50 / p95 (ms)",
            ],
            speed,
            left=(0, 1),
        ),
    ]
    return lines


def fastmcp_section(d: dict[str, Any]) -> list[str]:
    """Per size: read and call, the extension against plain FastMCP (p50 latency, server CPU per request), and the
    same figures of the code before the fix when the result carries them."""
    lines = [f"### {d['title']}", ""]
    lines += [f"- {line}" for line in d.get("method", [])]
    runs = [("this code", d["figures"])]
    if "before_fix" in d["figures"]:
        runs.append((f"before ({d['figures']['before_fix'].get('commit', 'main')})", d["figures"]["before_fix"]))
    rows = []
    for label, figures in runs:
        for size, row in figures["sizes"].items():
            cells = [label, f"{int(size):,}"]
            for op in ("read", "call"):
                r = row[op]
                cpu = r["server_cpu_ms_per_request"]
                cells += [
                    f"{_f(r['pd']['p50_ms'], 2)} / {_f(r['plain']['p50_ms'], 2)} ms = **{r['ratio']['p50']:.2f}x**",
                    f"{_f(cpu['pd'], 2)} / {_f(cpu['plain'], 2)} ms = {_f(r['cpu_ratio'], 2)}x",
                ]
            cells.append(", ".join(f"{x:g}" for x in row["read"]["load_average"]))
            rows.append(cells)
    header = ["code", "tools", "read p50 (ext / plain)", "read CPU", "call p50 (ext / plain)", "call CPU", "load"]
    lines += ["", *_table(header, rows, left=(0,)), "", f"Every figure: `benchmarks/results/{d['benchmark']}.json`."]
    return lines


def generic_section(d: dict[str, Any]) -> list[str]:
    """A benchmark without a table of its own: its title, method and goals (the figures are in its JSON file)."""
    lines = [f"### {d['title']}", ""]
    lines += [f"- {line}" for line in d.get("method", [])]
    lines += ["", f"Every figure: `benchmarks/results/{d['benchmark']}.json`."]
    return lines


def render(data: dict[str, dict[str, Any]]) -> str:
    lines = [*machine_section(data), "", *goals_section(data)]
    sections = {
        "context": context_section,
        "overhead": overhead_section,
        "reload": reload_section,
        "load": load_section,
        "search": search_section,
        "fastmcp": fastmcp_section,
    }
    for name in ORDER:
        if name not in data:
            continue
        lines.append("")
        if name == "scale":
            lines += scale_section(data[name], data[name]["figures"].get("plot"))
        elif name in sections:
            lines += sections[name](data[name])
        else:
            lines += generic_section(data[name])
    return "\n".join(lines) + "\n"


def _apart(data: dict[str, dict[str, Any]]) -> str:
    """Which results did not come from the recorded full run (run on their own later, or not part of it)."""
    run = data.get("run", {})
    runs = run.get("benchmarks", {})
    start, seconds = run.get("started_unix", 0.0), run.get("total_seconds", 0.0)
    apart = [
        name
        for name, result in data.items()
        if name != "run"
        and result.get("goals")
        and (
            name not in runs
            or runs[name].get("exit_code") != 0
            or not start <= result.get("started_unix", 0.0) <= start + seconds
        )
    ]
    return f", and {', '.join(sorted(apart))} run on their own (`python -m benchmarks.<name>`)" if apart else ""


def summary(data: dict[str, dict[str, Any]]) -> str:
    """The top-level README's block: every goal in one short table, and the plot."""
    rows = [[g["figure"], g["target"], g["shown"], g["verdict"]] for g in _goals(data)]
    met = sum(1 for r in rows if r[3] == "met")
    run = data.get("run", {})
    took = f" ({run['total_seconds'] / 60:.1f} minutes)" if isinstance(run.get("total_seconds"), (int, float)) else ""
    lines = [
        f"{met} of {len(rows)} goals met on a 2-core machine: one `python -m benchmarks` run{took}{_apart(data)} "
        "(every speed figure is a ratio against a baseline measured in the same run; tables and method in "
        "[benchmarks/README.md](benchmarks/README.md)).",
        "",
        *_table(["figure", "goal", "measured", ""], rows, left=(0,)),
    ]
    plot = data.get("scale", {}).get("figures", {}).get("plot")
    if plot:
        lines += ["", f"![growth with catalog size and session count](benchmarks/results/{plot})"]
    return "\n".join(lines) + "\n"


def _rewrite(path: Path, begin: str, body: str) -> None:
    current = path.read_text(encoding="utf-8")
    if begin not in current:
        raise SystemExit(f"report: {path} has no '{begin}' block")
    head, _, rest = current.partition(begin)
    if END not in rest:
        raise SystemExit(f"report: {path}: '{begin}' has no '{END}' after it")
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{begin}\n{body}{END}{tail}", encoding="utf-8")


SKELETON = f"""# Benchmarks

{BEGIN}
{END}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS_DIR)
    parser.add_argument("--write", action="store_true", help="rewrite the generated block of benchmarks/README.md")
    args = parser.parse_args(argv)
    data = _load(args.results)
    if not data:
        print(f"report: no results in {args.results}")
        return 1
    text = render(data)
    if not args.write:
        print(text)
        return 0
    readme = PACKAGE_DIR / "README.md"
    current = readme.read_text(encoding="utf-8") if readme.exists() else SKELETON
    if BEGIN not in current or END not in current:
        readme.write_text(current.rstrip() + f"\n\n{BEGIN}\n{END}\n", encoding="utf-8")
    _rewrite(readme, BEGIN, text)
    top = PACKAGE_DIR.parent / "README.md"
    if top.exists() and args.results == RESULTS_DIR:  # quick runs never touch the front page
        _rewrite(top, SUMMARY_BEGIN, summary(data))
        print(f"report: updated {top}")
    if "scale" in data and data["scale"]["figures"].get("plot"):
        if importlib.util.find_spec("matplotlib") is None:
            # The tables need nothing more than the results; the plot needs the bench extra (./dev bench has it).
            print("report: the scale plot was left as it is: matplotlib is not installed (the bench extra)")
        else:
            from .scale import plot  # the plot is derived from scale.json like the tables

            plot(data["scale"]["figures"], args.results / data["scale"]["figures"]["plot"])
    print(f"report: updated {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
