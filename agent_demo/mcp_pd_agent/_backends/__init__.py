"""Back-ends: the offline planner (default) and the Anthropic / OpenAI-compatible SDKs (optional extras).

The SDKs are imported only when their back-end is created, so the package works without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

from mcp_pd_agent._loop import Backend

from .planner import MISSTEPS, PlannerBackend

__all__ = ["BACKENDS", "MISSTEPS", "PlannerBackend", "create_backend", "resolve_backend_name"]

BACKENDS: Final = ("planner", "anthropic", "openai")
ENV_BACKEND: Final = "MCP_PD_DEMO_BACKEND"


def resolve_backend_name(name: str | None) -> str:
    """The flag, else $MCP_PD_DEMO_BACKEND, else 'planner'."""
    chosen = (name or os.environ.get(ENV_BACKEND) or "planner").strip().lower()
    if chosen not in BACKENDS:
        raise ValueError(f"unknown back-end {chosen!r}: choose one of {', '.join(BACKENDS)}")
    return chosen


def create_backend(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    missteps: Iterable[str] = (),
    max_tokens: int = 1024,
) -> Backend:
    """A back-end by name. Model back-ends read their keys from the environment, as their SDKs do."""
    if name == "planner":
        return PlannerBackend(missteps)
    if name == "anthropic":
        from .anthropic import AnthropicBackend

        return AnthropicBackend.from_environment(model=model, base_url=base_url, max_tokens=max_tokens)
    if name == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend.from_environment(model=model, base_url=base_url, max_tokens=max_tokens)
    raise ValueError(f"unknown back-end {name!r}: choose one of {', '.join(BACKENDS)}")
