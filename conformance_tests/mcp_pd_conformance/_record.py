"""The recorder the scenarios write results into; it turns a failed check into the status its severity implies."""

from __future__ import annotations

from collections.abc import Sequence

from ._model import CheckResult, Status
from ._probe import Exchange
from ._spec import CHECKS, CHECKS_BY_ID, Severity

__all__ = ["Recorder"]


class Recorder:
    """Collects `CheckResult`s; at most one per (check, era)."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []
        self._seen: set[tuple[str, str | None]] = set()

    def has(self, check_id: str, era: str | None = None) -> bool:
        return (check_id, era) in self._seen

    def _add(
        self,
        check_id: str,
        status: Status,
        message: str,
        era: str | None,
        exchange: Exchange | None = None,
        expected: str | None = None,
    ) -> None:
        if check_id not in CHECKS_BY_ID:
            raise KeyError(f"unregistered check {check_id!r}")
        if (check_id, era) in self._seen:
            return
        self._seen.add((check_id, era))
        self.results.append(
            CheckResult(
                id=check_id,
                status=status,
                message=message,
                era=era,
                sent=exchange.sent if exchange is not None else None,
                received=exchange.received if exchange is not None else None,
                expected=expected,
            )
        )

    def ok(self, check_id: str, message: str, *, era: str | None = None, exchange: Exchange | None = None) -> None:
        self._add(check_id, Status.SUCCESS, message, era, exchange)

    def fail(
        self,
        check_id: str,
        message: str,
        *,
        expected: str,
        era: str | None = None,
        exchange: Exchange | None = None,
    ) -> None:
        """The check did not pass: FAILURE for a MUST check, WARNING for a SHOULD, INFO otherwise."""
        severity = CHECKS_BY_ID[check_id].severity
        status = {Severity.MUST: Status.FAILURE, Severity.SHOULD: Status.WARNING}.get(severity, Status.INFO)
        self._add(check_id, status, message, era, exchange, expected)

    def judge(
        self,
        check_id: str,
        problems: Sequence[tuple[str, Exchange]],
        *,
        ok: str,
        expected: str,
        prefix: str = "",
        shown: int | None = 3,
        era: str | None = None,
    ) -> None:
        """SUCCESS with `ok` when there are no problems; else `fail` naming the first `shown` problems (all if None)
        after `prefix`, with the first problem's exchange as the evidence."""
        if not problems:
            self.ok(check_id, ok, era=era)
            return
        text = prefix + "; ".join(what for what, _ in problems[:shown])
        self.fail(check_id, text, expected=expected, era=era, exchange=problems[0][1])

    def warn(
        self,
        check_id: str,
        message: str,
        *,
        expected: str,
        era: str | None = None,
        exchange: Exchange | None = None,
    ) -> None:
        """Accepted, but not in the preferred form."""
        self._add(check_id, Status.WARNING, message, era, exchange, expected)

    def info(self, check_id: str, message: str, *, era: str | None = None, exchange: Exchange | None = None) -> None:
        self._add(check_id, Status.INFO, message, era, exchange)

    def skip(self, check_id: str, reason: str, *, era: str | None = None) -> None:
        self._add(check_id, Status.SKIPPED, reason, era)

    def spread(self, check_id: str, eras: Sequence[str]) -> None:
        """A per-era check recorded once for the run (a whole scenario skipped before any era was known) is reported
        per era instead, with that result's status and reason, so its keys are the era ones the report promises."""
        general = next((r for r in self.results if r.id == check_id and r.era is None), None)
        if general is None:
            return
        self.results.remove(general)
        self._seen.discard((check_id, None))
        for era in eras:
            self._add(check_id, general.status, general.message, era, expected=general.expected)

    def skip_scenario(
        self, scenario: str, reason: str, *, era: str | None = None, keep: frozenset[str] = frozenset()
    ) -> None:
        """SKIPPED for every check of `scenario` not yet recorded (for `era`), but those in `keep`."""
        for spec in CHECKS:
            if spec.scenario == scenario and spec.id not in keep:
                self.skip(spec.id, reason, era=era)
