"""Big results through the gateway (issues 31 and 39): what one client's large answer costs every other client.

`mcp-pd proxy` over Streamable HTTP in front of two stdio upstreams: tests/gateway/big_server.py (`big`: a text of
N MiB, one JSON-RPC line of that size on the pipe; `blocks`, `rows`, `file`: the other shapes of a big result) and
tests/gateway/plain_server.py (`echo`). Client A, in a process of its own (its own decoding of the answer must not
slow the measuring loop), calls one of them; client B, in this process, calls `echo` every 20 ms until A has its
answer. The figure is B's worst echo (and its median) while A's answer passes, how long A waited, and the
gateway's CPU time meanwhile (which, unlike the wall-clock figures, a loaded machine does not inflate). A runs in the
handshake era (the answer is one SSE event; A raises the SDK client's 1 MiB event limit) and in the 2026-07-28 era
(one JSON body), the gateway in eager mode so that both eras call without a grant. Over the gateway's limit per
message (64 MiB), A's call fails with an error instead and the upstream's line is skipped, never buffered. The
shapes (issue 39, item 3): one text block of 60 MiB; sixty text blocks of 1 MB (each under the lane's 1 MiB
threshold for a single string); 600,000 rows as `structuredContent`; a 30 MiB text with its `structuredContent`
copy, as the reference filesystem server reads a file.

What is left on the gateway's event loop (a step profile of the gateway, 60 MiB, both eras): the line reader's
copy of the line (about 35 ms) and, in the worker thread that decodes it a slice at a time (gateway/_slices.py),
the join of the big string (about 40 ms of the GIL; `json.loads` in one go held it about 0.1 s). The SDK no longer
serializes a big result: the HTTP lane (gateway/_http_lane.py) hands it placeholders and writes the result's
content and structured content into the response a slice at a time (without it: pydantic's dump, about 0.13 s,
and sse_starlette's regular-expression split, about 0.4 s, on the loop in one step each for 60 MiB). A full
collection walking start-up's objects (0.15-0.5 s) is avoided by `gc.freeze()` after start-up. A `--no-lane`
gateway is measured beside it for comparison.

    python -m benchmarks.streams [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from ._common import REPO, Recorder, benchmark_main, child_env, free_port, percentile, quiet_logging

BIG = REPO / "tests" / "gateway" / "big_server.py"
PLAIN = REPO / "tests" / "gateway" / "plain_server.py"
GOAL_MS = 200.0  # the issues' bound: another client's echo while a big result passes

# Client A: connects, says it is ready, waits for "go", calls TOOL with ARGS (JSON), prints how long it took and
# what it got (blocks, characters of text, structured content's size as JSON, the last text's tail).
_CLIENT_A = r"""
import json, sys, time, anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

async def main():
    url, tool, arguments, mode = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    async with Client(streamable_http_client(url, max_sse_event_size=1 << 28), mode=mode, cache=None) as client:
        print("ready", flush=True)
        sys.stdin.readline()
        start = time.perf_counter()
        try:
            result = await client.call_tool(tool, arguments)
            chars = sum(len(block.text) for block in result.content)
            structured = len(json.dumps(result.structured_content)) if result.structured_content else 0
            got = f"{len(result.content)} {chars} {structured} {result.content[-1].text[-3:]}"
        except MCPError as exc:
            got = f"error {exc.error.message[:80]!r}"
        print(f"{time.perf_counter() - start:.3f} {got}", flush=True)

anyio.run(main)
"""

# The result shapes (issue 39, item 3): what each is, the tool and its arguments. The lane once took only the first.
SHAPES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "text": ("one text block of 60 MiB", "big", {"mb": 60}),
    "blocks": ("sixty text blocks of 1 MB", "blocks", {"count": 60, "kb": 1000 * 1000 / 1024}),
    "rows": ("600,000 rows as structuredContent", "rows", {"count": 600_000}),
    "file": ("a 30 MiB text and its structuredContent copy (server-filesystem)", "file", {"mb": 30}),
}


def _gateway(port: int, *, lane: bool = True) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "mcp_pd", "proxy", "--quiet-upstreams", "--transport", "http", "--port", str(port)]
    argv += [] if lane else ["--no-lane"]
    argv += ["--mode", "eager", "--upstream-stdio", f"big={sys.executable} {BIG}"]
    argv += ["--upstream-stdio", f"plain={sys.executable} {PLAIN}"]
    return subprocess.Popen(argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _wait_listening(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the gateway exited with {process.returncode}")
        try:
            async with Client(url, mode="legacy", cache=None) as client:
                await client.list_tools()
                return
        except Exception:
            await anyio.sleep(0.2)
    raise TimeoutError("the gateway did not start")


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) the process has used so far: what the gateway's work costs, whatever else
    the machine runs (the wall-clock figures above grow with the machine's load; this one does not)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _round(url: str, tool: str, arguments: dict[str, Any], mode: str, gateway: int) -> dict[str, Any]:
    """One answer of `tool(arguments)` to A while B echoes: B's latencies, what A got, the gateway's CPU time."""
    a = subprocess.Popen(
        [sys.executable, "-c", _CLIENT_A, url, tool, json.dumps(arguments), mode],
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert a.stdin is not None
        assert a.stdout is not None
        if a.stdout.readline().strip() != "ready":
            raise RuntimeError("client A did not connect")
        async with Client(url, mode="legacy", cache=None) as b:
            idle = []
            for _ in range(20):
                start = time.perf_counter()
                await b.call_tool("echo", {"text": "idle"})
                idle.append(time.perf_counter() - start)
            cpu = _cpu_seconds(gateway)
            a.stdin.write("go\n")
            a.stdin.flush()
            busy: list[float] = []
            deadline = time.monotonic() + 300
            while a.poll() is None and time.monotonic() < deadline:
                start = time.perf_counter()
                await b.call_tool("echo", {"text": "busy"})
                busy.append(time.perf_counter() - start)
                await anyio.sleep(0.02)
        cpu = _cpu_seconds(gateway) - cpu
        seconds, _, got = a.stdout.read().strip().partition(" ")
    finally:
        if a.poll() is None:
            a.kill()
        a.wait()
        for stream in (a.stdin, a.stdout):
            if stream is not None:
                stream.close()
    return {
        "era": "2025-11-25" if mode == "legacy" else "2026-07-28",
        "a_seconds": float(seconds),
        "a_got": got,
        "b_echoes": len(busy),
        "b_worst_ms": round(max(busy) * 1000, 1),
        "b_p50_ms": round(percentile(busy, 50) * 1000, 1),
        "b_idle_worst_ms": round(max(idle) * 1000, 1),
        "gateway_cpu_s": round(cpu, 2),
        "load_1min": round(os.getloadavg()[0], 1),
    }


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("streams", "Big results: another client's echo while one client's answer passes", quick, out)
    recorder.method = [line.strip() for line in (__doc__ or "").splitlines()[2:14] if line.strip()]
    # (label, tool, arguments): the text at several sizes (80 MiB is over the limit), then the other shapes.
    texts = [20.0, 60.0, 80.0] if not quick else [60.0, 80.0]
    cases = [(f"text {mb:g} MiB", "big", {"mb": mb}) for mb in texts]
    cases += [(shape, tool, arguments) for shape, (_, tool, arguments) in SHAPES.items() if shape != "text"]
    rounds: list[dict[str, Any]] = []
    for lane in (True, False):
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        gateway = _gateway(port, lane=lane)
        try:
            await _wait_listening(url, gateway)
            for label, tool, arguments in cases:
                if not lane and label in ("text 20 MiB", "text 80 MiB"):
                    continue  # without the lane: the comparison at the issues' sizes only
                for mode in ("legacy", "auto"):
                    row = {"case": label, **await _round(url, tool, arguments, mode, gateway.pid), "lane": lane}
                    rounds.append(row)
                    print(
                        f"  {label}, {row['era']}{'' if lane else ', --no-lane'}: B's echo worst "
                        f"{row['b_worst_ms']} ms, p50 {row['b_p50_ms']} ms ({row['b_echoes']} echoes; idle worst "
                        f"{row['b_idle_worst_ms']} ms); A: {row['a_seconds']} s, {row['a_got']}; "
                        f"gateway CPU {row['gateway_cpu_s']} s, load {row['load_1min']}"
                    )
        finally:
            gateway.terminate()
            gateway.wait(timeout=20)
    recorder.figures = {"rounds": rounds}
    for row in (row for row in rounds if row["lane"]):
        without = ", ".join(
            f"{r['b_worst_ms']} ms"
            for r in rounds
            if not r["lane"] and r["era"] == row["era"] and r["case"] == row["case"]
        )
        if row["case"] == "text 80 MiB":
            recorder.goal(
                f"31.7-limit-{row['era']}",
                f"another client's worst echo while an 80 MiB answer (over the limit) is skipped ({row['era']})",
                f"< {GOAL_MS:g} ms, and A gets an error",
                row["b_worst_ms"],
                "ms",
                row["b_worst_ms"] < GOAL_MS and row["a_got"].startswith("error"),
            )
        elif row["case"] != "text 20 MiB":
            shape = "text" if row["case"].startswith("text") else row["case"]
            recorder.goal(
                f"{'31.7' if shape == 'text' else '39.3-' + shape}-{row['era']}",
                f"another client's worst echo while {SHAPES[shape][0]} passes ({row['era']})",
                f"< {GOAL_MS:g} ms",
                row["b_worst_ms"],
                "ms",
                row["b_worst_ms"] < GOAL_MS and not row["a_got"].startswith("error"),
                f"idle worst {row['b_idle_worst_ms']} ms; gateway CPU {row['gateway_cpu_s']} s; load "
                f"{row['load_1min']}; with --no-lane: {without}",
            )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "streams: big results through the gateway", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
