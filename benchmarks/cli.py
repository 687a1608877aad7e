"""How long a command takes to start: `mcp-pd --help`, `mcp-pd serve --help` and `mcp-pd check --help` (issue 32:
1.5-2 s on a quiet machine, 5 s at load 6, almost all of it importing the `mcp` SDK these never use).

Each command runs N times as a fresh process with this interpreter (`python -m mcp_pd ...` would add the package's
`__main__`; the console script's own entry point is used instead); the figure is the median and the worst wall time.
Baseline, in the same run: `python -c pass` (the interpreter's own start, with this environment's site hooks: an
editable install adds its import redirector), and `python -c "import mcp"` (what the SDK alone costs).

    python -m benchmarks.cli [--quick]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from ._common import Recorder, benchmark_main, child_env

GOAL_S = 0.3
_ENTRY = "import sys; from mcp_pd._cli import main; sys.argv[0] = 'mcp-pd'; raise SystemExit(main(sys.argv[1:]))"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import mcp'": ["-c", "import mcp"],
    "mcp-pd --help": ["-c", _ENTRY, "--help"],
    "mcp-pd serve --help": ["-c", _ENTRY, "serve", "--help"],
    "mcp-pd check --help": ["-c", _ENTRY, "check", "--help"],
}


def _time(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *argv], env=child_env(), stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return times


async def run(quick: bool, out: Path | None) -> Recorder:
    recorder = Recorder("cli", "Command start-up", quick, out)
    runs = 5 if quick else 20
    recorder.method.append(f"{runs} fresh processes per command, wall time, one after another")
    baseline = 0.0
    for name, argv in COMMANDS.items():
        times = _time(argv, runs)
        median, worst = statistics.median(times), max(times)
        baseline = baseline or median  # the first command is the bare interpreter
        recorder.figures[name] = {
            "median_s": round(median, 3),
            "max_s": round(worst, 3),
            "above_interpreter_s": round(median - baseline, 3),
            "runs": runs,
        }
        print(f"  {name}: median {median:.3f} s ({median - baseline:+.3f} s over python -c pass), worst {worst:.3f} s")
        if name.startswith("mcp-pd"):
            note = f"the bare interpreter took {baseline:.3f} s in this run"
            recorder.goal(f"start {name}", f"{name} median", f"< {GOAL_S} s", median, "s", median < GOAL_S, note)
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "cli: command start-up", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
