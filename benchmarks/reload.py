"""4. Hot reload: time from a definition file write to the new definition being served.

A copy of the GitHub catalog (117 tools) is served by `mcp_pd.reference.serve_simulation(dir)` with watching on,
through an in-process client. Each edit appends a unique marker to one tool's description, either in place
(open, truncate, write) or atomically (write a hidden temporary file, then `os.replace`), alternating; the client
then reads `?tools=NAME` every few milliseconds until the marker is served. Time runs from just before the
write starts. Baseline, measured on the same edits in the same run: a bare `watchfiles.awatch` on the directory
with the store's own debounce and step (the floor any watcher-based reload has). Also recorded: when the
client received `notifications/tools/list_changed`.

    python -m benchmarks.reload [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp_pd.reference import serve_simulation

from ._common import (
    Recorder,
    benchmark_main,
    catalogs_dir,
    percentile,
    quiet_logging,
    summarize,
    temporary_directory,
)

POLL_S = 0.005
TIMEOUT_S = 5.0
SETTLE_S = 0.12
# The store's watch() defaults (server/mcp_pd/_store.py); the raw-watcher baseline uses the same.
DEBOUNCE_MS = 50
STEP_MS = 20


async def measure(directory: Path, edits: int) -> dict[str, Any]:
    server, pd = serve_simulation(directory, fetch_rate=None, watch=True)
    names = sorted(p.stem for p in directory.glob("*.json"))[:10]
    originals = {name: json.loads((directory / f"{name}.json").read_text()) for name in names}
    raw_seen: dict[str, float] = {}
    notified: list[float] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ServerNotification) and message.method == "notifications/tools/list_changed":
            notified.append(time.perf_counter())

    async def raw_watcher(stop: anyio.Event) -> None:
        from watchfiles import awatch

        async for changes in awatch(directory, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop, recursive=False):
            now = time.perf_counter()
            for _, path in changes:
                raw_seen.setdefault(Path(path).name, now)

    rows: list[dict[str, Any]] = []
    async with (
        Client(server, mode="legacy", cache=None, message_handler=on_message) as client,
        anyio.create_task_group() as tg,
    ):
        stop = anyio.Event()
        tg.start_soon(raw_watcher, stop)
        await client.list_tools()
        pd.start_watching()
        await anyio.sleep(0.5)  # both watchers armed
        for i in range(edits):
            name = names[i % len(names)]
            mode = "in_place" if i % 2 == 0 else "atomic"
            marker = f"[edit {i} {time.time_ns()}]"
            definition = dict(originals[name])
            definition["description"] = f"{originals[name]['description']} {marker}"
            text = json.dumps(definition, ensure_ascii=False)
            path = directory / f"{name}.json"
            raw_seen.clear()
            notified.clear()
            start = time.perf_counter()
            if mode == "in_place":
                with path.open("w", encoding="utf-8") as handle:
                    handle.write(text)
            else:
                temporary = directory / f".{name}.json.tmp"
                temporary.write_text(text, encoding="utf-8")
                os.replace(temporary, path)
            served = None
            while time.perf_counter() - start < TIMEOUT_S:
                result = await client.read_resource(f"resource:///tool_descriptions?tools={name}")
                content = result.contents[0]
                if isinstance(content, types.TextResourceContents) and marker in content.text:
                    served = time.perf_counter() - start
                    break
                await anyio.sleep(POLL_S)
            await anyio.sleep(SETTLE_S)  # let both watchers drain this edit's events
            raw = raw_seen.get(path.name)
            rows.append(
                {
                    "mode": mode,
                    "tool": name,
                    "served_s": served,
                    "raw_watch_s": None if raw is None else raw - start,
                    "notified_s": notified[0] - start if notified else None,
                }
            )
        stop.set()
        await pd.aclose()
    return _summarize(rows)


def _summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {"edits": len(rows)}
    for mode in ("in_place", "atomic", "all"):
        chosen = [r for r in rows if mode in ("all", r["mode"])]
        served = [r["served_s"] for r in chosen if r["served_s"] is not None]
        raw = [r["raw_watch_s"] for r in chosen if r["raw_watch_s"] is not None]
        notified = [r["notified_s"] for r in chosen if r["notified_s"] is not None]
        entry: dict[str, Any] = {
            "edits": len(chosen),
            "not_served_within_5s": sum(1 for r in chosen if r["served_s"] is None),
            "served": summarize(served, "ms"),
            "raw_watcher_baseline": summarize(raw, "ms"),
            "list_changed_notification": summarize(notified, "ms"),
        }
        if served and raw:
            entry["ratio_p50_vs_raw_watcher"] = round(percentile(served, 50) / percentile(raw, 50), 4)
            entry["ratio_p95_vs_raw_watcher"] = round(percentile(served, 95) / percentile(raw, 95), 4)
        result[mode] = entry
    return result


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("reload", "Hot reload: file write to new definition served", quick, out)
    recorder.method = [
        "serve_simulation(copy of github-mcp-server, watch=True) through an in-process mcp.Client(mode='legacy').",
        "Edits alternate in place (truncate + write) and atomic (hidden temp file + os.replace); each appends a "
        "unique marker to one of 10 tools' descriptions.",
        f"Served = the first read of ?tools=NAME containing the marker; reads every {POLL_S * 1000:g} ms; time from "
        f"just before the write; {SETTLE_S * 1000:g} ms pause after each edit.",
        f"Baseline = a bare watchfiles.awatch on the same directory with the store's debounce ({DEBOUNCE_MS} ms) "
        f"and step ({STEP_MS} ms), running at the same time: when it reported the file.",
    ]
    edits = 40 if quick else 200
    with temporary_directory("mcp-pd-reload-") as scratch:
        directory = scratch / "github-mcp-server"
        shutil.copytree(catalogs_dir() / "github-mcp-server", directory)
        figures = await measure(directory, edits)
    recorder.figures = figures
    for mode in ("in_place", "atomic"):
        entry = figures[mode]
        print(
            f"  {mode:<8} {entry['edits']} edits: served p50 {entry['served'].get('p50_ms', float('nan')):.0f} ms, "
            f"p95 {entry['served'].get('p95_ms', float('nan')):.0f} ms; raw watcher p50 "
            f"{entry['raw_watcher_baseline'].get('p50_ms', float('nan')):.0f} ms "
            f"(ratio {entry.get('ratio_p50_vs_raw_watcher', float('nan')):.2f}); list_changed p50 "
            f"{entry['list_changed_notification'].get('p50_ms', float('nan')):.0f} ms; "
            f"not served: {entry['not_served_within_5s']}"
        )
    for mode in ("in_place", "atomic"):
        entry = figures[mode]
        p95 = entry["served"].get("p95_ms")
        recorder.goal(
            f"4.reload.{mode}",
            f"hot reload ({mode.replace('_', ' ')}), write to served, p95 over {entry['edits']} edits",
            "< 1000 ms",
            p95,
            "ms",
            p95 is not None and p95 < 1000 and entry["not_served_within_5s"] == 0,
            f"p50 {entry['served'].get('p50_ms', float('nan')):.0f} ms; raw watcher p50 "
            f"{entry['raw_watcher_baseline'].get('p50_ms', float('nan')):.0f} ms; "
            f"{entry['not_served_within_5s']} not served within 5 s",
        )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "reload: file write to new definition served", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
