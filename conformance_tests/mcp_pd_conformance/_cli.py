"""`mcp-pd check`: the command line of the conformance suite.

`--help` and usage errors import nothing of the `mcp` SDK (a second or more on a busy machine): the modules that
talk to servers are imported once the arguments are known. The reported duration is wall-clock time from the
process's start, so the command's and the server's start-up count.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ._baseline import BaselineError, load_expected_failures, validate_selector
from ._report import render, write_json
from ._spec import CHECKS, ERAS, PROFILES, REQUIREMENTS, SCENARIOS, Era

if TYPE_CHECKING:
    from ._runner import Options

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_UNREACHABLE", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

_IMPORTED = time.monotonic()  # the fallback start of the clock where the process's own start is unknown

EPILOG = """\
exit codes:
  0  every MUST check that ran passed (failed SHOULD checks are WARNINGs and do not fail the run);
     the verdict is "PASS, GATE NOT VERIFIED" when no call could show a half of the gate (see below)
  1  one or more MUST checks failed, an --expected-failures entry is STALE (now passes),
     or --strict and a SHOULD check warned or the gate was not verified
  2  usage error (bad option, unknown check ID, unreadable expected-failures file)
  3  the server could not be started or reached, or it refused the credentials (HTTP 401 or 403: the report
     shows the status and the WWW-Authenticate challenge)

the gate (spec 5.1), shown by calls:
  that unfetched calls are refused with TOOL_DESCRIPTION_REQUIRED, and that a fetch authorizes the call.
  The suite only really runs --call-tool and tools annotated readOnlyHint: true (the first of them it can
  call with its description's example, or with {} when its schema requires nothing). Every other tool is
  called unfetched with arguments its schema rejects: a gated server refuses before anything runs. When no
  call could show a half of the gate (no read-only tool, say), the verdict reads "PASS, GATE NOT VERIFIED"
  and says which half: name a tool that is safe to call with --call-tool NAME --args JSON, or add
  readOnlyHint to the tools that are.

examples:
  mcp-pd check --stdio "python -m mcp_pd serve"
  mcp-pd check --url http://127.0.0.1:8000/mcp --era legacy --json report.json
  mcp-pd check --stdio "node server.js" --call-tool get_status --args '{}' --skip sessionless
  mcp-pd check --stdio "python -m mcp_pd serve --mode catalog" --profile catalog,tool-fallback
  MCP_TOKEN=... mcp-pd check --url https://mcp.example.com/mcp --bearer-env MCP_TOKEN
  mcp-pd check --url http://127.0.0.1:8000/mcp --header "X-Team: search" --header-env "X-Api-Key=API_KEY"

profiles (optional; without --profile only the core runs):
"""
EPILOG += "".join(f"  {name:<14} {text}\n" for name, text in PROFILES.items())
EPILOG += """  A profile is skipped, with its reason, when the server lacks what it checks.
"""


def process_start() -> float:
    """time.monotonic() when this process started (Linux: /proc/self/stat), else when this module was imported."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED
    # A clock that disagrees (another boot time in a container, say) must not make the figure absurd.
    return time.monotonic() - age if 0.0 <= age <= 3600.0 else _IMPORTED


def _clock_start(argv: Sequence[str] | None) -> float:
    """Where the reported duration starts: the process's start when the process was launched for this command
    (its command line ends with `argv`), else now (main() called from a longer-lived program)."""
    if argv is None or (argv and list(argv) == sys.argv[len(sys.argv) - len(argv) :]):
        return process_start()
    return time.monotonic()


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
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="with --url: an HTTP header sent with every request (repeatable); for secrets prefer --bearer-env or "
        "--header-env, which keep the value out of the shell history and the process list",
    )
    p.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="with --url: the header NAME, its value read from the environment variable VAR (repeatable)",
    )
    p.add_argument(
        "--bearer-env",
        metavar="VAR",
        help="with --url: send Authorization: Bearer <the value of the environment variable VAR>",
    )
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
    p.add_argument(
        "--strict",
        action="store_true",
        help="WARNINGs fail the run too (exit 1), and so does a gate the suite could not verify",
    )
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


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110 token)


def _header(name: str, value: str, source: str) -> tuple[str, str]:
    """One checked header; the error names the header and where it came from, never the value."""
    name, value = name.strip(), value.strip()
    if source == "--header" and (not _TOKEN.fullmatch(name) or not value):
        raise _UsageError(f"mcp-pd check: --header {name!r}...: give 'NAME: VALUE'")
    if not _TOKEN.fullmatch(name):
        raise _UsageError(f"mcp-pd check: {source}: {name!r} is not an HTTP header name")
    if not value:
        raise _UsageError(f"mcp-pd check: {source}: the value of {name} is empty")
    if any(c in value for c in "\r\n\0"):
        raise _UsageError(f"mcp-pd check: {source}: the value of {name} holds a line break or NUL")
    return name, value


def _from_env(variable: str, source: str) -> str:
    value = os.environ.get(variable)
    if not value:
        state = "is empty" if value == "" else "is not set"
        raise _UsageError(f"mcp-pd check: {source}: the environment variable {variable} {state}")
    return value


def _headers(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """--header "NAME: VALUE", --header-env NAME=VAR and --bearer-env VAR, in that order."""
    headers = []
    for given in args.header:
        name, colon, value = given.partition(":")
        if not colon:
            raise _UsageError(f"mcp-pd check: --header {name.strip()!r}...: give 'NAME: VALUE'")
        headers.append(_header(name, value, "--header"))
    for given in args.header_env:
        name, equals, variable = given.partition("=")
        if not equals or not variable.strip():
            raise _UsageError(f"mcp-pd check: --header-env {given!r}: write it as NAME=VARIABLE")
        headers.append(_header(name, _from_env(variable.strip(), "--header-env"), "--header-env"))
    if args.bearer_env:
        token = _from_env(args.bearer_env, "--bearer-env")
        headers.append(_header("Authorization", f"Bearer {token}", "--bearer-env"))
    names = [name.lower() for name, _ in headers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise _UsageError(f"mcp-pd check: the header {', '.join(twice)} is given more than once")
    return tuple(headers)


def _options(args: argparse.Namespace, started: float) -> Options:
    from ._probe import Target  # the SDK: only once the arguments are known
    from ._runner import Options, profile_problem

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
    given = [
        flag
        for flag, value in (
            ("--header", args.header),
            ("--header-env", args.header_env),
            ("--bearer-env", args.bearer_env),
        )
        if value
    ]
    if args.stdio is not None and given:
        raise _UsageError(
            f"mcp-pd check: {' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --url only"
        )
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
        target = Target(url=args.url, timeout=args.timeout, headers=_headers(args))
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
        started=started,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mcp-pd check` with `argv` (default: sys.argv[1:]); returns the exit code."""
    started = _clock_start(argv)
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.list_checks:
            sys.stdout.write(_list_checks())
            return EXIT_OK
        options = _options(args, started)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

    if not args.verbose:
        logging.getLogger("mcp").setLevel(logging.CRITICAL)
        logging.getLogger("httpx2").setLevel(logging.CRITICAL)
    import anyio

    from ._runner import run_suite

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
