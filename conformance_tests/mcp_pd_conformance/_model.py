"""Results: one `CheckResult` per check (per protocol era for the session scenarios), and the run's `Report`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from ._spec import CHECKS_BY_ID, REQUIREMENTS, CheckSpec

__all__ = ["BaselineOutcome", "CheckResult", "EraInfo", "ProfileRun", "Report", "Status"]


class Status(StrEnum):
    """The official MCP conformance harness's vocabulary."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    WARNING = "WARNING"
    SKIPPED = "SKIPPED"
    INFO = "INFO"


@dataclass
class CheckResult:
    """What one check found. `sent`/`received`/`expected` explain a non-success to a human."""

    id: str
    status: Status
    message: str
    era: str | None = None
    sent: str | None = None
    received: str | None = None
    expected: str | None = None
    expected_failure: bool = False

    @property
    def spec(self) -> CheckSpec:
        return CHECKS_BY_ID[self.id]

    @property
    def requirements(self) -> tuple[str, ...]:
        return self.spec.requirements

    @property
    def scenario(self) -> str:
        return self.spec.scenario

    @property
    def key(self) -> str:
        """Unique within a run: the check ID, with the era for per-era checks."""
        return f"{self.id}[{self.era}]" if self.era else self.id

    def to_json(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "id": self.id,
            "scenario": spec.scenario,
            "profile": spec.profile,
            "era": self.era,
            "status": self.status.value,
            "severity": spec.severity.value,
            "requirements": list(spec.requirements),
            "levels": {r: REQUIREMENTS[r].level for r in spec.requirements},
            "section": spec.section,
            "title": spec.title,
            "message": self.message,
            "sent": self.sent,
            "received": self.received,
            "expected": self.expected,
            "hint": spec.hint or None,
            "expected_failure": self.expected_failure,
        }


@dataclass(frozen=True)
class EraInfo:
    """A protocol era the session scenarios ran in and what the client actually negotiated."""

    era: str
    mode: str
    negotiated: str | None


@dataclass(frozen=True)
class ProfileRun:
    """An optional profile the run was asked for: whether its checks ran, or why the whole profile was skipped."""

    name: str
    ran: bool
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": "ran" if self.ran else "skipped", "reason": self.reason or None}


@dataclass
class BaselineOutcome:
    """How the run compares with an --expected-failures file."""

    expected: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Everything a run found, in run order."""

    target: str
    results: list[CheckResult] = field(default_factory=list)
    eras: list[EraInfo] = field(default_factory=list)
    profiles: list[ProfileRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baseline: BaselineOutcome | None = None
    fatal: str | None = None
    duration_s: float = 0.0
    strict: bool = False

    def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for result in self.results:
            counts[result.status.value] += 1
        return counts

    def failures(self) -> list[CheckResult]:
        """MUST failures that are not listed as expected."""
        return [r for r in self.results if r.status is Status.FAILURE and not r.expected_failure]

    def warnings(self) -> list[CheckResult]:
        """SHOULD warnings that are not listed as expected."""
        return [r for r in self.results if r.status is Status.WARNING and not r.expected_failure]

    @property
    def exit_code(self) -> int:
        """0 every MUST passed; 1 a MUST failed, the baseline is stale, or --strict and a warning; 3 unreachable."""
        if self.fatal is not None:
            return 3
        if self.failures() or (self.baseline is not None and self.baseline.stale):
            return 1
        if self.strict and self.warnings():
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": "mcp-pd-conformance",
            "spec": "MCP Progressive Disclosure v2.1",
            "target": self.target,
            "eras": [asdict(e) for e in self.eras],
            "profiles": [p.to_json() for p in self.profiles],
            "duration_s": round(self.duration_s, 3),
            "fatal": self.fatal,
            "notes": self.notes,
            "checks": [r.to_json() for r in self.results],
            "summary": self.counts(),
            "expected_failures": asdict(self.baseline) if self.baseline is not None else None,
            "strict": self.strict,
            "verdict": "PASS" if self.exit_code == 0 else "FAIL",
            "exit_code": self.exit_code,
        }
