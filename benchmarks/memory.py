"""What semantic search costs a catalog server: memory and background CPU, beside the same server lexical.

Per size (the 321 distinct real tools; 10,000 cycled from them, copy k of a tool named `<name>_<k>`), two server
processes one after the other: `mcp-pd serve --simulate --mode catalog --no-watch --no-cache --transport http`, with
the bundled model (the default) and with `--lexical`. A real client searches once a second until the answer's `_meta`
says the hybrid ranking answered (the semantic server's vectors are all built), then once more; meanwhile the
server's CPU time is sampled every 0.25 s. Figures: resident memory then (VmRSS) and at its peak (VmHWM), the CPU
seconds spent, and the most cores the process used over any 2 s window (the background embedding's share of the
machine). No vector cache: every run embeds from scratch, as a first start does.

    python -m benchmarks.memory [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_pd import EXTENSION_ID

from ._common import (
    Recorder,
    benchmark_main,
    catalogs_dir,
    child_env,
    free_port,
    process_cpu_seconds,
    quiet_logging,
    synthetic_catalog,
    temporary_directory,
    wait_listening,
    write_catalog,
)

WINDOW_S = 2.0
SAMPLE_S = 0.25


def _status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class CpuSampler:
    """A thread that samples a process's CPU time; the busiest `WINDOW_S` window, in cores."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), process_cpu_seconds(self.pid)))
            except (OSError, ValueError):
                return
            self._stop.wait(SAMPLE_S)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        busiest, first = 0.0, 0
        for last in range(len(self.samples)):
            while self.samples[last][0] - self.samples[first][0] > WINDOW_S:
                first += 1
            span = self.samples[last][0] - self.samples[first][0]
            if span >= WINDOW_S * 0.75:
                busiest = max(busiest, (self.samples[last][1] - self.samples[first][1]) / span)
        return round(busiest, 2)


async def _until_hybrid(url: str, lexical: bool, deadline_s: float) -> tuple[float, int]:
    started, searches = time.monotonic(), 0
    async with httpx2.AsyncClient(timeout=60) as http:
        while time.monotonic() - started < deadline_s:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
                result = await client.call_tool("search_tools", {"query": "read a file from disk"})
                searches += 1
                meta = (result.meta or {}).get(EXTENSION_ID, {})
                if lexical or (isinstance(meta, dict) and meta.get("ranking") == "hybrid"):
                    await client.call_tool("search_tools", {"query": "take a screenshot of the page"})
                    return time.monotonic() - started, searches
            time.sleep(1.0)
    raise RuntimeError(f"no hybrid answer within {deadline_s} s")


async def measure(directory: Path, lexical: bool, deadline_s: float) -> dict[str, Any]:
    port = free_port()
    command = [sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--descriptions", str(directory)]
    command += ["--mode", "catalog", "--no-watch", "--no-cache", "--transport", "http", "--port", str(port)]
    command += ["--lexical"] if lexical else []
    process = subprocess.Popen(command, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = CpuSampler(process.pid)
    try:
        wait_listening(port, process, 120)
        seconds, searches = await _until_hybrid(f"http://127.0.0.1:{port}/mcp", lexical, deadline_s)
        figures = {
            "ready_s": round(seconds, 1),
            "searches": searches,
            "rss_mb": _status_mb(process.pid, "VmRSS"),
            "peak_rss_mb": _status_mb(process.pid, "VmHWM"),
            "cpu_s": round(process_cpu_seconds(process.pid), 1),
        }
    finally:
        figures_busiest = sampler.stop()
        process.terminate()
        process.wait(timeout=30)
    figures["busiest_cores"] = figures_busiest
    return figures


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("memory", "semantic search's memory and background CPU against lexical", quick, out)
    recorder.method = [line.strip() for line in (__doc__ or "").splitlines()[2:9]]
    sizes = [321] if quick else [321, 10000]
    rows: dict[str, Any] = {}
    for size in sizes:
        with temporary_directory("pd-memory-") as scratch:
            directory = scratch / "defs"
            if size == 321:
                directory = catalogs_dir()
            else:
                write_catalog(directory, synthetic_catalog(size))
            row = {
                "lexical": await measure(directory, lexical=True, deadline_s=600),
                "semantic": await measure(directory, lexical=False, deadline_s=3600),
            }
        row["rss_ratio"] = round(row["semantic"]["rss_mb"] / row["lexical"]["rss_mb"], 2)
        row["peak_ratio"] = round(row["semantic"]["peak_rss_mb"] / row["lexical"]["peak_rss_mb"], 2)
        rows[str(size)] = row
        print(
            f"  {size:>6} tools: semantic {row['semantic']['rss_mb']} MB (peak {row['semantic']['peak_rss_mb']}), "
            f"lexical {row['lexical']['rss_mb']} MB: {row['rss_ratio']}x; background CPU "
            f"{row['semantic']['cpu_s']} s, busiest {row['semantic']['busiest_cores']} cores"
        )
        recorder.goal(
            f"memory-{size}",
            f"semantic / lexical catalog server RSS at {size} tools",
            "<= 2x",
            row["rss_ratio"],
            "x",
            row["rss_ratio"] <= 2,
        )
        recorder.goal(
            f"cores-{size}",
            f"most cores the semantic server used over {WINDOW_S:g} s while embedding {size} tools",
            "<= 1",
            row["semantic"]["busiest_cores"],
            "cores",
            row["semantic"]["busiest_cores"] <= 1.05,
        )
    recorder.figures = {"sizes": rows}
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "semantic search's memory and background CPU", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
