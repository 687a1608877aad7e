"""--expected-failures: a baseline of known failures, as in the official MCP conformance harness.

The file is YAML (PyYAML; plain JSON also works without it): a list of entries, or a mapping whose
`server` key holds that list. An entry is a requirement ID (`PD-6.3-01`), a check ID
(`resource-read/unknown-tool-entry`), a check in one era (`authorization/persists[legacy]`) or a
scenario name (`sessionless`). A FAILURE or WARNING matched by an entry is expected; an entry whose
matching checks all pass now is STALE and fails the run; an entry matching only skipped or absent
checks is reported as unused.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

from ._model import BaselineOutcome, CheckResult, Report, Status
from ._spec import CHECKS_BY_ID, REQUIREMENTS, SCENARIOS

__all__ = ["BaselineError", "apply_baseline", "load_expected_failures", "validate_selector"]

_ERA_SUFFIX = re.compile(r"^(?P<id>[^\[\]]+)\[(?P<era>legacy|2026-07-28)\]$")


class BaselineError(ValueError):
    """The expected-failures file cannot be read or holds an unknown entry (a usage error)."""


def validate_selector(token: str) -> str:
    """`token` if it names a requirement, check, check-in-era or scenario; raises BaselineError otherwise."""
    match = _ERA_SUFFIX.match(token)
    bare = match.group("id") if match else token
    if bare in REQUIREMENTS or bare in CHECKS_BY_ID or (bare in SCENARIOS and not match):
        return token
    raise BaselineError(f"unknown requirement, check or scenario {token!r} (see `mcp-pd check --list-checks`)")


def _parse(text: str, path: Path) -> Any:
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        try:
            return json.loads(text)
        except ValueError:
            raise BaselineError(
                f"{path}: reading YAML needs PyYAML (pip install pyyaml); without it only JSON is accepted"
            ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BaselineError(f"{path}: not valid YAML: {exc}") from None


def load_expected_failures(path: str | Path) -> list[str]:
    """The entries of an expected-failures file, validated."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = _parse(text, path)
    if data is None:
        return []
    if isinstance(data, dict):
        unknown = set(data) - {"server"}
        if unknown:
            raise BaselineError(f"{path}: unexpected keys {sorted(unknown)}; use a list, or a 'server:' list")
        data = data.get("server") or []
    if not isinstance(data, list) or not all(isinstance(e, str) for e in data):
        raise BaselineError(f"{path}: expected a list of requirement IDs, check IDs or scenario names")
    return [validate_selector(entry.strip()) for entry in data]


def _matches(entry: str, result: CheckResult) -> bool:
    return entry in (result.id, result.key, result.scenario) or entry in result.requirements


def apply_baseline(report: Report, entries: list[str]) -> BaselineOutcome:
    """Mark expected failures on `report.results` and find stale and unused entries."""
    outcome = BaselineOutcome()
    for entry in entries:
        matched = [r for r in report.results if _matches(entry, r)]
        failing = [r for r in matched if r.status in (Status.FAILURE, Status.WARNING)]
        for result in failing:
            result.expected_failure = True
        if failing:
            outcome.expected.append(entry)
        elif any(r.status is Status.SUCCESS for r in matched):
            outcome.stale.append(entry)
        else:
            outcome.unused.append(entry)
    report.baseline = outcome
    return outcome
