"""spec/requirements.toml <-> tests, both ways, and spec/coverage.md kept true."""

from __future__ import annotations

import re

from pdtest_coverage import COVERAGE, citations, render, requirements


def test_requirement_ids_are_well_formed_and_unique() -> None:
    ids = [str(r["id"]) for r in requirements()]
    assert len(ids) == len(set(ids))
    anchors = set(re.findall(r'<a id="(i-\d+)"></a>', (COVERAGE.parent / "interpretations.md").read_text()))
    for req in requirements():
        if str(req["id"]).startswith("PDX-"):
            # Beyond the spec: the section names the interpretation that states the requirement.
            assert re.fullmatch(r"PDX-[A-Z]+-\d{2}", str(req["id"])), req["id"]
            assert str(req["section"]).lower() in anchors, req["section"]
        else:
            assert re.fullmatch(r"PD-\d+(\.\d+)?-\d{2}", str(req["id"])), req["id"]
            assert str(req["id"]).split("-")[1] == req["section"]
        assert req["level"] in {"MUST", "MUST NOT", "SHALL", "SHOULD", "MAY"}
        assert isinstance(req["testable"], bool)


def test_every_requirement_is_cited_by_a_test() -> None:
    cited = citations()
    missing = [str(r["id"]) for r in requirements() if str(r["id"]) not in cited]
    assert missing == [], f"requirements no test cites: {missing}"


def test_every_cited_id_exists() -> None:
    known = {str(r["id"]) for r in requirements()}
    unknown = sorted(set(citations()) - known)
    assert unknown == [], f"tests cite unknown IDs: {unknown}"


def test_coverage_table_is_current() -> None:
    assert COVERAGE.read_text() == render(), "spec/coverage.md is stale: run `python tests/pdtest_coverage.py`"
