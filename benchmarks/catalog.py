"""Catalog mode's context cost on the combined real catalog (issue 14's token goals).

The nine catalogs in ../shared/catalogs served in simulation (321 tools: one name is defined twice and served
once), once in eager mode and once in catalog mode, through the real client. Counted with `bpe-openai`
(o200k_base and cl100k_base): catalog mode's whole `tools/list` and its instructions; one 5-result
`search_tools` answer; and a typical 3-tool task (the listing and instructions once, then for each of three
tools one search and one describe of the tool it finds: the query, the answer, the definition) against the
eager `tools/list` (every full definition). Lexical search (`--lexical`), so the figures do not depend on
whether the semantic extra is installed.

    python -m benchmarks.catalog [--quick]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_pd.reference import serve_simulation

from ._common import Recorder, benchmark_main, catalogs_dir, quiet_logging, tokenizers

TASKS = (
    ("open a pull request for my branch", "create_pull_request"),
    ("list the pods in a namespace", "pods_list_in_namespace"),
    ("take a screenshot of the page", "browser_take_screenshot"),
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("catalog", "Catalog mode: context tokens on the combined real catalog", quick, out)
    recorder.method = [line.strip() for line in (__doc__ or "").splitlines()[2:9] if line.strip()]
    directory = catalogs_dir()
    catalog, _ = serve_simulation(directory, mode="catalog", semantic="off", watch=False)
    eager, _ = serve_simulation(directory, mode="eager", watch=False)
    encoders = tokenizers()
    figures: dict[str, Any] = {}
    async with Client(catalog, mode="legacy", cache=None) as client, Client(eager, mode="legacy", cache=None) as full:
        listing = [
            t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in (await client.list_tools()).tools
        ]
        everything = [
            t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in (await full.list_tools()).tools
        ]
        instructions = client.instructions or ""
        exchanges: list[str] = [_text(listing), instructions]
        found_all = True
        for query, expected in TASKS:
            answer = await client.call_tool("search_tools", {"query": query})
            names = [r["name"] for r in (answer.structured_content or {}).get("results", [])]
            found_all = found_all and expected in names
            described = await client.call_tool("describe_tools", {"tools": [expected]})
            exchanges += [_text({"query": query}), _text(answer.structured_content), described.content[0].text]  # type: ignore[union-attr]
        five = await client.call_tool("search_tools", {"query": "create an issue", "limit": 5})
    for name, encoder in encoders.items():

        def count(value: Any, encoder: Any = encoder) -> int:
            return len(encoder.encode(_text(value)))

        eager_tokens = count(everything)
        task = sum(count(part) for part in exchanges)
        figures[name] = {
            "tools_listed_eager": len(everything),
            "catalog_tools_list": count(listing),
            "catalog_instructions": count(instructions),
            "search_answer_5_results": count(five.structured_content),
            "eager_tools_list": eager_tokens,
            "typical_task": task,
            "typical_task_share_of_eager_pct": round(100 * task / eager_tokens, 2),
        }
        print(f"  {name}: {figures[name]}")
    figures["typical_task_found_every_tool"] = found_all
    recorder.figures = figures
    o200k = figures["o200k_base"]
    recorder.goal(
        "14.t1",
        "catalog-mode tools/list (o200k)",
        "<= 600 tokens",
        o200k["catalog_tools_list"],
        "tokens",
        o200k["catalog_tools_list"] <= 600,
    )
    recorder.goal(
        "14.t2",
        "typical 3-tool task / eager tools/list (o200k)",
        "<= 5%",
        o200k["typical_task_share_of_eager_pct"],
        "%",
        o200k["typical_task_share_of_eager_pct"] <= 5 and found_all,
    )
    recorder.goal(
        "14.t3",
        "5-result search answer (o200k)",
        "<= 400 tokens",
        o200k["search_answer_5_results"],
        "tokens",
        o200k["search_answer_5_results"] <= 400,
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "catalog: context tokens of catalog mode", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
