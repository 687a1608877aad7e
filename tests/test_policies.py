"""Grants, idle expiry and fetch rate limits with a controlled clock (spec 5.1, 5.2, 10.3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_pd import MemoryGrantStore, RateLimit, system_prompt_guidance
from mcp_pd._policy import FetchRateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def v(*names: str, version: str = "v1") -> dict[str, str]:
    return {name: version for name in names}


@pytest.mark.req("PD-5.1-04", "PD-5.2-04", "PD-10.3-02")
def test_grants_are_per_session_and_expire_when_idle() -> None:
    clock = Clock()
    grants = MemoryGrantStore(idle_timeout=60, timer=clock)
    grants.grant_now("s1", v("a", "b"))
    grants.grant_now("s2", v("c"))
    assert grants.version_now("s1", "a") == "v1"
    assert grants.version_now("s1", "c") is None
    assert grants.version_now("s2", "a") is None
    clock.now += 50
    assert grants.version_now("s1", "b") == "v1"  # use slides the idle timeout
    clock.now += 50
    assert grants.version_now("s1", "a") == "v1"
    assert grants.version_now("s2", "c") is None  # idle for 100 s: expired
    assert len(grants) == 1
    grants.forget("s1")
    assert len(grants) == 0


def test_grant_store_bound_evicts_oldest_session_not_a_random_one() -> None:
    grants = MemoryGrantStore(max_sessions=2)
    grants.grant_now("old", v("a"))
    grants.grant_now("mid", v("a"))
    grants.grant_now("new", v("a"))
    assert grants.version_now("old", "a") is None
    assert grants.version_now("mid", "a") == "v1"
    assert grants.version_now("new", "a") == "v1"


@pytest.mark.anyio
@pytest.mark.req("PD-5.1-01", "PD-5.1-03")
async def test_grants_accumulate_without_duplicates_and_stay_exact_past_a_few_tools() -> None:
    grants = MemoryGrantStore()
    await grants.grant("s", v("a", "b"))
    await grants.grant("s", v("b", "c"))
    assert grants.granted("s") == v("a", "b", "c")
    # A later read of a newer version replaces the older one: the grant follows what was read last.
    await grants.grant("s", v("a", version="v2"))
    assert await grants.version("s", "a") == "v2"
    many = [f"tool_{i}" for i in range(40)]  # past the short-tuple form: the store switches representation
    for start in range(0, 40, 7):
        await grants.grant("s", v(*many[start : start + 7]))
    assert grants.granted("s") == {**v("b", "c"), "a": "v2", **v(*many)}
    assert all(grants.version_now("s", name) == "v1" for name in many)
    assert grants.version_now("s", "tool_40") is None
    assert grants.version_now("other", "a") is None


@pytest.mark.req("PD-10.3-01")
def test_token_bucket() -> None:
    clock = Clock()
    limiter = FetchRateLimiter(RateLimit(per_second=2, burst=3), timer=clock)
    assert [limiter.acquire("s") for _ in range(3)] == [0, 0, 0]
    wait = limiter.acquire("s")
    assert 0 < wait <= 0.5
    assert limiter.acquire("other") == 0
    clock.now += 0.5
    assert limiter.acquire("s") == 0
    with pytest.raises(ValueError, match="per_second"):
        RateLimit(per_second=0)


@pytest.mark.req("PD-8.2-01", "PD-8.2-02")
def test_system_prompt_guidance_covers_the_four_points() -> None:
    text = system_prompt_guidance("resource:///tool_descriptions")
    assert "tools/list" in text  # 1: the two stages
    assert "enough to choose" in text  # 2: minimal entries suffice for selection
    assert "Never read the resource without ?tools=" in text  # 3: no unscoped fetches
    assert "Before calling a tool, read" in text  # 1: select, then fetch
    assert "resource:///tool_descriptions?tools=TOOL_NAME" in text  # 4: example syntax


def test_interpretations_quote_the_guidance_verbatim() -> None:
    text = (Path(__file__).resolve().parents[1] / "spec" / "interpretations.md").read_text()
    section = text.split("## I-9", 1)[1].split("\n## ", 1)[0]
    quoted = " ".join(line[2:] for line in section.splitlines() if line.startswith("> "))
    assert re.sub(r"\s+", " ", quoted) == system_prompt_guidance("resource:///tool_descriptions")
