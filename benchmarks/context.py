"""1. Context saved: tokens a client shows the model, with and without progressive disclosure.

For each catalog in ../shared/catalogs and for all of them combined (322 tools; a repeated name gets a `_2`
suffix), through the real client (`mcp.Client(server, mode="legacy", cache=None)`):

* eager: the plain server's `tools/list` result, every tool exactly as stored (all fields): the baseline of
  every "saved" figure;
* progressive: the extension's `tools/list` (simulation mode, `mcp_pd.reference.serve_simulation`, the default
  mode: its `describe_tools` entry included) plus the `resources/list` result and the server `instructions` a
  client would also show the model;
* floor: names alone (`{"name", "inputSchema": {"type":"object","additionalProperties":true}}`) plus the same
  resource listing and instructions: the least any progressive listing could cost;
* a typical task: the progressive listing plus one read of three definitions (`?tools=a,b,c`), for seeded
  random triples (median, p95, max) and for the three largest definitions (worst case);
* per disclosure mode, the same parts as each mode serves them: `mode="eager"` (full definitions listed, no
  fetch), `mode="progressive"` with the describe tool (the default) and with `describe_tool=False`.
  `describe_tools` answers with the resource's own JSON text, so a fetch costs the same either way.

Token counts are of compact JSON (as on the wire; the catalog README counts the same way) with bpe-openai's
o200k_base and cl100k_base.

    python -m benchmarks.context [--quick]
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import mcp_pd
import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_pd.reference import serve_simulation

from ._common import (
    MINIMAL_SCHEMA,
    PACKAGE_DIR,
    REPO,
    Recorder,
    Tokenizer,
    benchmark_main,
    catalog_names,
    catalogs_dir,
    combined_catalog,
    compact,
    load_catalog,
    percentile,
    quiet_logging,
    temporary_directory,
    tokenizers,
    write_catalog,
)

COMBINED = "all catalogs combined"
MODEL_FIELDS = ("name", "description", "inputSchema")
DESCRIBE_TOOL = "describe_tools"
# Disclosure modes measured, as (key, ProgressiveDisclosure options); the first is the library's default.
MODES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("progressive", {}),
    ("progressive_without_describe_tool", {"describe_tool": False}),
    ("eager", {"mode": "eager"}),
)


def plain_server(tools: list[dict[str, Any]]) -> Server[Any]:
    """A server without the extension listing every definition exactly as stored."""
    listed = [types.Tool.model_validate(t) for t in tools]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    return Server("plain", on_list_tools=list_tools)


def _dump(model: Any) -> dict[str, Any]:
    value: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


async def list_all_tools(client: Client) -> list[dict[str, Any]]:
    """Every page of tools/list (the extension paginates; a client shows the model all of them)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += [_dump(t) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


async def shown(client: Client) -> dict[str, Any]:
    """What a client shows the model from one server: tools/list, resources/list, instructions."""
    return {
        "tools": await list_all_tools(client),
        "resources": [_dump(r) for r in (await client.list_resources()).resources],
        "instructions": client.instructions or "",
    }


async def fetch_text(client: Client, names: list[str] | tuple[str, ...]) -> str:
    result = await client.read_resource("resource:///tool_descriptions?tools=" + ",".join(names))
    content = result.contents[0]
    if not isinstance(content, types.TextResourceContents):
        raise RuntimeError("the descriptions resource returned no text")
    body = json.loads(content.text)
    for name in names:
        if "inputSchema" not in body.get(name, {}):
            raise RuntimeError(f"fetch of {name} returned no definition: {body.get(name)}")
    return content.text


async def measure_catalog(
    label: str, tools: list[dict[str, Any]], directory: Path, encoders: dict[str, Tokenizer], triples: int
) -> dict[str, Any]:
    servers = {key: serve_simulation(directory, watch=False, fetch_rate=None, **options)[0] for key, options in MODES}
    async with (
        Client(plain_server(tools), mode="legacy", cache=None) as eager,
        Client(servers["progressive"], mode="legacy", cache=None) as progressive,
        Client(servers["progressive_without_describe_tool"], mode="legacy", cache=None) as without_describe,
        Client(servers["eager"], mode="legacy", cache=None) as eager_mode,
    ):
        full = [_dump(t) for t in (await eager.list_tools()).tools]
        views = {
            "progressive": await shown(progressive),
            "progressive_without_describe_tool": await shown(without_describe),
            "eager": await shown(eager_mode),
        }
        listed = views["progressive"]["tools"]
        # The describe tool is the extension's own entry: counted in the listing, never fetched or sampled.
        describe_entry = [t for t in listed if t["name"] == DESCRIBE_TOOL]
        minimal = [t for t in listed if t["name"] != DESCRIBE_TOOL]
        resources = views["progressive"]["resources"]
        templates = [_dump(r) for r in (await progressive.list_resource_templates()).resource_templates]
        instructions = views["progressive"]["instructions"]
        names = [t["name"] for t in minimal]
        for key, view in views.items():
            served = sorted(t["name"] for t in view["tools"] if t["name"] != DESCRIBE_TOOL)
            if served != sorted(t["name"] for t in tools):
                raise RuntimeError(f"{label}: the {key} listing does not list exactly the catalog's tools")
        if len(describe_entry) != 1 or any(t["name"] == DESCRIBE_TOOL for t in views["eager"]["tools"]):
            raise RuntimeError(f"{label}: expected {DESCRIBE_TOOL} listed in the default mode only")
        if any(t["name"] == DESCRIBE_TOOL for t in views["progressive_without_describe_tool"]["tools"]):
            raise RuntimeError(f"{label}: describe_tool=False still lists {DESCRIBE_TOOL}")
        single = {name: await fetch_text(progressive, [name]) for name in names}
        rng = random.Random(2)
        all_triples = list(itertools.combinations(sorted(names), 3)) if len(names) <= 30 else None
        if all_triples is not None and len(all_triples) <= triples:
            chosen = all_triples
        else:
            chosen = [tuple(rng.sample(sorted(names), 3)) for _ in range(triples)]
        triple_texts = [await fetch_text(progressive, list(t)) for t in chosen]
        largest = sorted(names, key=lambda x: len(single[x]), reverse=True)[:3]
        largest_text = await fetch_text(progressive, largest)
        # describe_tools answers a fetch with the resource's JSON text, byte for byte: the same cost.
        described = await progressive.call_tool(DESCRIBE_TOOL, {"tools": list(chosen[0])})
        described_text = "".join(getattr(c, "text", "") for c in described.content)
        if described.is_error or described_text != triple_texts[0]:
            raise RuntimeError(f"{label}: describe_tools did not return the resource's text for {chosen[0]}")

    floor = [{"name": n, "inputSchema": dict(MINIMAL_SCHEMA)} for n in names]
    # The listing as `ProgressiveDisclosure(list_annotations=True)` serves it (title and annotations kept, taken
    # from the verbatim listing), and without `_meta`: what each choice of spec/interpretations.md I-5 costs.
    by_name = {t["name"]: t for t in full}
    variants = {
        "with_title_and_annotations": [
            {**t, **{k: by_name[t["name"]][k] for k in ("title", "annotations") if k in by_name[t["name"]]}}
            for t in minimal
        ],
        "without_meta": [{k: v for k, v in t.items() if k != "_meta"} for t in minimal],
    }
    descriptions = [str(t.get("description") or "") for t in minimal]
    figures: dict[str, Any] = {
        "tools": len(tools),
        "minimal_descriptions": {
            "empty": sum(1 for d in descriptions if not d.strip()),
            "mean_chars": round(sum(map(len, descriptions)) / len(descriptions), 1),
            "max_chars": max(map(len, descriptions)),
            "shortened_with_ellipsis": sum(1 for d in descriptions if d.endswith("…")),
            "entries_with_annotations": sum(1 for t in minimal if "annotations" in t),
            "entries_with_meta": sum(1 for t in minimal if "_meta" in t),
        },
        "tokens": {},
    }
    for enc_name, enc in encoders.items():

        def n(value: Any, enc: Tokenizer = enc) -> int:
            return len(enc.encode(value if isinstance(value, str) else compact(value)))

        full_list = n({"tools": full})
        listing = n({"resources": resources})
        instr = n(instructions)
        pd_list = n({"tools": listed})
        pd_total = pd_list + listing + instr
        floor_total = n({"tools": floor}) + listing + instr
        fetched = {name: n(text) for name, text in single.items()}
        triple_tokens = [n(text) for text in triple_texts]
        model_full = n({"tools": [{k: t[k] for k in MODEL_FIELDS if k in t} for t in full]})
        model_pd = n({"tools": [{k: t[k] for k in MODEL_FIELDS if k in t} for t in listed]}) + listing + instr
        projected = {key: n({"tools": [*describe_entry, *tools]}) + listing + instr for key, tools in variants.items()}
        median_fetch = percentile(triple_tokens, 50)
        modes: dict[str, Any] = {}
        for key, view in views.items():
            parts = {
                "tools_list": n({"tools": view["tools"]}),
                "resource_listing": n({"resources": view["resources"]}),
                "instructions": n(view["instructions"]),
            }
            total = sum(parts.values())
            # eager lists every definition: nothing to fetch; progressive adds the median triple's read
            task = total if key == "eager" else total + median_fetch
            modes[key] = {
                **parts,
                "describe_tool_entry": n({"tools": describe_entry}) if key == "progressive" else 0,
                "instructions_chars": len(view["instructions"]),
                "total": total,
                "reduction": round(1 - total / full_list, 4),
                "task_median": round(task, 1),
                "task_ratio_median": round(task / full_list, 4),
            }
        figures["tokens"][enc_name] = {
            "eager_full_list": full_list,
            "progressive_list": pd_list,
            "describe_tool_entry": n({"tools": describe_entry}),
            "resource_listing": listing,
            "resource_templates_listing_not_counted": n({"resourceTemplates": templates}),
            "instructions": instr,
            "progressive_total": pd_total,
            "reduction": round(1 - pd_total / full_list, 4),
            "floor_total": floor_total,
            "floor_reduction": round(1 - floor_total / full_list, 4),
            "over_floor_tokens": pd_total - floor_total,
            "share_of_possible_savings": round((full_list - pd_total) / (full_list - floor_total), 4),
            "model_view": {
                "fields": list(MODEL_FIELDS),
                "eager": model_full,
                "progressive_total": model_pd,
                "reduction": round(1 - model_pd / model_full, 4),
            },
            "projections": {
                key: {
                    "progressive_total": total,
                    "reduction": round(1 - total / full_list, 4),
                    "task_ratio_median": round((total + percentile(triple_tokens, 50)) / full_list, 4),
                }
                for key, total in projected.items()
            },
            "fetched_definition": {
                "mean": round(sum(fetched.values()) / len(fetched), 1),
                "max": max(fetched.values()),
                "largest": {name: fetched[name] for name in largest},
            },
            "task": {
                "triples_sampled": len(triple_tokens),
                "fetch_median": median_fetch,
                "fetch_p95": round(percentile(triple_tokens, 95), 1),
                "fetch_max": max(triple_tokens),
                "three_largest": largest,
                "fetch_three_largest": n(largest_text),
                "total_median": round(pd_total + median_fetch, 1),
                "ratio_median": round((pd_total + median_fetch) / full_list, 4),
                "ratio_p95": round((pd_total + percentile(triple_tokens, 95)) / full_list, 4),
                "ratio_three_largest": round((pd_total + n(largest_text)) / full_list, 4),
            },
            "modes": modes,
        }
    return figures


def _library_source() -> str:
    """Where `mcp_pd` came from: the checkout's server/, or a copy put first on PYTHONPATH (e.g. a clean snapshot)."""
    location = Path(mcp_pd.__file__).resolve().parent.parent
    return str(location.relative_to(REPO)) + "/ (this checkout)" if location.is_relative_to(REPO) else str(location)


def _reference_counts() -> dict[str, dict[str, Any]]:
    path = catalogs_dir() / "token_counts.json"
    if not path.exists():
        return {}
    rows = json.loads(path.read_text())
    return {row["catalog"]: row for row in rows if isinstance(row, dict) and "catalog" in row}


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("context", "Context saved: tokens shown to the model", quick, out)
    recorder.method = [
        "Through mcp.Client(mode='legacy', cache=None): eager = a plain server listing every stored definition "
        "verbatim; progressive = mcp_pd.reference.serve_simulation(catalog) (the extension in simulation mode).",
        "Progressive total = tools/list (the default mode: its describe_tools entry included) + resources/list + "
        "the server instructions (generated workflow and catalog summary, then the simulation server's own note), "
        "all as received, every tools/list page. resources/templates/list repeats the resource description and is "
        "reported but not counted.",
        "Per mode (figures.catalogs.*.tokens.*.modes): the same three parts as serve_simulation(catalog, **options) "
        "serves them for mode='eager', the default progressive mode (describe tool on) and describe_tool=False; "
        "task = the mode's total + the median triple's read (eager: nothing to fetch). describe_tools returns the "
        "resource's JSON text byte for byte (checked), so a fetch through it costs the same tokens.",
        "Floor = every tool by name alone with the minimal schema, plus the same resource listing and instructions.",
        "Model view = only name, description and inputSchema of each tool (what function-calling APIs take).",
        "Task = progressive total + one read of three definitions (?tools=a,b,c): median/p95/max over seeded "
        "random triples, and the three largest definitions.",
        "Tokens: compact JSON, bpe-openai o200k_base and cl100k_base.",
        f"Library measured: mcp_pd imported from {_library_source()}.",
    ]
    encoders = tokenizers()
    reference = _reference_counts()
    triples = 40 if quick else 300
    catalogs: dict[str, Any] = {}
    for name in catalog_names():
        tools = load_catalog(name)
        figures = await measure_catalog(name, tools, catalogs_dir() / name, encoders, triples // 3 if quick else 100)
        if name in reference:
            figures["catalog_readme_eager_o200k"] = reference[name].get("full_o200k_base")
        catalogs[name] = figures
        _print(name, figures)
    combined, renames = combined_catalog()
    with temporary_directory("mcp-pd-context-") as directory:
        write_catalog(directory, combined)
        figures = await measure_catalog(COMBINED, combined, directory, encoders, triples)
    figures["renamed"] = renames
    catalogs[COMBINED] = figures
    _print(COMBINED, figures)
    recorder.figures["catalogs"] = catalogs
    print(modes_table(catalogs))
    if not quick and out is None:  # the committed results: keep the README's per-mode table in step
        write_modes_table(PACKAGE_DIR / "README.md", catalogs)

    for enc in encoders:
        t = catalogs[COMBINED]["tokens"][enc]
        without = t["modes"]["progressive_without_describe_tool"]
        recorder.goal(
            f"1.reduction.{enc}",
            f"combined catalog: progressive total vs eager tools/list, tokens saved ({enc})",
            ">= 85%",
            round(t["reduction"] * 100, 2),
            "%",
            t["reduction"] >= 0.85,
            f"{t['progressive_total']} vs {t['eager_full_list']} tokens, the describe_tools entry "
            f"({t['describe_tool_entry']}) included; describe_tool=False {without['reduction'] * 100:.2f}%; "
            f"floor (names alone) {t['floor_total']} = {t['floor_reduction'] * 100:.1f}% saved; with title and "
            f"annotations listed (list_annotations=True) "
            f"{t['projections']['with_title_and_annotations']['reduction'] * 100:.1f}%",
        )
        recorder.goal(
            f"1.task.{enc}",
            f"combined catalog: typical task (list + 3 fetched definitions) / eager ({enc}, median triple)",
            "<= 20%",
            round(t["task"]["ratio_median"] * 100, 2),
            "%",
            t["task"]["ratio_median"] <= 0.20,
            f"p95 triple {t['task']['ratio_p95'] * 100:.1f}%, "
            f"three largest {t['task']['ratio_three_largest'] * 100:.1f}%; "
            f"describe_tool=False {without['task_ratio_median'] * 100:.2f}%; "
            "with title and annotations listed "
            f"{t['projections']['with_title_and_annotations']['task_ratio_median'] * 100:.1f}%",
        )
    return recorder


MODES_BEGIN = "<!-- BEGIN GENERATED: context per mode (python -m benchmarks.context) -->"
MODES_END = "<!-- END GENERATED -->"
MODE_LABELS = {
    "eager": '`mode="eager"` (full definitions listed)',
    "progressive": "`progressive` with `describe_tools` (default)",
    "progressive_without_describe_tool": "`progressive`, `describe_tool=False`",
}


def modes_table(catalogs: dict[str, Any]) -> str:
    """The combined catalog's context per disclosure mode, both encodings, as a markdown table."""
    combined = catalogs[COMBINED]
    encodings = list(combined["tokens"])
    head = ["mode"]
    for enc in encodings:
        short = enc.replace("_base", "")
        head += [
            f"tools/list {short}",
            "instructions",
            "resource listing",
            "total",
            "saved",
            "typical task",
            "of eager",
        ]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for key in ("eager", "progressive", "progressive_without_describe_tool"):
        cells = [MODE_LABELS[key]]
        for enc in encodings:
            m = combined["tokens"][enc]["modes"][key]
            cells += [
                f"{m['tools_list']:,}",
                f"{m['instructions']:,}",
                f"{m['resource_listing']:,}",
                f"{m['total']:,}",
                f"{m['reduction'] * 100:.2f}%",
                f"{m['task_median']:,.0f}",
                f"{m['task_ratio_median'] * 100:.2f}%",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    o200 = combined["tokens"][encodings[0]]
    baseline = ", ".join(f"{combined['tokens'][e]['eager_full_list']:,} {e}" for e in encodings)
    return (
        f'{combined["tools"]} tools. "saved" and "of eager" are against the plain server\'s `tools/list` with every '
        f"definition verbatim ({baseline}); typical task = the mode's total + one read of three definitions "
        f"(median of {o200['task']['triples_sampled']} seeded triples; eager fetches nothing). The describe tool's "
        f"own entry is {o200['describe_tool_entry']:,} {encodings[0]} tokens.\n\n" + "\n".join(lines) + "\n"
    )


def write_modes_table(readme: Path, catalogs: dict[str, Any]) -> None:
    """Rewrite the per-mode block of benchmarks/README.md (outside the report's block, which report.py owns)."""
    text = readme.read_text(encoding="utf-8")
    head, found, rest = text.partition(MODES_BEGIN)
    if not found or MODES_END not in rest:
        raise SystemExit(f"context: {readme} has no '{MODES_BEGIN}' ... '{MODES_END}' block")
    _, _, tail = rest.partition(MODES_END)
    readme.write_text(f"{head}{MODES_BEGIN}\n{modes_table(catalogs)}{MODES_END}{tail}", encoding="utf-8")
    print(f"  updated {readme.relative_to(REPO)}")


def _print(name: str, figures: dict[str, Any]) -> None:
    t = figures["tokens"]["o200k_base"]
    print(
        f"  {name:<24} {figures['tools']:>4} tools  eager {t['eager_full_list']:>6}  "
        f"progressive {t['progressive_total']:>6} "
        f"({t['reduction'] * 100:5.1f}% less; floor {t['floor_total']:>6} = {t['floor_reduction'] * 100:5.1f}%)  "
        f"task {t['task']['ratio_median'] * 100:5.1f}% of eager (o200k)"
    )


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "context: tokens shown to the model, eager vs progressive", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
