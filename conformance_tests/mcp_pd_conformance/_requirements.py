"""What a check is: the spec requirements it cites (`Requirement`), its severity and its entry (`CheckSpec`).

The requirement table is read from the project's spec/requirements.toml (every black-box-testable requirement of
spec v2.1 with its ID, section, RFC 2119 level and text; the wheel ships the file inside this package); the check
registry is data, one family of checks per module (`_registry_*`), put together in `_spec`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final, Literal

__all__ = [
    "ALL_REQUIREMENTS",
    "ERAS",
    "PER_ERA_CHECKS",
    "PER_ERA_SCENARIOS",
    "PROFILES",
    "SECTION_TITLES",
    "SPEC_VERSION",
    "CheckSpec",
    "Era",
    "Requirement",
    "Severity",
    "define",
]

SPEC_VERSION: Final = "2.1"
# The protocol eras the session scenarios run in: the initialize handshake (2025-11-25), and the SDK's default client.
Era = Literal["legacy", "2026-07-28"]
ERAS: Final[tuple[Era, ...]] = ("legacy", "2026-07-28")


@dataclass(frozen=True)
class Requirement:
    """One normative sentence of the spec, as the suite cites it."""

    id: str
    section: str
    level: str
    text: str


def _requirements_file() -> Traversable:
    """spec/requirements.toml: inside this package in the wheel, else in the checkout this package sits in."""
    shipped = resources.files(__package__) / "spec" / "requirements.toml"
    if shipped.is_file():
        return shipped
    return Path(__file__).resolve().parents[2] / "spec" / "requirements.toml"


def _load() -> dict[str, Requirement]:
    """Every black-box-testable requirement, in the file's order: the spec's (PD-*) and ours (PDX-*)."""
    with _requirements_file().open("rb") as fh:
        rows = tomllib.load(fh)["requirement"]
    return {
        str(r["id"]): Requirement(str(r["id"]), str(r["section"]), str(r["level"]), " ".join(str(r["text"]).split()))
        for r in rows
        if r.get("testable") is True
    }


# The one source is the project's spec/requirements.toml (shipped inside this package in the wheel). Beyond the spec,
# the project's own interpretations (PDX-<AREA>-<nn>) sit under the interpretation that states them ("I-3"); core
# checks citing only these are SHOULD, so another implementation gets a WARNING. A profile is opted into, so there the
# extension's own text binds as written (MUST fails the run). The suite knows the PDX requirements its checks cite.
ALL_REQUIREMENTS: Final[dict[str, Requirement]] = _load()


SECTION_TITLES: Final[dict[str, str]] = {
    "2": "Conformance",
    "3.1": "Stage 1: minimal tool descriptions",
    "3.2": "Stage 2: full tool descriptions",
    "4.1": "Resource identification",
    "4.2": "Resource description content",
    "4.3": "Resource query parameters",
    "4.4": "Resource response format",
    "5.1": "Authorization model",
    "5.2": "Session identification",
    "6.1": "Missing tool selection error",
    "6.2": "Tool description required error",
    "6.3": "Tool not found error",
    "7.2": "Caching considerations",
    "I-3": "Parsing ?tools= (the project's interpretation, not the spec: WARNING only)",
    "I-13": "describe_tools: the resource read as a tool (the project's interpretation)",
    "I-16": "Catalog mode: search, browse, describe, call (the project's interpretation)",
    "I-27": "What the suite exercised (the suite's own behaviour)",
}

# Optional profiles (`mcp-pd check --profile NAME`): checks of the project's own extensions, run only when
# asked for, and skipped with a reason when the server does not have what the profile checks. Each
# profile's checks form one scenario of the same name.
PROFILES: Final[dict[str, str]] = {
    "tool-fallback": "the describe tool (describe_tools) checked the way the core checks the resource (I-13)",
    "catalog": "catalog mode: search_tools, browse_tools, describe_tools and call_tool (I-16)",
}


class Severity(StrEnum):
    """What a check that does not pass becomes: MUST -> FAILURE, SHOULD -> WARNING, MAY/INFO -> INFO."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    INFO = "INFO"


@dataclass(frozen=True)
class CheckSpec:
    """A check the suite can emit: stable ID `scenario/name`, the requirements it cites, a fix hint.

    `profile` names the optional profile the check belongs to (None: the core, always run).
    """

    id: str
    severity: Severity
    requirements: tuple[str, ...]
    title: str
    hint: str
    profile: str | None = None

    @property
    def scenario(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def per_era(self) -> bool:
        """Whether the check reports once per selected protocol era (`id[era]`), not once per run."""
        return self.scenario in PER_ERA_SCENARIOS or self.id in PER_ERA_CHECKS

    @property
    def section(self) -> str:
        """The spec section the report groups this check under (its first requirement's)."""
        return ALL_REQUIREMENTS[self.requirements[0]].section


def define(check_id: str, severity: Severity, requirements: tuple[str, ...], title: str, hint: str) -> CheckSpec:
    """One registry entry; a check of a profile's scenario belongs to that profile."""
    scenario = check_id.split("/", 1)[0]
    return CheckSpec(check_id, severity, requirements, title, hint, scenario if scenario in PROFILES else None)


# Scenarios run once per selected protocol era; the others run once.
PER_ERA_SCENARIOS: Final[frozenset[str]] = frozenset({"authorization", "isolation", "session-end"})
# Checks of other scenarios judged in each era too: what a server declares can differ between its handshakes.
# The error documents too: a server may build its refusals per protocol version (6.1 and 6.2 hold in every era).
PER_ERA_CHECKS: Final[frozenset[str]] = frozenset(
    {"connection/era-exercised", "resource-listing/capability-declared", "missing-selection/error-document"}
)
