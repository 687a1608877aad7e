"""Conformance suite for MCP Progressive Disclosure (spec v2.1): a black-box MCP client.

It talks to any server, in any language, over stdio or Streamable HTTP, using only the `mcp`
client API, and reports one line per check in the vocabulary of the official MCP conformance
harness (scenarios, checks, SUCCESS / FAILURE / WARNING / SKIPPED / INFO, spec references).
Every check cites requirement IDs of the project's spec/requirements.toml.

Command line (also `python -m mcp_pd_conformance`)::

    mcp-pd check --stdio "python -m mcp_pd serve"
    mcp-pd check --url http://127.0.0.1:8000/mcp --era legacy --json report.json
    mcp-pd check --stdio "python -m mcp_pd serve --mode catalog" --profile catalog,tool-fallback

Optional profiles (`--profile`, repeatable or comma-separated) check the project's own extensions:
`tool-fallback` the describe tool (spec/interpretations.md I-13), `catalog` catalog mode (I-16). A
profile is skipped, with its reason, when the server lacks what it checks; without --profile only the
core runs.

Exit codes:
    0  every MUST check that ran passed (failed SHOULD checks are WARNINGs and do not fail the run);
       "PASS, GATE NOT VERIFIED" when no call could show that unfetched calls are refused, or that a
       fetch authorizes the call (`Report.gate` says which, and why)
    1  one or more MUST checks failed, an --expected-failures entry is STALE (now passes),
       or --strict and a SHOULD check warned or the gate was not verified
    2  usage error
    3  the server could not be started or reached

From Python::

    report = await run_suite(Options(Target(stdio=("python", "-m", "mcp_pd", "serve"))))
    print(render(report)); report.exit_code

A tool is only ever really invoked when it is named with --call-tool or annotated readOnlyHint=true
(in tools/list, or in its fetched definition when the listing carries no annotations).

`Target`, `Options`, `run_suite` and `select_checks` are imported on first use: they bring in the `mcp` SDK,
which `mcp-pd check --help` does not need.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._baseline import BaselineError, apply_baseline, load_expected_failures
from ._cli import EXIT_FAILURE, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, main
from ._model import GATE_CLAIMS, BaselineOutcome, CheckResult, EraInfo, GateProof, ProfileRun, Report, Status
from ._report import render, verdict, write_json
from ._spec import CHECKS, ERAS, PROFILES, REQUIREMENTS, SCENARIOS, SPEC_VERSION, CheckSpec, Requirement, Severity

if TYPE_CHECKING:
    from ._probe import Target
    from ._runner import Options, run_suite, select_checks

_LAZY = {"Target": "._probe", "Options": "._runner", "run_suite": "._runner", "select_checks": "._runner"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CHECKS",
    "ERAS",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "GATE_CLAIMS",
    "PROFILES",
    "REQUIREMENTS",
    "SCENARIOS",
    "SPEC_VERSION",
    "BaselineError",
    "BaselineOutcome",
    "CheckResult",
    "CheckSpec",
    "EraInfo",
    "GateProof",
    "Options",
    "ProfileRun",
    "Report",
    "Requirement",
    "Severity",
    "Status",
    "Target",
    "apply_baseline",
    "load_expected_failures",
    "main",
    "render",
    "run_suite",
    "select_checks",
    "verdict",
    "write_json",
]
