"""Convert MetaTool (HowieHwong/MetaTool, MIT) into a tool-search set: `python convert.py /path/to/MetaTool`.

Reads the repository's files as published and writes `tools.jsonl` and `queries.jsonl` beside this script
(SOURCE.md says what is taken and how it is sampled). Deterministic: samples are chosen by the SHA-256 of the text.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
PER_TOOL = 3  # answerable single-tool queries per tool
MULTI = 150  # multi-tool queries
NEGATIVE = 150  # queries the source labels as needing no tool
NEAR_MISS = 150  # single-tool queries asked with their tool absent from the catalog


def read(repo: Path, path: str) -> str:
    if (repo / path).is_file():
        return (repo / path).read_text(encoding="utf-8")
    return subprocess.check_output(["git", "--git-dir", str(repo), "show", f"HEAD:{path}"]).decode("utf-8")


def key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(repo: Path) -> None:
    descriptions: dict[str, str] = json.loads(read(repo, "dataset/plugin_des.json"))
    rows = list(csv.DictReader(io.StringIO(read(repo, "dataset/data/all_clean_data.csv"))))
    by_tool: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        query, tool = row["Query"].strip(), row["Tool"].strip()
        if query and tool in descriptions:
            by_tool[tool].append(query)
    with (HERE / "tools.jsonl").open("w", encoding="utf-8") as out:
        for name in sorted(descriptions):
            tool = {
                "name": name,
                "description": descriptions[name].strip(),
                "inputSchema": {"type": "object"},
                "category": "",
            }
            out.write(json.dumps(tool, ensure_ascii=False) + "\n")
    queries: list[dict[str, object]] = []
    spare: list[tuple[str, str]] = []
    for tool in sorted(by_tool):
        ranked = sorted(set(by_tool[tool]), key=key)
        queries += [{"query": q, "kind": "task", "relevant": [tool]} for q in ranked[:PER_TOOL]]
        spare += [(q, tool) for q in ranked[PER_TOOL : PER_TOOL + 2]]
    multi = json.loads(read(repo, "dataset/data/multi_tool_query_golden.json"))
    multi = [m for m in multi if all(t in descriptions for t in m["tool"])]
    for m in sorted(multi, key=lambda m: key(m["query"]))[:MULTI]:
        queries.append({"query": m["query"].strip(), "kind": "multi", "relevant": sorted(set(m["tool"]))})
    awareness = json.loads(read(repo, "dataset/tmp_dataset/Task1.json"))
    negative = sorted({a["query"].strip() for a in awareness if a["label"] == "negative"}, key=key)
    queries += [{"query": q, "kind": "none", "relevant": []} for q in negative[:NEGATIVE]]
    # MetaTool's reliability subtask: the right tool is not among the candidates, so the answer is "none". Here
    # the query is asked of the whole catalog without its tool (the benchmark hides the `absent` tools).
    for q, tool in sorted(spare, key=lambda qt: key(qt[0]))[:NEAR_MISS]:
        queries.append({"query": q, "kind": "none", "relevant": [], "absent": [tool]})
    with (HERE / "queries.jsonl").open("w", encoding="utf-8") as out:
        for q in queries:
            out.write(json.dumps(q, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = defaultdict(int)
    for q in queries:
        kinds[str(q["kind"]) + (" (near miss)" if "absent" in q else "")] += 1
    print(f"{len(descriptions)} tools, {len(queries)} queries: {dict(kinds)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
