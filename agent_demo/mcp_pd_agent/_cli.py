"""`mcp-pd demo`: run the task set through the agent loop, print each step and the token ledger."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

from ._backends import BACKENDS, PlannerBackend, create_backend, resolve_backend_name
from ._catalog import merge_catalogs
from ._connection import ServerMode, ServerSpec, ServerUnreachable, connect
from ._ledger import Ledger, TokenCounter, build_ledger, render_svg, render_table, side_label, update_markdown
from ._loop import DEFAULT_MAX_TURNS, Backend, BackendFailure, Run, Step, describe_step, run_agent
from ._prompt import HOSTS, Host
from ._tasks import CATALOG_TASKS, TASKS, Task, check_run

__all__ = ["TaskResult", "eager_definitions", "main", "run_tasks"]

ENV_MODEL = "MCP_PD_DEMO_MODEL"
MODES: tuple[ServerMode, ...] = ("progressive", "catalog")


@dataclass
class TaskResult:
    """One task's run and verdict (`failure` is None when its check held)."""

    key: str
    prompt: str
    run: Run | None
    failure: str | None
    provoked: list[str]
    host: Host = "resources"
    mode: ServerMode = "progressive"

    @property
    def passed(self) -> bool:
        return self.failure is None

    @property
    def setup(self) -> str:
        """The ledger column this run belongs to: its host, or "catalog" (see `Run.setup`)."""
        return "catalog" if self.mode == "catalog" else self.host

    def as_json(self) -> dict[str, Any]:
        run = self.run
        steps = []
        for step in run.steps if run else []:
            steps.append(
                {
                    "kind": step.kind,
                    "name": step.name,
                    "arguments": step.arguments,
                    "ok": step.ok,
                    "error_code": step.error_code,
                }
            )
        return {
            "task": self.key,
            "host": self.host,
            "mode": self.mode,
            "prompt": self.prompt,
            "passed": self.passed,
            "failure": self.failure,
            "errors_provoked": self.provoked,
            "answer": run.answer if run else None,
            "steps": steps,
        }


BackendFactory = Callable[[Task | None], Backend]


async def run_tasks(
    spec: ServerSpec,
    tasks: Sequence[Task],
    backend_for: BackendFactory,
    *,
    host: Host = "resources",
    mode: ServerMode = "progressive",
    max_turns: int = DEFAULT_MAX_TURNS,
    out: TextIO | None = None,
) -> list[TaskResult]:
    """Each task in a fresh session (and, for a command, a fresh server): run, check, print.

    `mode` is what the server is expected to be, for the log; each run records what the server said it is.
    """
    results: list[TaskResult] = []
    model_answered = False  # until the back-end answers once, its failure ends the demo (see BackendFailure)
    where = side_label("catalog" if mode == "catalog" else host)
    for number, task in enumerate(tasks, 1):
        if out is not None:
            print(f"\n[{number}/{len(tasks)}, {where}] {task.key}: {task.prompt}", file=out, flush=True)

        def show(step: Step) -> None:
            if out is not None:
                print("    " + describe_step(step), file=out, flush=True)

        run: Run | None = None
        try:
            async with connect(spec) as server:
                run = await run_agent(
                    server, backend_for(task), task.prompt, host=host, max_turns=max_turns, observer=show
                )
            failure = check_run(task, run)
        except Exception as exc:  # a server failure (or a model API failure mid-run) ends this task, not the demo
            cause = _leaf(exc)
            if isinstance(cause, ServerUnreachable) and not any(r.run is not None for r in results):
                # Not one session opened yet: a wrong URL or command, a server not running. Every task would fail so.
                raise RuntimeError(f"{cause}; no task was run") from None
            if isinstance(cause, BackendFailure) and not (cause.answered or model_answered):
                # It never answered once: a missing key, a wrong endpoint or model. Every task would fail the same way.
                why = str(cause).rstrip(".")
                raise RuntimeError(
                    f"the back-end ({cause.label}) failed on its first request, so no task was run: {why}. "
                    "Check the API key, --base-url and --model."
                ) from None
            failure = f"{type(cause).__name__}: {cause}"
        model_answered = model_answered or run is not None
        provoked = [code for code in (run.error_codes() if run else []) if code != "TOOL_ERROR"]
        ran_as = (run.host, run.mode) if run is not None else (host, mode)
        result = TaskResult(task.key, task.prompt, run, failure, provoked, *ran_as)
        results.append(result)
        if out is not None:
            verdict = "PASS" if result.passed else f"FAIL: {failure}"
            if task.expect_errors:
                seen = any(code in provoked for code in task.expect_errors)
                how = "seen and recovered from" if seen else "not provoked"
                verdict += f"  (error path {', '.join(task.expect_errors)}: {how})"
            print(f"    {verdict}", file=out, flush=True)
    return results


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def eager_definitions(spec: ServerSpec) -> dict[str, dict[str, Any]]:
    """Every full definition, read in a session of its own (reading them authorizes them there)."""
    async with connect(spec) as server:
        return await server.fetch_all_definitions()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcp-pd demo",
        description="Reference agent for MCP progressive disclosure (spec v2.1): runs scripted tasks through one "
        "agent loop and prints a token ledger (eager loading vs progressive disclosure).",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--stdio", metavar="CMD", help="server command to run over stdio (default: the reference server)"
    )
    where.add_argument("--url", help="Streamable HTTP endpoint of a running server, e.g. http://127.0.0.1:8000/mcp")
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        help="planner (offline, default), anthropic, or openai (any OpenAI-compatible endpoint); "
        "env MCP_PD_DEMO_BACKEND",
    )
    p.add_argument(
        "--host",
        choices=(*HOSTS, "both"),
        help="what the model may do against a progressive server: resources (default: read the tool_descriptions "
        "resource through a reader function, or call the server's describe tool), tools-only (call the server's "
        "tools, nothing else: it fetches with the describe tool), or both (every task in each host; the ledger "
        "shows them side by side). A catalog-mode server is always run as a tools-only host",
    )
    p.add_argument(
        "--mode",
        choices=(*MODES, "both"),
        default="progressive",
        help="the mode of the server the demo starts: progressive (default: spec v2.1, the minimal tools/list), "
        "catalog (mcp-pd serve --mode catalog: search_tools, browse_tools, describe_tools, call_tool), or both "
        "(every task against each; the ledger shows catalog mode next to the hosts)",
    )
    p.add_argument("--model", help=f"model name for anthropic/openai (env {ENV_MODEL})")
    p.add_argument("--base-url", help="API base URL, e.g. a local OpenAI-compatible server (env OPENAI_BASE_URL)")
    p.add_argument("--task", action="append", metavar="N|KEY", help="run only this task (repeatable); default: all")
    p.add_argument(
        "--prompt",
        help="run this ad-hoc task instead of the task set (no check of its result: FAIL only when no answer comes or "
        "the offline planner gives up)",
    )
    p.add_argument("--list-tasks", action="store_true", help="list the tasks and exit")
    p.add_argument("--max-turns", type=int, default=DEFAULT_MAX_TURNS, help="model turns per task")
    p.add_argument("--no-ledger", action="store_true", help="skip the token ledger")
    p.add_argument(
        "--ledger-catalog",
        type=Path,
        metavar="DIR",
        help="also build the ledger for a folder of catalogs (e.g. ../shared/catalogs), merged and served in "
        "simulation mode",
    )
    p.add_argument("--svg", type=Path, metavar="PATH", help="write the ledger chart as SVG")
    p.add_argument("--json", type=Path, metavar="PATH", help="write runs and ledgers as JSON")
    p.add_argument(
        "--markdown",
        type=Path,
        action="append",
        metavar="PATH",
        help="rewrite the generated ledger blocks of this markdown file (repeatable), e.g. README.md",
    )
    p.add_argument("--quiet", action="store_true", help="print only verdicts and ledgers")
    return p


def _ad_hoc(prompt: str, made: Sequence[Backend]) -> Task:
    """The --prompt task. It has no check of its own, but a run that ends without an answer, or in which the planner
    gave up (no tool fits, a value it could not work out), did not do it: that is a FAIL, not a PASS."""

    def check(run: Run) -> str | None:
        if run.stopped != "answer" or not (run.answer or "").strip():
            return "no answer within the turns allowed (--max-turns)"
        planner = made[-1] if made else None
        if isinstance(planner, PlannerBackend) and planner.gave_up is not None:
            return f"the offline planner gave up: {planner.gave_up}"
        return None

    return Task("prompt", prompt, check, ())


def _runs(results: Sequence[TaskResult]) -> list[tuple[str, Run]]:
    return [(r.key, r.run) for r in results if r.run is not None]


def _passed(results: Sequence[TaskResult]) -> dict[str, int]:
    """Tasks whose check held, per ledger column (host, or catalog mode)."""
    passed: dict[str, int] = {}
    for result in results:
        passed[result.setup] = passed.get(result.setup, 0) + result.passed
    return passed


def _select(tasks: Sequence[Task], wanted: Sequence[str] | None) -> list[Task]:
    if not wanted:
        return list(tasks)
    chosen: list[Task] = []
    for item in wanted:
        if item.isdigit() and 1 <= int(item) <= len(tasks):
            chosen.append(tasks[int(item) - 1])
            continue
        match = [t for t in tasks if t.key == item]
        if not match:
            raise SystemExit(f"mcp-pd demo: no task {item!r} (see --list-tasks)")
        chosen += match
    return chosen


class _Quiet:
    """Drops step lines (indented, not a verdict), passes everything else through."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if not line.startswith("    ") or "PASS" in line or "FAIL" in line:
                self.out.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def _check_markdown(args: argparse.Namespace) -> None:
    """Fail before minutes of tasks, not after, when --markdown would publish a partial or foreign ledger."""
    paths: Sequence[Path] = args.markdown or ()
    partial = args.no_ledger or args.ledger_catalog is None or args.task or args.prompt or args.stdio or args.url
    if paths and (partial or args.host != "both" or args.mode != "both"):
        raise SystemExit(
            "mcp-pd demo: --markdown publishes the documented ledger: run the whole task set in both hosts and both "
            "modes against the reference server with its ledger and --ledger-catalog (--host both --mode both; no "
            "--task, --prompt, --stdio, --url or --no-ledger)"
        )
    for path in paths:
        try:
            update_markdown(path.read_text(encoding="utf-8"), [])
        except (OSError, ValueError) as exc:
            raise SystemExit(f"mcp-pd demo: --markdown {path}: {exc}") from None


def _setups(args: argparse.Namespace) -> list[tuple[Host, ServerMode]]:
    """(host, server mode) per ledger column, in order: the progressive hosts, then catalog mode."""
    modes: list[ServerMode] = list(MODES) if args.mode == "both" else [args.mode]
    if (args.stdio or args.url) and args.mode != "progressive":
        raise SystemExit(
            "mcp-pd demo: --mode chooses the mode of the server the demo starts; a --stdio or --url server has its "
            "own (the agent reads it from the server's capabilities)"
        )
    if modes == ["catalog"] and args.host not in (None, "tools-only"):
        raise SystemExit("mcp-pd demo: a catalog-mode server is run as a tools-only host: leave out --host")
    hosts: list[Host] = list(HOSTS) if args.host == "both" else [args.host or "resources"]
    setups: list[tuple[Host, ServerMode]] = [(host, "progressive") for host in hosts] if "progressive" in modes else []
    if "catalog" in modes:
        setups.append(("tools-only", "catalog"))
    return setups


async def _demo(args: argparse.Namespace, out: TextIO) -> int:
    _check_markdown(args)
    setups = _setups(args)
    name = resolve_backend_name(args.backend)
    model = args.model or os.environ.get(ENV_MODEL)
    shared: Backend | None = None
    if name != "planner":
        shared = create_backend(name, model=model, base_url=args.base_url)

    made: list[Backend] = []

    def backend_for(task: Task | None) -> Backend:
        if shared is not None:
            return shared
        made.append(create_backend("planner", missteps=task.missteps if task else ()))
        return made[-1]

    spec = ServerSpec.reference()
    if args.stdio:
        spec = ServerSpec.stdio(args.stdio)
    elif args.url:
        spec = ServerSpec.http(args.url)
    specs = {"progressive": spec, "catalog": ServerSpec.reference(mode="catalog")}
    tasks = [_ad_hoc(args.prompt, made)] if args.prompt else _select(TASKS, args.task)
    log: Any = _Quiet(out) if args.quiet else out
    label = shared.label if shared is not None else create_backend("planner").label
    hosts = [host for host, mode in setups if mode == "progressive"]
    modes = list(dict.fromkeys(mode for _, mode in setups))
    sides = ", ".join(side_label("catalog" if mode == "catalog" else host) for host, mode in setups)
    print(f"mcp-pd demo: {len(tasks)} task(s) against the {spec.label} ({sides}); back-end: {label}", file=out)
    ledgers: list[Ledger] = []
    report: dict[str, Any] = {
        "backend": label,
        "server": spec.label,
        "hosts": hosts,
        "modes": modes,
        "runs": [],
        "ledgers": [],
    }
    results: list[TaskResult] = []
    try:
        for host, mode in setups:
            results += await run_tasks(
                specs[mode], tasks, backend_for, host=host, mode=mode, max_turns=args.max_turns, out=log
            )
        report["runs"] = [r.as_json() for r in results]
        counter = TokenCounter()
        if not args.no_ledger:
            definitions = await eager_definitions(spec)
            ledgers.append(build_ledger(spec.label, definitions, _runs(results), counter, passed=_passed(results)))
        if args.ledger_catalog is not None:
            with tempfile.TemporaryDirectory(prefix="mcp-pd-catalog-") as tmp:
                merged = merge_catalogs(args.ledger_catalog, Path(tmp))
                title = f"simulated catalog {args.ledger_catalog}"
                catalog_specs = {mode: ServerSpec.simulation(tmp, title, mode=mode) for mode in MODES}
                print(
                    f"\nmcp-pd demo: {len(CATALOG_TASKS)} task(s) against {merged.tools} tools from "
                    f"{len(merged.per_catalog)} catalogs in {args.ledger_catalog}, served in simulation mode"
                    + (f"; renamed {', '.join(merged.renamed)}" if merged.renamed else ""),
                    file=out,
                )
                catalog_results: list[TaskResult] = []
                for host, mode in setups:
                    catalog_results += await run_tasks(
                        catalog_specs[mode],
                        CATALOG_TASKS,
                        backend_for,
                        host=host,
                        mode=mode,
                        max_turns=args.max_turns,
                        out=log,
                    )
                report["catalog_runs"] = [r.as_json() for r in catalog_results]
                results += catalog_results
                definitions = await eager_definitions(catalog_specs["progressive"])
                title = f"combined catalog ({len(merged.per_catalog)} servers, simulated)"
                ledgers.append(
                    build_ledger(title, definitions, _runs(catalog_results), counter, passed=_passed(catalog_results))
                )
    finally:
        if shared is not None:
            await shared.aclose()
    for ledger in ledgers:
        print("\n" + render_table(ledger), file=out)
    passed = sum(r.passed for r in results)
    print(f"\n{passed} of {len(results)} task(s) passed.", file=out)
    report["ledgers"] = [ledger.as_json() for ledger in ledgers]
    if args.svg is not None and ledgers:
        args.svg.write_text(render_svg(ledgers), encoding="utf-8")
        print(f"chart: {args.svg}", file=out)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"json: {args.json}", file=out)
    for path in args.markdown or ():
        if passed != len(results):
            print(f"markdown: {path} left as it was (not every task passed)", file=out)
            continue
        path.write_text(update_markdown(path.read_text(encoding="utf-8"), ledgers), encoding="utf-8")
        print(f"markdown: {path}", file=out)
    return 0 if passed == len(results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mcp-pd demo` (and `python -m mcp_pd_agent`)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    out = sys.stdout
    if args.list_tasks:
        for number, task in enumerate(TASKS, 1):
            extra = f"  [{task.note}]" if task.note else ""
            print(f"{number:>2}. {task.key:<14} {task.prompt}{extra}", file=out)
        return 0
    try:
        return anyio.run(_demo, args, out)
    except (ValueError, ImportError, RuntimeError, ServerUnreachable) as exc:
        print(f"mcp-pd demo: {exc}", file=sys.stderr)
        return 2
