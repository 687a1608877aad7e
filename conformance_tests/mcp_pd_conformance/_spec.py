"""What the suite checks: the spec requirements it cites and the registry of its checks, in run order.

Each family of checks has its module (`_registry_listing`, `_registry_reading`, `_registry_sessions`,
`_registry_profiles`); what a check and a requirement are is `_requirements`. Every check cites at least one
requirement, and a test holds the two together both ways.
"""

from __future__ import annotations

from typing import Final

from ._registry_listing import LISTING_CHECKS
from ._registry_profiles import PROFILE_CHECKS
from ._registry_reading import READING_CHECKS
from ._registry_sessions import SESSION_CHECKS
from ._requirements import (
    ALL_REQUIREMENTS,
    ERAS,
    PER_ERA_CHECKS,
    PER_ERA_SCENARIOS,
    PROFILES,
    SECTION_TITLES,
    SPEC_VERSION,
    CheckSpec,
    Era,
    Requirement,
    Severity,
)

__all__ = [
    "CHECKS",
    "CHECKS_BY_ID",
    "CORE_CHECKS",
    "ERAS",
    "PER_ERA_CHECKS",
    "PER_ERA_SCENARIOS",
    "PROFILES",
    "REQUIREMENTS",
    "SCENARIOS",
    "SECTION_TITLES",
    "SPEC_VERSION",
    "CheckSpec",
    "Era",
    "Requirement",
    "Severity",
]

CHECKS: Final[tuple[CheckSpec, ...]] = (*LISTING_CHECKS, *READING_CHECKS, *SESSION_CHECKS, *PROFILE_CHECKS)
CHECKS_BY_ID: Final[dict[str, CheckSpec]] = {c.id: c for c in CHECKS}
_CITED: Final = {rid for check in CHECKS for rid in check.requirements}
REQUIREMENTS: Final[dict[str, Requirement]] = {
    rid: req for rid, req in ALL_REQUIREMENTS.items() if not rid.startswith("PDX-") or rid in _CITED
}
SCENARIOS: Final[tuple[str, ...]] = tuple(dict.fromkeys(c.scenario for c in CHECKS))
CORE_CHECKS: Final[tuple[CheckSpec, ...]] = tuple(c for c in CHECKS if c.profile is None)
