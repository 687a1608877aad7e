"""Results: one `CheckResult` per check (per protocol era for the session scenarios), what they showed of the gate
(`GateProof`), and the run's `Report`.

The gate (spec 5.1) has two halves, each shown by calls: an unfetched call is refused with TOOL_DESCRIPTION_REQUIRED,
and a fetch authorizes the call. A run in which some selected half was shown by no check (no tool the suite may call,
no probe it could send harmlessly, a failure listed as expected) is not a plain PASS: its verdict says which half was
not verified, and --strict fails it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal

from ._spec import CHECKS_BY_ID, REQUIREMENTS, CheckSpec

__all__ = [
    "GATE_CLAIMS",
    "BaselineOutcome",
    "CheckResult",
    "EraCoverage",
    "EraInfo",
    "GateProof",
    "ProfileRun",
    "Report",
    "Status",
    "gate_proofs",
]


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


# Each half of the gate, and the checks that show it, most direct first. A WARNING of the first refusal check is a
# refusal with TOOL_DESCRIPTION_REQUIRED sent as a protocol error: still the gate.
GATE_CLAIMS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (
        "unfetched calls are refused with TOOL_DESCRIPTION_REQUIRED",
        ("authorization/unfetched-call-refused", "grants/every-tool-gated", "grants/unsafe-tools-gated"),
    ),
    (
        "a fetch authorizes the call",
        ("authorization/fetch-authorizes", "grants/each-read-tool-authorized", "grants/mixed-read-authorizes-known"),
    ),
)
_REFUSED_AS_ERROR: Final = "authorization/unfetched-call-refused"
GateState = Literal["verified", "failed", "not verified", "not selected"]


@dataclass(frozen=True)
class GateProof:
    """What the run showed of one half of the gate: the check that showed it (`check`), or why nothing did."""

    claim: str
    state: GateState
    check: str | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "status": self.state, "check": self.check, "reason": self.reason or None}


def gate_proofs(results: list[CheckResult]) -> list[GateProof]:
    """Each half of the gate (GATE_CLAIMS): failed (a check of it failed), verified (one succeeded), not verified
    (its checks ran, but were skipped, or failed as expected), or not selected (--only/--skip left out its checks)."""
    proofs = []
    for claim, checks in GATE_CLAIMS:
        mine = sorted((r for r in results if r.id in checks), key=lambda r: checks.index(r.id))
        failed = [r for r in mine if r.status is Status.FAILURE]
        shown = next(
            (
                r
                for r in mine
                if r.status is Status.SUCCESS or (r.status is Status.WARNING and r.id == _REFUSED_AS_ERROR)
            ),
            None,
        )
        if not mine:
            proofs.append(GateProof(claim, "not selected", reason="its checks were left out (--only/--skip)"))
        elif any(not r.expected_failure for r in failed):
            first = next(r for r in failed if not r.expected_failure)
            proofs.append(GateProof(claim, "failed", first.key, f"{first.key} failed"))
        elif failed:
            reason = f"{failed[0].key} failed (an expected failure, in the --expected-failures file)"
            proofs.append(GateProof(claim, "not verified", reason=reason))
        elif shown is not None:
            proofs.append(GateProof(claim, "verified", shown.key))
        else:
            why = list(dict.fromkeys(r.message for r in mine))
            proofs.append(GateProof(claim, "not verified", reason="; ".join(why[:2])))
    return proofs


@dataclass(frozen=True)
class EraInfo:
    """A protocol era the session scenarios ran in and what the client actually negotiated."""

    era: str
    mode: str
    negotiated: str | None


@dataclass(frozen=True)
class EraCoverage:
    """A protocol era the run was asked for: whether requests of it were answered in its protocol, by what or why
    not (the report's per-era line)."""

    era: str
    exercised: bool
    how: str

    def to_json(self) -> dict[str, Any]:
        return {"era": self.era, "exercised": self.exercised, "detail": self.how}


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
    coverage: list[EraCoverage] = field(default_factory=list)
    profiles: list[ProfileRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baseline: BaselineOutcome | None = None
    fatal: str | None = None
    # Why the run could not start: the server could not be started or reached, or it refused the credentials.
    fatal_kind: Literal["unreachable", "unauthorized"] = "unreachable"
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
    def gate(self) -> list[GateProof]:
        """What the run showed of each half of the gate (see GATE_CLAIMS)."""
        return gate_proofs(self.results)

    def gate_unverified(self) -> list[GateProof]:
        """The halves of the gate the run could not show (selected, yet no check showed them, none failed)."""
        return [p for p in self.gate if p.state == "not verified"]

    @property
    def exit_code(self) -> int:
        """0 every MUST passed (with or without the gate verified); 1 a MUST failed, the baseline is stale, or
        --strict and a warning or a gate not verified; 3 unreachable."""
        if self.fatal is not None:
            return 3
        if self.failures() or (self.baseline is not None and self.baseline.stale):
            return 1
        if self.strict and (self.warnings() or self.gate_unverified()):
            return 1
        return 0

    @property
    def verdict(self) -> str:
        """PASS, PASS, GATE NOT VERIFIED (exit 0, but a half of the gate was not shown), or FAIL."""
        if self.exit_code != 0:
            return "FAIL"
        return "PASS, GATE NOT VERIFIED" if self.gate_unverified() else "PASS"

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": "mcp-pd-conformance",
            "spec": "MCP Progressive Disclosure v2.1",
            "target": self.target,
            "eras": [asdict(e) for e in self.eras],
            "era_coverage": [c.to_json() for c in self.coverage],
            "profiles": [p.to_json() for p in self.profiles],
            "duration_s": round(self.duration_s, 3),
            "fatal": self.fatal,
            "fatal_kind": self.fatal_kind if self.fatal is not None else None,
            "notes": self.notes,
            "checks": [r.to_json() for r in self.results],
            "summary": self.counts(),
            "expected_failures": asdict(self.baseline) if self.baseline is not None else None,
            "strict": self.strict,
            "gate": [p.to_json() for p in self.gate],
            "verdict": self.verdict,
            "exit_code": self.exit_code,
        }
