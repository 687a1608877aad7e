"""`python -m benchmarks [--quick] [--only NAME,...]`: run every benchmark, then write the README tables.

Each benchmark runs in its own process, one after another (never two at once: they measure time).
Results go to benchmarks/results/*.json (with --quick: benchmarks/results/quick/, and the README is left alone).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from ._common import REPO, child_env, loadavg, machine, output_dir

BENCHMARKS = (
    "context",
    "catalog",
    "overhead",
    "scale",
    "browse",
    "fastmcp",
    "memory",
    "hardening",
    "reload",
    "load",
    "search",
    "profile",
    "redis",
    "cli",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="reduced sizes and counts (about 3 minutes on 2 cores)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--out", type=Path, default=None, help="results directory")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite benchmarks/README.md")
    args = parser.parse_args(argv)
    chosen = [b.strip() for b in args.only.split(",") if b.strip()] or list(BENCHMARKS)
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    out = output_dir(args.out, args.quick)
    flags = (["--quick"] if args.quick else []) + (["--out", str(out)] if args.out is not None else [])
    started = time.time()
    load_before = loadavg()
    runs: dict[str, dict[str, object]] = {}
    failed = []
    for name in chosen:
        print(f"== {name} (load average {loadavg()})", flush=True)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *flags], cwd=REPO, env=child_env())
        seconds = round(time.perf_counter() - t0, 1)
        runs[name] = {"seconds": seconds, "exit_code": done.returncode}
        print(f"== {name}: {seconds} s{'' if done.returncode == 0 else f', FAILED with exit code {done.returncode}'}")
        if done.returncode != 0:
            failed.append(name)
    total = round(time.time() - started, 1)
    summary = {
        "quick": args.quick,
        "benchmarks": runs,
        "started_unix": round(started, 1),
        "total_seconds": total,
        "load_average_before": load_before,
        "load_average_after": loadavg(),
        "machine": machine(),
        "command": "python -m benchmarks" + (" --quick" if args.quick else ""),
    }
    if set(chosen) == set(BENCHMARKS):
        (out / "run.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"== all done in {total} s ({total / 60:.1f} min); load average now {loadavg()}")
    from . import report

    report.main(["--results", str(out), *([] if args.quick or args.no_report else ["--write"])])
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
