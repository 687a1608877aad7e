"""Shared helpers: catalogs, statistics, machine facts, result files, handler timers, subprocess servers."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import logging
import math
import os
import platform
import random
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

__all__ = [
    "MINIMAL_SCHEMA",
    "PACKAGE_DIR",
    "REPO",
    "RESULTS_DIR",
    "HandlerTimer",
    "Recorder",
    "ServerProcess",
    "Tokenizer",
    "benchmark_main",
    "bootstrap_ratio_ci",
    "catalog_names",
    "catalogs_dir",
    "child_pids",
    "combined_catalog",
    "common_arguments",
    "free_port",
    "load_catalog",
    "loadavg",
    "machine",
    "percentile",
    "process_cpu_seconds",
    "process_rss_mb",
    "quiet_logging",
    "rss_mb",
    "summarize",
    "synthetic_catalog",
    "tokenizers",
    "valid_arguments",
    "write_catalog",
]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO = PACKAGE_DIR.parent
RESULTS_DIR = PACKAGE_DIR / "results"
MINIMAL_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}

Tool: TypeAlias = dict[str, Any]


# -- command line ---------------------------------------------------------------------------------
def common_arguments(description: str) -> argparse.ArgumentParser:
    """The flags every benchmark module accepts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="reduced sizes and counts (well under 2 minutes in all)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for the result JSON (default: benchmarks/results, or benchmarks/results/quick with --quick)",
    )
    return parser


def benchmark_main(
    doc: str | None, title: str, run: Callable[[bool, Path | None], Awaitable[Recorder]], argv: list[str] | None
) -> int:
    """A benchmark module's `main`: parse the common flags, run, write its result JSON."""
    args = common_arguments(doc or "").parse_args(argv)
    print(title)
    recorder = anyio.run(run, args.quick, args.out)
    recorder.write()
    return 0


def output_dir(out: Path | None, quick: bool) -> Path:
    directory = out if out is not None else (RESULTS_DIR / "quick" if quick else RESULTS_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def quiet_logging() -> None:
    """Keep the output to the figures: MCPServer() turns the root logger up to INFO, HTTP clients chat."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("httpx", "httpx2", "mcp.client.streamable_http"):
        logging.getLogger(name).setLevel(logging.ERROR)


# -- catalogs -------------------------------------------------------------------------------------
def catalogs_dir() -> Path:
    """../shared/catalogs beside the repository (override with MCP_PD_CATALOGS)."""
    env = os.environ.get("MCP_PD_CATALOGS")
    candidates = [Path(env)] if env else [REPO.parent / "shared" / "catalogs", REPO / "shared" / "catalogs"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise SystemExit(f"benchmarks: no tool catalogs found (looked in {', '.join(map(str, candidates))})")


def catalog_names() -> list[str]:
    root = catalogs_dir()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.json")))


def load_catalog(name: str) -> list[Tool]:
    """One catalog's tool definitions, in file-name order, exactly as stored."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((catalogs_dir() / name).glob("*.json"))]


def combined_catalog() -> tuple[list[Tool], dict[str, str]]:
    """All catalogs in one list; a name already taken gets a `_2`, `_3`... suffix. Returns (tools, renames)."""
    tools: list[Tool] = []
    renames: dict[str, str] = {}
    seen: set[str] = set()
    for catalog in catalog_names():
        for tool in load_catalog(catalog):
            name = str(tool["name"])
            unique, n = name, 1
            while unique in seen:
                n += 1
                unique = f"{name}_{n}"
            if unique != name:
                renames[f"{catalog}/{name}"] = unique
                tool = {**tool, "name": unique}
            seen.add(unique)
            tools.append(tool)
    return tools, renames


def synthetic_catalog(size: int) -> list[Tool]:
    """`size` tools cycled from the combined real catalog; copy k of a tool is named `<name>_<k>`."""
    base, _ = combined_catalog()
    tools: list[Tool] = []
    for i in range(size):
        tool = base[i % len(base)]
        tools.append({**tool, "name": f"{str(tool['name'])[:100]}_{i // len(base)}"})
    return tools


def write_catalog(directory: Path, tools: Sequence[Tool]) -> None:
    """One `<name>.json` per tool, as a server's tool_descriptions/ directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        (directory / f"{tool['name']}.json").write_text(json.dumps(tool, ensure_ascii=False), encoding="utf-8")


def valid_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Smallest arguments satisfying `schema`'s required properties, or None when this simple generator can't."""
    value = _example(schema, depth=0)
    return value if isinstance(value, dict) else None


def _example(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 6:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _example(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        return {name: _example(props.get(name, {}), depth + 1) for name in schema.get("required") or []}
    if kind == "array":
        minimum = int(schema.get("minItems") or 0)
        return [_example(schema.get("items", {}), depth + 1) for _ in range(minimum)]
    if kind == "string":
        return "x" * max(1, int(schema.get("minLength") or 1))
    if kind in ("integer", "number"):
        return max(1, math.ceil(schema.get("minimum", 1)))
    if kind == "boolean":
        return True
    return None


# -- tokens ---------------------------------------------------------------------------------------
class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...


def tokenizers() -> dict[str, Tokenizer]:
    """o200k_base and cl100k_base from bpe-openai (offline; ids identical to tiktoken's)."""
    try:
        module: Any = importlib.import_module("bpe_openai")
    except ModuleNotFoundError:
        raise SystemExit("benchmarks: token counts need bpe-openai (pip install bpe-openai)") from None
    return {name: module.get_encoding(name) for name in ("o200k_base", "cl100k_base")}


def compact(value: Any) -> str:
    """Compact JSON, as on the wire (the catalog README counts the same way)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- statistics -----------------------------------------------------------------------------------
def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(seconds: Sequence[float], unit: str = "ms") -> dict[str, float]:
    """n, p50, p95, mean and min of timings given in seconds, reported in `unit` (ms or us)."""
    scale = {"ms": 1e3, "us": 1e6, "s": 1.0}[unit]
    if not seconds:
        return {"n": 0}
    return {
        "n": len(seconds),
        f"p50_{unit}": round(percentile(seconds, 50) * scale, 4),
        f"p95_{unit}": round(percentile(seconds, 95) * scale, 4),
        f"mean_{unit}": round(sum(seconds) / len(seconds) * scale, 4),
        f"min_{unit}": round(min(seconds) * scale, 4),
    }


def bootstrap_ratio_ci(
    variant: Sequence[float], baseline: Sequence[float], q: float = 50, rounds: int = 200, seed: int = 1
) -> list[float]:
    """95% interval of percentile(variant)/percentile(baseline), resampling the paired iterations."""
    n = min(len(variant), len(baseline))
    if n < 10:
        return [math.nan, math.nan]
    rng = random.Random(seed)
    ratios = []
    for _ in range(rounds):
        idx = rng.choices(range(n), k=n)
        ratios.append(percentile([variant[i] for i in idx], q) / percentile([baseline[i] for i in idx], q))
    return [round(percentile(ratios, 2.5), 4), round(percentile(ratios, 97.5), 4)]


def ratio(variant: Sequence[float], baseline: Sequence[float]) -> dict[str, Any]:
    """Variant over baseline at p50 and p95, with a bootstrap interval for the p50 ratio."""
    return {
        "p50": round(percentile(variant, 50) / percentile(baseline, 50), 4),
        "p95": round(percentile(variant, 95) / percentile(baseline, 95), 4),
        "p50_ci95": bootstrap_ratio_ci(variant, baseline),
    }


# -- machine facts --------------------------------------------------------------------------------
def loadavg() -> list[float]:
    with contextlib.suppress(OSError):
        return [round(x, 2) for x in os.getloadavg()]
    return []


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    memory = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = round(int(line.split()[1]) / 1024 / 1024, 1)
    cpu_model = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    dirty = _git("status", "--porcelain", "--", "server")
    return {
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "cpu": cpu_model,
        "memory_gib": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "mcp": _version("mcp"),
        "mcp_types": _version("mcp-types"),
        "mcp_pd": _version("mcp-progressive-disclosure"),
        "pydantic": _version("pydantic"),
        "uvicorn": _version("uvicorn"),
        "bpe_openai": _version("bpe-openai"),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "server_tree_modified": bool(dirty) if dirty is not None else None,
    }


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size in MiB (Linux /proc)."""
    return _status_kib(pid, "VmRSS:") / 1024


def peak_rss_mb(pid: int | str = "self") -> float:
    return _status_kib(pid, "VmHWM:") / 1024


def process_rss_mb(pid: int) -> float:
    return rss_mb(pid)


def _status_kib(pid: int | str, key: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key):
                return float(line.split()[1])
    except OSError:
        pass
    return math.nan


def child_pids(marker: str) -> list[int]:
    """This process's children whose command line contains `marker` (Linux /proc)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == me and marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


# -- results --------------------------------------------------------------------------------------
@dataclass
class Goal:
    """One figure measured against the issue's goal."""

    id: str
    figure: str
    target: str
    value: float | None
    unit: str
    met: bool | None
    note: str = ""


@dataclass
class Recorder:
    """Collects one benchmark's figures and writes `<out>/<name>.json`."""

    name: str
    title: str
    quick: bool
    out: Path | None
    method: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    goals: list[Goal] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    load_before: list[float] = field(default_factory=loadavg)

    def goal(
        self, id: str, figure: str, target: str, value: float | None, unit: str, met: bool | None, note: str = ""
    ) -> None:
        shown = "n/a" if value is None else f"{value:g} {unit}".strip()
        verdict = {True: "met", False: "MISSED", None: "n/a"}[met]
        print(f"  goal {id}: {figure} = {shown} (target {target}): {verdict}{' - ' + note if note else ''}")
        self.goals.append(Goal(id, figure, target, None if value is None else round(value, 4), unit, met, note))

    def write(self) -> Path:
        document = {
            "benchmark": self.name,
            "title": self.title,
            "quick": self.quick,
            "started_unix": round(self.started, 1),
            "duration_s": round(time.time() - self.started, 1),
            "machine": machine(),
            "load_average_before": self.load_before,
            "load_average_after": loadavg(),
            "method": self.method,
            "figures": self.figures,
            "goals": [vars(g) for g in self.goals],
        }
        path = output_dir(self.out, self.quick) / f"{self.name}.json"
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"  wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
        return path


# -- server-side timing ---------------------------------------------------------------------------
Handler: TypeAlias = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[Any]]


class HandlerTimer:
    """Times a low-level server's request handlers by wrapping them (install after the extension to time it too).

    Installed before the extension, it times the server's own handlers; after, the whole handler chain.
    """

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self.recording = True

    def install(
        self, server: Server[Any], methods: Sequence[str] = ("tools/list", "tools/call", "resources/read")
    ) -> HandlerTimer:
        for method in methods:
            entry = server.get_request_handler(method)
            if entry is not None:
                server.add_request_handler(method, entry.params_type, self._wrap(method, entry.handler))
        return self

    def _wrap(self, method: str, handler: Handler) -> Handler:
        clock = time.perf_counter
        samples = self.samples

        async def timed(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
            start = clock()
            try:
                return await handler(ctx, params)
            finally:
                if self.recording:
                    # Reads are told apart by resource (the descriptions resource or another one).
                    label = method if method != "resources/read" else f"{method} {str(params.uri).partition('?')[0]}"
                    samples.setdefault(label, []).append(clock() - start)

        return timed

    def clear(self) -> None:
        for samples in self.samples.values():
            samples.clear()


# -- subprocess servers ---------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Until `process` accepts connections on loopback `port` (it exiting first, or `timeout`, is an error)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not listen within {timeout} s")


def child_env() -> dict[str, str]:
    """The environment for a benchmark child process: the repository importable, quiet logging."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


class ServerProcess:
    """`python -m benchmarks._serve ...` over Streamable HTTP on loopback, for the length of a `with` block."""

    def __init__(self, args: Sequence[str], timings: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        extra = ["--timings", str(timings)] if timings is not None else []
        self.command = [
            sys.executable,
            "-m",
            "benchmarks._serve",
            *args,
            "--transport",
            "http",
            "--port",
            str(self.port),
            *extra,
        ]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def __enter__(self) -> ServerProcess:
        self.process = subprocess.Popen(self.command, cwd=REPO, env=child_env())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {' '.join(self.command)}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return self
            time.sleep(0.05)
        self.__exit__()
        raise RuntimeError("server did not start listening within 60 s")

    def __exit__(self, *exc: object) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(2)  # SIGINT: uvicorn shuts down gracefully and the server writes its timings
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def temporary_directory(prefix: str) -> Iterator[Path]:
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
