"""What may stand at the `--config` path (issue 31.11): only a regular file of at most 1 MiB is read, off the event
loop, without blocking. A FIFO, device or directory there, or a huge file, is refused with why: at start-up as exit
2; on a reload with one line, the last good config still serving and every client still answered.
A real `mcp-pd proxy` (stdio and HTTP), the plain SDK upstream as a subprocess, the real client."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway.gwtest import PLAIN, describe, eventually, gateway_params, stdio, write_config
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_pd.gateway import ConfigError, load_config
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = pytest.mark.anyio
CAP = "over the 1 MiB (1048576 bytes) limit of a config file"


def _oversized(path: Path, servers: dict[str, Any]) -> Path:
    # Valid JSON with a real upstream: only its size is wrong.
    path.write_text(json.dumps({"mcpServers": servers, "padding": "x" * (1 << 20)}))
    return path


@pytest.mark.req("PDX-CONFIG-01")
def test_only_a_regular_file_of_at_most_1_mib_is_read(tmp_path: Path) -> None:
    cases = {
        tmp_path: "is a directory",
        Path("/dev/null"): "is a character device",
        _oversized(tmp_path / "big.json", {"plain": {"command": "x"}}): CAP,
    }
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    cases[deep] = "nested too deeply"
    for path, message in cases.items():
        with pytest.raises(ConfigError) as refused:
            load_config(path)
        assert str(refused.value).startswith(f"{path}: "), refused.value  # which file, then why
        assert message in str(refused.value), refused.value
        if message.startswith("is a"):
            assert str(refused.value).endswith("the gateway reads its config only from a regular file")
    at_cap = tmp_path / "at-cap.json"
    body = json.dumps({"mcpServers": {"plain": {"command": "x"}}})
    at_cap.write_text(body + " " * ((1 << 20) - len(body)))
    assert [c.name for c in load_config(at_cap)] == ["plain"]  # exactly 1 MiB is fine


@pytest.mark.req("PDX-CONFIG-01")
def test_a_fifo_at_start_up_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "servers.json"
    os.mkfifo(fifo)
    params = gateway_params("--config", str(fifo))
    done = subprocess.run(
        [params.command, *params.args], env=params.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )
    assert done.returncode == 2, done
    assert f"{fifo}: is a FIFO; the gateway reads its config only from a regular file" in done.stderr.decode()


@pytest.mark.req("PDX-CONFIG-01")
def test_an_oversized_config_at_start_up_is_refused_with_the_cap(tmp_path: Path, mark: str) -> None:
    config = _oversized(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    params = gateway_params("--config", str(config))
    done = subprocess.run(
        [params.command, *params.args], env=params.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )
    assert done.returncode == 2, done
    assert CAP in done.stderr.decode()


@contextlib.asynccontextmanager
async def _gateway(transport: str, config: Path, log: Path, mode: str = "legacy") -> AsyncIterator[Client]:
    params = gateway_params("--config", str(config))
    if transport == "stdio":
        with log.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=mode, cache=None) as client:  # type: ignore[arg-type]
                yield client
        return
    port = free_port()
    argv = [params.command, *params.args, "--transport", "http", "--port", str(port)]
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=params.env)
        try:
            _wait_for_port(port, proc)
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode, cache=None) as client:
                yield client
        finally:
            stop_process(proc, close_stderr=False)


async def _answers(client: Client, text: str) -> None:
    with anyio.fail_after(5):  # a frozen gateway would never answer
        result = await client.call_tool("echo", {"text": text})
    assert not result.is_error and result.content[0].text == text, result  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.req("PDX-CONFIG-01")
async def test_a_fifo_swapped_in_while_serving_is_refused_and_the_gateway_keeps_answering(
    tmp_path: Path, mark: str, transport: str
) -> None:
    servers = {"plain": stdio(sys.executable, str(PLAIN), mark=mark)}
    config = write_config(tmp_path / "servers.json", servers)
    log = tmp_path / "gateway.log"
    said: Callable[[], str] = lambda: log.read_text(errors="replace")  # noqa: E731

    async def line(text: str) -> Any:
        async def seen() -> bool:
            return text in said()

        return await eventually(seen, repr(text))

    async with _gateway(transport, config, log) as client:
        await describe(client, "echo")
        await _answers(client, "before")

        # An editor-style swap: a FIFO renamed over the config. Nobody will ever write into it.
        fifo = tmp_path / "swap.fifo"
        os.mkfifo(fifo)
        os.replace(fifo, config)
        await line(f"{config}: is a FIFO; the gateway reads its config only from a regular file")
        assert "not reloaded, still serving its last good version" in said()
        await _answers(client, "while a FIFO sits there")
        assert said().count("is a FIFO") == 1  # one line, no traceback
        assert "Traceback" not in said()

        # A huge file: refused with the cap named.
        config.unlink()
        _oversized(tmp_path / "swap.json", {"other": stdio(sys.executable, str(PLAIN), mark=mark)}).replace(config)
        await line(CAP)
        await _answers(client, "while a huge file sits there")

        # The watcher survived both: a good edit is applied.
        squat = Path(__file__).parent / "squat_server.py"
        write_config(config, {**servers, "second": stdio(sys.executable, str(squat), "second", "hello", mark=mark)})
        await line("reloaded: added second")
        await _answers(client, "after")
