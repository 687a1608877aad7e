"""1. Context saved: tokens a client shows the model, with and without progressive disclosure.

For each catalog in ../shared/catalogs and for all of them combined (322 tools; a repeated name gets a `_2`
suffix), through the real client (`mcp.Client(server, mode="legacy", cache=None)`):

* eager: the plain server's `tools/list` result, every tool exactly as stored (all fields);
* progressive: the extension's `tools/list` (simulation mode, `mcp_pd.reference.serve_simulation`) plus the
  `resources/list` result and the server `instructions` a client would also show the model;
* floor: names alone (`{"name", "inputSchema": {"type":"object","additionalProperties":true}}`) plus the same
  resource listing and instructions: the least any progressive listing could cost;
* a typical task: the progressive listing plus one read of three definitions (`?tools=a,b,c`), for seeded
  random triples (median, p95, max) and for the three largest definitions (worst case).

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

import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_pd.reference import serve_simulation

from ._common import (
    MINIMAL_SCHEMA,
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
    server, _ = serve_simulation(directory, watch=False, fetch_rate=None)
    async with (
        Client(plain_server(tools), mode="legacy", cache=None) as eager,
        Client(server, mode="legacy", cache=None) as progressive,
    ):
        full = [_dump(t) for t in (await eager.list_tools()).tools]
        minimal = [_dump(t) for t in (await progressive.list_tools()).tools]
        resources = [_dump(r) for r in (await progressive.list_resources()).resources]
        templates = [_dump(r) for r in (await progressive.list_resource_templates()).resource_templates]
        instructions = progressive.instructions or ""
        names = [t["name"] for t in minimal]
        if sorted(names) != sorted(t["name"] for t in tools):
            raise RuntimeError(f"{label}: the progressive listing does not list exactly the catalog's tools")
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
        pd_list = n({"tools": minimal})
        pd_total = pd_list + listing + instr
        floor_total = n({"tools": floor}) + listing + instr
        fetched = {name: n(text) for name, text in single.items()}
        triple_tokens = [n(text) for text in triple_texts]
        model_full = n({"tools": [{k: t[k] for k in MODEL_FIELDS if k in t} for t in full]})
        model_pd = n({"tools": [{k: t[k] for k in MODEL_FIELDS if k in t} for t in minimal]}) + listing + instr
        projected = {key: n({"tools": tools}) + listing + instr for key, tools in variants.items()}
        median_fetch = percentile(triple_tokens, 50)
        figures["tokens"][enc_name] = {
            "eager_full_list": full_list,
            "progressive_list": pd_list,
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
        }
    return figures


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
        "Progressive total = tools/list + resources/list + the server instructions, all as received. The "
        "instructions include the simulation server's own one-line note (conservative: it counts against us). "
        "resources/templates/list repeats the resource description and is reported but not counted.",
        "Floor = every tool by name alone with the minimal schema, plus the same resource listing and instructions.",
        "Model view = only name, description and inputSchema of each tool (what function-calling APIs take).",
        "Task = progressive total + one read of three definitions (?tools=a,b,c): median/p95/max over seeded "
        "random triples, and the three largest definitions.",
        "Tokens: compact JSON, bpe-openai o200k_base and cl100k_base.",
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

    for enc in encoders:
        t = catalogs[COMBINED]["tokens"][enc]
        recorder.goal(
            f"1.reduction.{enc}",
            f"combined catalog: progressive total vs eager tools/list, tokens saved ({enc})",
            ">= 85%",
            round(t["reduction"] * 100, 2),
            "%",
            t["reduction"] >= 0.85,
            f"{t['progressive_total']} vs {t['eager_full_list']} tokens; floor (names alone) "
            f"{t['floor_total']} = {t['floor_reduction'] * 100:.1f}% saved; with title and annotations listed "
            f"(list_annotations=True) {t['projections']['with_title_and_annotations']['reduction'] * 100:.1f}%",
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
            "with title and annotations listed "
            f"{t['projections']['with_title_and_annotations']['task_ratio_median'] * 100:.1f}%",
        )
    return recorder


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
