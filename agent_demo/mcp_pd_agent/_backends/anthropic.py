"""Anthropic back-end: the Messages API through the official `anthropic` SDK (optional extra).

Functions become `tools` (`input_schema`); the loop's history becomes alternating user/assistant
messages with `tool_use` / `tool_result` blocks. Credentials and base URL resolve as the SDK does
(`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, ...); `--model` / `MCP_PD_DEMO_MODEL` picks the model.
"""

from __future__ import annotations

import os
from typing import Any, Final

from mcp_pd_agent._loop import AssistantTurn, Message, ModelRequest, ToolCall, ToolOutputs, UserMessage

__all__ = ["DEFAULT_MODEL", "AnthropicBackend", "to_messages", "to_tools"]

DEFAULT_MODEL: Final = "claude-sonnet-5-5"


def to_tools(request: ModelRequest) -> list[dict[str, Any]]:
    return [{"name": f.name, "description": f.description, "input_schema": f.parameters} for f in request.functions]


def to_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The loop's history in Messages API form."""
    result: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            result.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolOutputs):
            blocks = [
                {"type": "tool_result", "tool_use_id": o.call_id, "content": o.text, "is_error": o.is_error}
                for o in message.outputs
            ]
            result.append({"role": "user", "content": blocks})
        else:
            content: list[dict[str, Any]] = []
            if message.text:
                content.append({"type": "text", "text": message.text})
            content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.calls]
            result.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no reply)"}]})
    return result


class AnthropicBackend:
    """Claude through `anthropic.AsyncAnthropic` (pass `client` to use your own, e.g. with a test transport)."""

    def __init__(self, client: Any, model: str = DEFAULT_MODEL, max_tokens: int = 1024) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens

    @classmethod
    def from_environment(
        cls, *, model: str | None = None, base_url: str | None = None, max_tokens: int = 1024
    ) -> AnthropicBackend:
        try:
            import anthropic
        except ImportError as exc:
            raise ImportError("the anthropic back-end needs the SDK: pip install anthropic") from exc
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN") or base_url):
            # Else the SDK fails only at the first request, and every task would fail the same way.
            raise ValueError("the anthropic back-end needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or --base-url)")
        client = anthropic.AsyncAnthropic(base_url=base_url)
        return cls(client, model or DEFAULT_MODEL, max_tokens)

    @property
    def label(self) -> str:
        return f"anthropic {self.model}"

    async def respond(self, request: ModelRequest) -> AssistantTurn:
        response = await self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=request.system,
            tools=to_tools(request),
            messages=to_messages(request.messages),
        )
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                calls.append(ToolCall(block.id, block.name, dict(arguments)))
        return AssistantTurn("\n".join(t for t in texts if t).strip(), tuple(calls))

    async def aclose(self) -> None:
        await self.client.close()
