"""`mcp-pd check`: the command line of the conformance suite."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from ._baseline import BaselineError, load_expected_failures, validate_selector
from ._probe import Target
from ._report import render, write_json
from ._runner import ERAS, Era, Options, profile_problem, run_suite
from ._spec import CHECKS, PROFILES, REQUIREMENTS, SCENARIOS

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_UNREACHABLE", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

EPILOG = """\
exit codes:
  0  every MUST check passed (failed SHOULD checks are WARNINGs and do not fail the run)
  1  one or more MUST checks failed, an --expected-failures entry is STALE (now passes),
     or --strict and a SHOULD check warned
  2  usage error (bad option, unknown check ID, unreadable expected-failures file)
  3  the server could not be started or reached

examples:
  mcp-pd check --stdio "python -m mcp_pd serve"
  mcp-pd check --url http://127.0.0.1:8000/mcp --era legacy --json report.json
  mcp-pd check --stdio "node server.js" --call-tool get_status --args '{}' --skip sessionless
  mcp-pd check --stdio "python -m mcp_pd serve --mode catalog" --profile catalog,tool-fallback

profiles (optional; without --profile only the core runs):
"""
EPILOG += "".join(f"  {name:<14} {text}\n" for name, text in PROFILES.items())
EPILOG += """  A profile is skipped, with its reason, when the server lacks what it checks.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit is SystemExit(2): keep it, but print help hints
        self.print_usage(sys.stderr)
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcp-pd check",
        description="Check an MCP server against MCP Progressive Disclosure spec v2.1 (black box, any language).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--stdio", metavar="COMMAND", help='server command line, started over stdio ("python -m x")')
    where.add_argument("--url", metavar="URL", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    p.add_argument(
        "--era",
        choices=(*ERAS, "both"),
        default="both",
        help="protocol era(s) for the session scenarios: legacy = initialize handshake; "
        "2026-07-28 = the SDK's default client (mode auto); default both",
    )
    p.add_argument("--only", metavar="IDS", help="comma-separated requirement IDs, check IDs or scenario names")
    p.add_argument("--skip", metavar="IDS", help="comma-separated requirement IDs, check IDs or scenario names")
    p.add_argument("--json", metavar="PATH", help="also write a machine-readable report (- for stdout)")
    p.add_argument(
        "--expected-failures",
        metavar="FILE.yml",
        help="YAML list of requirement IDs, check IDs or scenarios expected to fail; "
        "a listed failure that now passes is STALE and fails the run",
    )
    p.add_argument("--call-tool", metavar="NAME", help="the tool the suite may really invoke (default: a readOnly one)")
    p.add_argument("--args", metavar="JSON", help="arguments for --call-tool, a JSON object")
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAMES",
        help=f"also run these optional profiles (repeatable or comma-separated): {', '.join(PROFILES)}",
    )
    p.add_argument("--strict", action="store_true", help="WARNINGs fail the run too (exit 1)")
    p.add_argument(
        "--grant-hold",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also wait this long before re-checking that grants persist (default 0: requests only)",
    )
    p.add_argument(
        "--allow-side-effects",
        action="store_true",
        help="grants/unsafe-tools-gated may call a tool that is not read-only and takes no constrained argument "
        "unfetched, with {} (it runs if the server does not gate it); default: such tools are left unchecked",
    )
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per request (default 30)")
    p.add_argument("--no-color", action="store_true", help="no ANSI colours (default: colours on a terminal)")
    p.add_argument("-q", "--quiet", action="store_true", help="report problems only, no progress")
    p.add_argument("-v", "--verbose", action="store_true", help="show every exchange and the SDK's log")
    p.add_argument("--list-checks", action="store_true", help="list scenarios, checks and requirements, then exit")
    return p


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (value or "").split(",") if t.strip())


def _list_checks() -> str:
    lines = ["scenario / check ID                            severity  requirements"]
    for scenario in SCENARIOS:
        if scenario in PROFILES:
            lines += ["", f"profile {scenario} (--profile {scenario}): {PROFILES[scenario]}"]
        for spec in CHECKS:
            if spec.scenario == scenario:
                lines.append(f"{spec.id:<46} {spec.severity.value:<9} {' '.join(spec.requirements)}")
    lines.append("")
    lines += [f"{r.id:<10} {r.level:<8} §{r.section:<4} {r.text}" for r in REQUIREMENTS.values()]
    return "\n".join(lines) + "\n"


class _Progress:
    """One status line on stderr: rewritten in place on a terminal, plain lines otherwise."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self.step = 0

    def __call__(self, message: str) -> None:
        if not self.enabled:
            return
        self.step += 1
        if self.tty:
            self.stream.write(f"\r\033[K[{self.step}] {message} …")
        else:
            self.stream.write(f"mcp-pd check: {message}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _options(args: argparse.Namespace) -> Options:
    if args.stdio is None and args.url is None:
        raise _UsageError("mcp-pd check: give the server with --stdio COMMAND or --url URL")
    if args.timeout <= 0:
        raise _UsageError("mcp-pd check: --timeout must be positive")
    if args.grant_hold < 0:
        raise _UsageError("mcp-pd check: --grant-hold must not be negative")
    call_args: dict[str, Any] | None = None
    if args.args is not None:
        if args.call_tool is None:
            raise _UsageError("mcp-pd check: --args needs --call-tool")
        try:
            call_args = json.loads(args.args)
        except ValueError as exc:
            raise _UsageError(f"mcp-pd check: --args is not JSON: {exc}") from None
        if not isinstance(call_args, dict):
            raise _UsageError("mcp-pd check: --args must be a JSON object")
    if args.stdio is not None:
        try:
            argv = tuple(shlex.split(args.stdio))
        except ValueError as exc:
            raise _UsageError(f"mcp-pd check: cannot parse --stdio: {exc}") from None
        if not argv:
            raise _UsageError("mcp-pd check: --stdio is empty")
        target = Target(stdio=argv, timeout=args.timeout)
    else:
        if not args.url.startswith(("http://", "https://")):
            raise _UsageError("mcp-pd check: --url must be an http:// or https:// URL")
        target = Target(url=args.url, timeout=args.timeout)
    eras: tuple[Era, ...] = ERAS if args.era == "both" else (args.era,)
    only, skip = _split(args.only), _split(args.skip)
    profiles = tuple(dict.fromkeys(name for value in args.profile or () for name in _split(value)))
    unknown = [name for name in profiles if name not in PROFILES]
    if unknown:
        raise _UsageError(f"mcp-pd check: unknown profile {', '.join(unknown)} (the profiles: {', '.join(PROFILES)})")
    try:
        for token in (*only, *skip):
            validate_selector(token)
        baseline = tuple(load_expected_failures(args.expected_failures)) if args.expected_failures else None
    except BaselineError as exc:
        raise _UsageError(f"mcp-pd check: {exc}") from None
    for token in only:
        problem = profile_problem(token, profiles)
        if problem:
            raise _UsageError(f"mcp-pd check: --only {problem}")
    return Options(
        target,
        eras,
        only,
        skip,
        args.call_tool,
        call_args,
        baseline,
        strict=args.strict,
        grant_hold=args.grant_hold,
        profiles=profiles,
        allow_side_effects=args.allow_side_effects,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mcp-pd check` with `argv` (default: sys.argv[1:]); returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.list_checks:
            sys.stdout.write(_list_checks())
            return EXIT_OK
        options = _options(args)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

    if not args.verbose:
        logging.getLogger("mcp").setLevel(logging.CRITICAL)
        logging.getLogger("httpx2").setLevel(logging.CRITICAL)
    progress = _Progress(sys.stderr, enabled=not args.quiet)
    try:
        report = anyio.run(run_suite, options, progress)
    except KeyboardInterrupt:
        progress.done()
        print("mcp-pd check: interrupted", file=sys.stderr)
        return 130
    progress.done()

    color = not args.no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()
    verbosity = 0 if args.quiet else 2 if args.verbose else 1
    if args.json == "-":
        sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
        sys.stderr.write(render(report, color=False, verbosity=verbosity))
    else:
        sys.stdout.write(render(report, color=color, verbosity=verbosity))
        if args.json:
            try:
                write_json(report, args.json)
            except OSError as exc:
                print(f"mcp-pd check: cannot write {args.json}: {exc}", file=sys.stderr)
                return EXIT_USAGE
    return report.exit_code
