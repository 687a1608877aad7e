"""Helpers for the agent tests: recorded API responses served through the SDKs' own HTTP layer.

Each recording (tests/agent/recordings/*.json) is a hand-written, realistic sequence of API responses for
one task. `RecordedAPI` is an httpx2 MockTransport handler that answers each request with the next
response and keeps the request bodies, so a test can check what the loop sent (system prompt, tools,
tool results) while the real loop runs against the real reference server over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

RECORDINGS = Path(__file__).parent / "recordings"


def load_recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))


class RecordedAPI:
    """Replays recorded responses in order; records every request (path and JSON body)."""

    def __init__(self, responses: list[dict[str, Any]], path: str) -> None:
        self.responses = list(responses)
        self.path = path
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == self.path, f"unexpected endpoint {request.url.path}"
        self.requests.append(json.loads(request.content))
        if not self.responses:
            return httpx2.Response(500, json={"error": {"message": "recording exhausted"}})
        return httpx2.Response(200, json=self.responses.pop(0), headers={"content-type": "application/json"})

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Anthropic tool_result blocks in a request body's last user message."""
    last = body["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [block for block in content if block.get("type") == "tool_result"]
