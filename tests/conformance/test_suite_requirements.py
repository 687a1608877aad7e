"""The suite's own bookkeeping: requirement IDs both ways, check registry, client-only imports, public API."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import mcp_pd_conformance as suite
from mcp_pd_conformance import CHECKS, PROFILES, REQUIREMENTS, SCENARIOS, Severity

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance_tests" / "mcp_pd_conformance"


def _toml() -> dict[str, dict[str, object]]:
    with (ROOT / "spec" / "requirements.toml").open("rb") as fh:
        return {str(r["id"]): r for r in tomllib.load(fh)["requirement"]}


def test_loaded_requirements_are_exactly_the_testable_ones() -> None:
    """Every testable spec requirement (PD-*); of ours (PDX-*), those the suite checks, all testable."""
    toml = _toml()
    testable = {rid for rid, r in toml.items() if r["testable"]}
    assert set(REQUIREMENTS) - testable == set(), "the suite cites IDs that are unknown or not black-box testable"
    spec = {rid for rid in testable if not rid.startswith("PDX-")}
    assert spec - set(REQUIREMENTS) == set(), "testable requirements the suite does not know"
    for rid, req in REQUIREMENTS.items():
        assert (req.section, req.level) == (toml[rid]["section"], toml[rid]["level"]), rid


def test_every_check_cites_requirements_and_every_requirement_has_a_check() -> None:
    cited = {rid for check in CHECKS for rid in check.requirements}
    assert cited == set(REQUIREMENTS)
    ids = [check.id for check in CHECKS]
    assert len(ids) == len(set(ids))
    for check in CHECKS:
        assert re.fullmatch(r"[a-z-]+/[a-z-]+", check.id), check.id
        assert check.requirements and all(r in REQUIREMENTS for r in check.requirements), check.id
        assert check.title
        assert bool(check.hint) == (check.severity is not Severity.INFO), check.id
        # Our interpretations (PDX-*) never fail another implementation in the core: only a WARNING. A
        # profile is opted into: its checks hold the extension to its own text, at that text's level.
        if all(r.startswith("PDX-") for r in check.requirements) and check.profile is None:
            assert check.severity is Severity.SHOULD, check.id
        if check.profile is not None:
            assert check.scenario == check.profile and check.profile in PROFILES, check.id
            level = REQUIREMENTS[check.requirements[0]].level
            assert check.severity is (Severity.SHOULD if level == "SHOULD" else Severity.MUST), check.id
    assert SCENARIOS == (
        "connection",
        "tools-list",
        "resource-listing",
        "resource-read",
        "missing-selection",
        "authorization",
        "grants",
        "isolation",
        "session-end",
        "sessionless",
        "tool-fallback",
        "catalog",
    )


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_suite_is_a_plain_mcp_client() -> None:
    """No mcp_pd internals, no server-side SDK: it must work against any implementation."""
    allowed = {"mcp", "mcp_types", "pydantic", "anyio", "jsonschema"} | set(sys.stdlib_module_names)
    for path in PACKAGE.glob("*.py"):
        for module in _imports(path):
            top = module.split(".")[0]
            assert top in allowed, f"{path.name} imports {module}"
            assert not module.startswith("mcp.server"), f"{path.name} imports {module}"


def test_public_api_is_curated() -> None:
    names = suite.__all__
    assert sorted(names, key=lambda n: (not n.isupper(), n)) == names
    for name in names:
        value = getattr(suite, name)
        module = getattr(value, "__module__", None)
        if callable(value) and module is not None:
            assert module.startswith("mcp_pd_conformance._"), (name, module)
    assert [p.name for p in PACKAGE.glob("*.py") if not p.name.startswith("_")] == []
    assert callable(suite.main)
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"^\s+{code}\s+\S", suite.__doc__ or "", re.MULTILINE), f"exit code {code} is undocumented"


def test_the_pytest_entry_cites_every_checked_requirement() -> None:
    """conformance_tests/test_conformance.py runs every core check, so its req marker lists each ID they cite."""
    tree = ast.parse((ROOT / "conformance_tests" / "test_conformance.py").read_text())
    cited = {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "req"
        for arg in node.args
        if isinstance(arg, ast.Constant)
    }
    assert cited == {r for check in CHECKS if check.profile is None for r in check.requirements}
