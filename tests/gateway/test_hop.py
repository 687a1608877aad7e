"""The gateway's hop (issue 44.4): what the lane does per call was made cheaper without changing what it answers.

The pipe's small lines are parsed and written by pydantic-core (`_lines.parse` / `dump`), with `json`'s own answer
wherever the two differ; answers are taken from an upstream's stdout as they arrive, several to a read; one timer
per upstream keeps every pending request's own deadline.
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway.gwtest import PLAIN, describe, error_of, gateway_params, stdio, write_config
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_pd.gateway._lines import dump, mend, parse

VALUES: list[Any] = [
    {"jsonrpc": "2.0", "id": "mcp-pd-lane-7", "result": {"content": [{"type": "text", "text": "hello"}]}},
    {"text": 'ünïcödé ✓ "quoted" \\ back\nslash \u2028 \x00'},
    {"lone": "x\ud800y", "pair": "\U0001f600"},  # a lone surrogate: json reads and writes it, pydantic-core does not
    {"big": 10**40, "negative": -(10**30), "float": 0.1, "exp": 1e16, "zero": -0.0, "t": True, "n": None},
]


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [*VALUES, _deep(50), _deep(300)])  # past pydantic-core's depth limit
def test_the_pipe_lines_parse_and_dump_as_json_does(value: Any) -> None:
    line = json.dumps(value).encode("utf-8", "surrogatepass")
    # json's own value, but for a lone surrogate, which no transport can write: U+FFFD (test_surrogates.py).
    assert parse(line) == mend(json.loads(line), line)
    assert json.loads(dump(value)) == value  # the same value, whichever writer wrote it
    assert parse(dump(value)) == mend(copy.deepcopy(value), dump(value))  # mend works in place


def test_a_lone_surrogate_is_read_as_u_fffd_and_nothing_else_changes() -> None:
    line = json.dumps({"lone": "x\ud800y", "pair": "\U0001f600"}).encode()
    assert parse(line) == {"lone": "x\ufffdy", "pair": "\U0001f600"}


def test_the_pipe_lines_parse_nan_and_infinity_and_refuse_what_json_refuses() -> None:
    assert math.isnan(parse(b'{"a":NaN}')["a"])
    assert parse(b"[Infinity,-Infinity]") == [math.inf, -math.inf]
    assert dump({"a": math.inf}) == b'{"a":Infinity}'  # as json writes it, not null
    for bad in (b'{"a":"\xff"}', b'{"a":1}x', b"", b'{"a":'):
        try:
            json.loads(bad)
        except ValueError as exc:
            refused: type[ValueError] = type(exc)
        with pytest.raises(refused):  # json's own error (a JSONDecodeError, a UnicodeDecodeError)
            parse(bad)


@asynccontextmanager
async def _gateway(tmp_path: Path, mark: str) -> Any:
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    params = gateway_params("--config", str(config), "--call-timeout", "2")
    with (tmp_path / "gateway.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            yield client


@pytest.mark.anyio
async def test_concurrent_lane_calls_each_get_their_own_answer(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark) as client:
        await describe(client, "echo")
        answers: dict[int, str] = {}

        async def call(i: int) -> None:
            result = await client.call_tool("echo", {"text": f"call {i}"})
            assert not result.is_error
            answers[i] = result.content[0].text  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            for i in range(40):  # answers reach the gateway several to a read
                tg.start_soon(call, i)
    assert answers == {i: f"call {i}" for i in range(40)}


@pytest.mark.anyio
async def test_a_call_that_hangs_after_an_answered_one_times_out_on_its_own_deadline(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark) as client:
        await describe(client, "echo", "hang")
        assert not (await client.call_tool("echo", {"text": "first"})).is_error  # its deadline is 2 s from now
        await anyio.sleep(1.0)
        start = time.monotonic()
        hung = error_of(await client.call_tool("hang", {}))
        waited = time.monotonic() - start
        assert hung["code"] == "UPSTREAM_UNAVAILABLE"
        assert "did not answer 'hang' within 2 s" in hung["message"]
        assert waited >= 1.9  # not cut short at the earlier call's deadline
        assert not (await client.call_tool("echo", {"text": "after"})).is_error
