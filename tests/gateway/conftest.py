"""Fixtures for the gateway tests: every upstream is a real subprocess, and none may outlive its test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway.gwtest import marked_pids, npm_servers, wait_for_no_pids


@pytest.fixture(scope="session")
def npm() -> dict[str, Path]:
    return npm_servers()


@pytest.fixture
def mark() -> Iterator[str]:
    """A mark put in every upstream's environment; at teardown no process carrying it may be alive."""
    value = uuid.uuid4().hex
    yield value
    left = wait_for_no_pids(value)
    assert not left, f"upstream processes left behind: {left} (still {marked_pids(value)})"
