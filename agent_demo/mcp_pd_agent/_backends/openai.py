"""OpenAI-compatible back-end: Chat Completions with function tools, through the official `openai` SDK.

Chat Completions is what local model servers (llama.cpp, vLLM, Ollama, LM Studio, ...) implement, so
`--base-url http://127.0.0.1:8080/v1` (or `OPENAI_BASE_URL`) points the demo at one; without a key a
placeholder is sent, which local servers ignore. `--model` / `MCP_PD_DEMO_MODEL` picks the model.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from mcp_pd_agent._loop import AssistantTurn, ModelRequest, ToolCall, ToolOutputs, UserMessage

__all__ = ["DEFAULT_MODEL", "OpenAIBackend", "to_messages", "to_tools"]

DEFAULT_MODEL: Final = "gpt-5.5"


def to_tools(request: ModelRequest) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": f.name, "description": f.description, "parameters": f.parameters}}
        for f in request.functions
    ]


def to_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """System prompt + the loop's history in Chat Completions form."""
    result: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for message in request.messages:
        if isinstance(message, UserMessage):
            result.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolOutputs):
            result += [{"role": "tool", "tool_call_id": o.call_id, "content": o.text} for o in message.outputs]
        else:
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                    }
                    for c in message.calls
                ]
            result.append(entry)
    return result


def _arguments(raw: str | None) -> dict[str, Any]:
    """Parse a tool call's JSON arguments; malformed JSON becomes {} (the server then explains what is missing)."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class OpenAIBackend:
    """A model behind `openai.AsyncOpenAI` (pass `client` to use your own, e.g. with a test transport)."""

    def __init__(
        self, client: Any, model: str = DEFAULT_MODEL, max_tokens: int = 1024, *, compatible: bool = False
    ) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        # OpenAI's own API wants max_completion_tokens; most compatible servers know only max_tokens.
        self.token_limit = "max_tokens" if compatible else "max_completion_tokens"

    @classmethod
    def from_environment(
        cls, *, model: str | None = None, base_url: str | None = None, max_tokens: int = 1024
    ) -> OpenAIBackend:
        try:
            import openai
        except ImportError as exc:
            raise ImportError("the openai back-end needs the SDK: pip install openai") from exc
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = os.environ.get("OPENAI_API_KEY") or ("not-needed" if base_url else None)
        if api_key is None:
            raise ValueError("the openai back-end needs OPENAI_API_KEY (or --base-url for a local server)")
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url)
        return cls(client, model or DEFAULT_MODEL, max_tokens, compatible=base_url is not None)

    @property
    def label(self) -> str:
        return f"openai-compatible {self.model}"

    async def respond(self, request: ModelRequest) -> AssistantTurn:
        response = await self.client.chat.completions.create(
            model=self.model,
            messages=to_messages(request),
            tools=to_tools(request),
            **{self.token_limit: self.max_tokens},
        )
        message = response.choices[0].message
        calls = tuple(
            ToolCall(call.id, call.function.name, _arguments(call.function.arguments))
            for call in message.tool_calls or []
            if getattr(call, "type", "function") == "function"
        )
        return AssistantTurn((message.content or "").strip(), calls)

    async def aclose(self) -> None:
        await self.client.close()
