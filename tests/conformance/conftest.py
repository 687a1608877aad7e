"""Fixtures for the tests of the conformance suite itself.

Each server is checked once per test session and the reports are shared: the stdio controls a few
at a time (legacy era), the HTTP servers in both eras. Servers run as real subprocesses.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from pathlib import Path

import pytest
from mcp_pd_conformance import ERAS, Options, Report, Target, run_suite
from pdtest import CATALOGS, http_command
from pdtest_suite import run_many
from pdtest_zygote import forked_argv

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONTROLS = HERE / "pdconf_controls.py"
MEMORY_CATALOG = CATALOGS / "mcp-server-memory"
STDIO_CONTROLS = (
    "good",
    "full-schemas",
    "no-resource",
    "ignores-selection",
    "extra-tools",
    "preamble",
    "case-insensitive",
    "no-missing-selection",
    "ungated",
    "wrong-error-code",
    "jsonrpc-refusal",
    "forgetful",
    "no-unknown-entry",
    "bare-listing",
    "plain",
    # Issue 11: the subtle ones (each proves a check of its own can fail: test_suite_controls.CHECK_CONTROLS).
    "endless-cursor",
    "placeholder-descriptions",
    "docstring-listing",
    "call-example-listing",
    "hidden-detail-listing",
    "keyword-description",
    "paraphrased-missing",
    "blank-names",
    "two-names-max",
    "unknown-fails-read",
    "loose-punctuation",
    "raw-query",
    "strict-query",
    "other-params-all",
    "invalid-example",
    "lost-required",
    "split-content",
    "text-plain-content",
    "silent-rate-limit",
    "gates-first-only",
    "lenient-retry",
    "refused-read-grants",
    "variant-grants",
    "any-read-grants",
    "first-name-grants",
    "mixed-grants-nothing",
    "short-lived-grants",
    "expiring-grants",
    # Issue 22: the last blind spots; catalog mode through the core.
    "gates-read-only-only",
    "consequence-by-keyword",
    "available-fetched-only",
    "closed-listing-schema",
    "catalog-good",
    "catalog-any-read-grants",
)
# Controls whose defect only shows after a wait: the suite runs them with --grant-hold.
GRANT_HOLD = {"expiring-grants": 3.0}
HTTP_CONTROLS = ("good", "global-grants", "bare-global-grants", "forgetful", "ungated")
SESSION_CONTROLS = frozenset(
    {"good", "bare-listing", "ungated", "wrong-error-code", "jsonrpc-refusal", "forgetful", "catalog-good"}
)
# Defects of what a read authorizes: the grants scenario (its own session), no more.
GRANTS_CONTROLS = frozenset(
    {
        "gates-first-only",
        "lenient-retry",
        "refused-read-grants",
        "variant-grants",
        "any-read-grants",
        "first-name-grants",
        "mixed-grants-nothing",
        "short-lived-grants",
        "expiring-grants",
        "lost-required",
        "gates-read-only-only",
        "catalog-any-read-grants",
    }
)
# Every other control breaks the listing or the resource: one discovery session shows it, so the
# scenarios that open more sessions (a server process each over stdio) add nothing but time.
CALLING_SCENARIOS = ("authorization", "grants", "isolation", "session-end", "sessionless")


def _skips(defect: str) -> tuple[str, ...]:
    if defect in SESSION_CONTROLS:
        return ()
    if defect in GRANTS_CONTROLS:
        return ("authorization", "isolation", "session-end", "sessionless")
    return CALLING_SCENARIOS


def control_argv(defect: str, *extra: str) -> tuple[str, ...]:
    """`python pdconf_controls.py DEFECT EXTRA...`, started as a fork of this worker's zygote (pdtest_zygote: the
    controls are test doubles, started about a thousand times a run; their imports are paid once)."""
    return forked_argv(CONTROLS, defect, *extra)


def reference_argv(*extra: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "mcp_pd", "serve", "--no-watch", *extra)


@contextmanager
def http_server(argv: tuple[str, ...]) -> Iterator[str]:
    """Start `argv` + a port on 127.0.0.1 as a subprocess; yield its /mcp URL."""
    with http_command(argv) as url:
        yield url


@contextmanager
def http_servers(argvs: dict[str, tuple[str, ...]]) -> Iterator[dict[str, str]]:
    """`http_server` for several servers started at once (their start-up is mostly imports); yield name -> URL."""

    def start(argv: tuple[str, ...]) -> tuple[AbstractContextManager[str], str]:
        server = http_server(argv)
        return server, server.__enter__()

    with ExitStack() as stack:
        with ThreadPoolExecutor(max_workers=max(1, len(argvs))) as pool:
            futures = {name: pool.submit(start, argv) for name, argv in argvs.items()}
        urls, failures = {}, []
        for name, future in futures.items():
            try:
                server, urls[name] = future.result()
            except Exception as exc:  # the others started: stop them too before reporting
                failures.append(exc)
            else:
                stack.push(server.__exit__)
        if failures:
            raise failures[0]
        yield urls


def _job(options: Options) -> Callable[[], Awaitable[Report]]:
    return lambda: run_suite(options)


@pytest.fixture(scope="session")
def call_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of per-control files listing every tool that really ran."""
    return tmp_path_factory.mktemp("calls")


@pytest.fixture(scope="session")
def stdio_reports(call_logs: Path) -> dict[str, Report]:
    """Every stdio control, checked in the legacy era."""
    jobs = {
        defect: _job(
            Options(
                Target(stdio=control_argv(defect, "--call-log", str(call_logs / f"stdio-{defect}.jsonl"))),
                eras=("legacy",),
                skip=_skips(defect),
                grant_hold=GRANT_HOLD.get(defect, 0.0),
            )
        )
        for defect in STDIO_CONTROLS
    }
    return run_many(jobs, limit=4)


# Issue 32: servers the suite cannot run a tool of, or whose first read-only tool needs arguments. Checked apart from
# the controls above (that fixture already takes minutes on a busy machine), in whole runs of the legacy era, but
# for the lax control: only the grants scenario sends its probes.
VERDICT_CONTROLS = {
    "no-read-only": (),
    "never-refuses": (),
    "first-needs-arguments": (),
    "never-refuses-lax": ("authorization", "isolation", "session-end", "sessionless"),
}


@pytest.fixture(scope="session")
def verdict_reports(call_logs: Path) -> dict[str, Report]:
    """Each VERDICT_CONTROLS server over stdio; its call log is `verdict-DEFECT.jsonl` in `call_logs`."""
    jobs = {
        defect: _job(
            Options(
                Target(stdio=control_argv(defect, "--call-log", str(call_logs / f"verdict-{defect}.jsonl"))),
                eras=("legacy",),
                skip=skip,
            )
        )
        for defect, skip in VERDICT_CONTROLS.items()
    }
    return run_many(jobs, limit=4)


# Issue 33 (test_suite_round3_traffic.py): grants across refusals, capabilities, paging, gate order. Whole runs.
TRAFFIC_CONTROLS = ("traffic-refusals-wipe", "traffic-undeclared-resources", "traffic-unlisted-tool")
TRAFFIC_CONTROLS += ("traffic-validates-first",)


@pytest.fixture(scope="session")
def traffic_reports(call_logs: Path) -> dict[str, Report]:
    """Each TRAFFIC_CONTROLS server over stdio (legacy, key DEFECT) and over HTTP in both eras (key `http DEFECT`),
    one HTTP process serving them all; call logs `traffic-DEFECT.jsonl` and `traffic-http-DEFECT.jsonl`."""
    jobs = {
        defect: _job(
            Options(
                Target(stdio=control_argv(defect, "--call-log", str(call_logs / f"traffic-{defect}.jsonl"))),
                eras=("legacy",),
            )
        )
        for defect in TRAFFIC_CONTROLS
    }
    log = str(call_logs / "traffic-http-{defect}.jsonl")
    with http_server(control_argv(*TRAFFIC_CONTROLS, "--call-log", log, "--http")) as url:
        for defect in TRAFFIC_CONTROLS:
            jobs[f"http {defect}"] = _job(Options(Target(url=url.removesuffix("/mcp") + f"/{defect}/mcp"), eras=ERAS))
        return run_many(jobs, limit=4)


@pytest.fixture(scope="session")
def http_reports(call_logs: Path) -> dict[str, Report]:
    """A few controls and the reference server over Streamable HTTP, in both eras."""
    with ExitStack() as stack:
        jobs = {}
        for defect in HTTP_CONTROLS:
            log = str(call_logs / f"http-{defect}.jsonl")
            url = stack.enter_context(http_server(control_argv(defect, "--call-log", log, "--http")))
            jobs[defect] = _job(Options(Target(url=url), eras=ERAS))
            if defect == "bare-global-grants":
                # Named explicitly, the probe is never read before the era sessions: the leak shows as a leak.
                # Its own server process: the grants of this control are global.
                log = str(call_logs / f"http-{defect}-named.jsonl")
                url = stack.enter_context(http_server(control_argv(defect, "--call-log", log, "--http")))
                named = Options(Target(url=url), eras=ERAS, call_tool="add", call_args={"a": 2, "b": 3})
                jobs[f"{defect} --call-tool"] = _job(named)
        url = stack.enter_context(http_server(reference_argv("--transport", "http", "--port")))
        jobs["reference"] = _job(Options(Target(url=url), eras=ERAS))
        return run_many(jobs)


@pytest.fixture(scope="session")
def reference_reports() -> dict[str, Report]:
    """The reference server over stdio in both eras, and a simulated real catalog."""
    jobs = {
        "reference": _job(Options(Target(stdio=reference_argv()), eras=ERAS)),
        "simulation": _job(
            Options(
                Target(stdio=reference_argv("--simulate", "--descriptions", str(MEMORY_CATALOG))),
                eras=("legacy",),
                call_tool="read_graph",
                call_args={},
            )
        ),
        # tools/list in pages of 4: every listing the suite makes must follow the cursors.
        "paged": _job(
            Options(
                Target(stdio=reference_argv("--page-size", "4")),
                eras=("legacy",),
                skip=("isolation", "session-end", "sessionless"),
            )
        ),
    }
    return run_many(jobs)


# -- the optional profiles (test_suite_profiles.py) ---------------------------------------------------------
# Each control with the one profile it is checked by; served over HTTP, one process for all its sessions.
PROFILE_CONTROLS = {
    **dict.fromkeys(
        (
            "describe-good",
            "describe-gated",
            "describe-other-document",
            "describe-no-grant",
            "describe-grants-all",
            "describe-global-grant",
        ),
        "tool-fallback",
    ),
    **dict.fromkeys(
        (
            "catalog-good",
            "catalog-ungated-call",
            "catalog-no-validation",
            "catalog-big-list",
            "catalog-naive-search",
            "catalog-no-suggestions",
            "catalog-short-browse",
        ),
        "catalog",
    ),
}
ProfileCli = dict[str, "subprocess.CompletedProcess[str]"]


def _check_command(argv: str) -> subprocess.Popen[str]:
    """The real `mcp-pd check` (python -m mcp_pd_conformance), legacy era, its --json report on stdout."""
    command = [sys.executable, "-m", "mcp_pd_conformance", *shlex.split(argv), "--era", "legacy", "--json", "-"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="session")
def profile_runs(call_logs: Path) -> tuple[dict[str, Report], ProfileCli]:
    """The profile controls (in-process, --only their profile) and four runs of the real command line
    (the --json report on stdout, the human one on stderr), overlapping."""
    reference, good = (shlex.quote(shlex.join(argv)) for argv in (reference_argv(), control_argv("good")))
    procs = {
        # The reference server as it ships: tool-fallback applies, catalog is skipped (not catalog mode).
        "reference": _check_command(
            f"--stdio {reference} --profile tool-fallback --profile catalog --only tool-fallback,catalog"
        ),
        "no-describe-tool": _check_command(f"--stdio {good} --profile tool-fallback --only tool-fallback"),
    }
    # One process serves every control, each at /DEFECT/mcp (a server's start-up is mostly imports).
    first, *others = PROFILE_CONTROLS
    log = str(call_logs / "profile-{defect}.jsonl")
    argvs = {
        "controls": control_argv(first, *others, "--call-log", log, "--http"),
        "reference-catalog": reference_argv("--mode", "catalog", "--lexical", "--transport", "http", "--port"),
    }
    with http_servers(argvs) as started:
        urls = {d: started["controls"].removesuffix("/mcp") + f"/{d}/mcp" for d in PROFILE_CONTROLS}
        urls["reference-catalog"] = started["reference-catalog"]
        # Catalog mode, the core included: the whole run must pass.
        procs["reference-catalog"] = _check_command(
            f"--url {urls['reference-catalog']} --profile catalog,tool-fallback"
        )
        procs["strict"] = _check_command(
            f"--url {urls['describe-gated']} --profile tool-fallback --strict "
            "--only tool-fallback/required-names-describe"
        )
        jobs = {
            defect: partial(
                run_suite, Options(Target(url=urls[defect]), eras=("legacy",), only=(profile,), profiles=(profile,))
            )
            for defect, profile in PROFILE_CONTROLS.items()
        }
        reports = run_many(jobs, limit=4)
        cli: ProfileCli = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            cli[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return reports, cli


# The shared fixtures here and in the modules (session and module scope) each run the suite against many servers
# (stdio_reports: about 50, four at a time). The first test that needs one pays for making it inside its own deadline
# (pyproject's `timeout`, there to stop a hang, not to bound a fixture a module's worth of tests share): on a loaded
# 2-core machine that took over 300 s and errored every test sharing it. Those tests get a deadline that fits.
SHARED_FIXTURE_TIMEOUT = 1800
_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE not in item.path.parents or item.get_closest_marker("timeout"):
            continue  # this hook sees every collected item: only the suite's own tests here
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        shared = (d for defs in definitions for d in defs if d.scope in ("module", "session"))
        # Only the suite's own (defined under tests/conformance), and not the folder `call_logs` is.
        if any(d.baseid.startswith("tests/conformance") and d.argname != "call_logs" for d in shared):
            item.add_marker(pytest.mark.timeout(SHARED_FIXTURE_TIMEOUT))
