"""The Anthropic and OpenAI back-ends, driven by recorded API responses through each SDK's own HTTP layer.

The real loop runs against the real reference server over stdio; only the model is a recording. No
network: the SDK clients get an httpx2 MockTransport.
"""

from __future__ import annotations

import json
import subprocess
import sys

import anthropic
import openai
import pytest
from agent.pdagent_fixtures import RecordedAPI, load_recording, tool_results
from mcp_pd_agent import TASKS, ServerSpec, check_run, connect, create_backend, resolve_backend_name, run_agent
from mcp_pd_agent._backends.anthropic import AnthropicBackend
from mcp_pd_agent._backends.openai import OpenAIBackend

TASK = {t.key: t for t in TASKS}


def _anthropic(api: RecordedAPI) -> AnthropicBackend:
    client = anthropic.AsyncAnthropic(api_key="test-key", max_retries=0, http_client=api.client())
    return AnthropicBackend(client, model="claude-sonnet-5-5")


def _openai(api: RecordedAPI) -> OpenAIBackend:
    client = openai.AsyncOpenAI(api_key="test-key", max_retries=0, http_client=api.client())
    return OpenAIBackend(client, model="gpt-5.5")


async def _run(recording: str, backend_for):
    data = load_recording(recording)
    path = "/v1/messages" if data["api"] == "anthropic" else "/v1/chat/completions"
    api = RecordedAPI(data["responses"], path)
    backend = backend_for(api)
    task = TASK[data["task"]]
    try:
        async with connect(ServerSpec.reference()) as server:
            run = await run_agent(server, backend, task.prompt)
    finally:
        await backend.aclose()
    return task, run, api


@pytest.mark.anyio
async def test_anthropic_recovers_from_tool_description_required():
    task, run, api = await _run("anthropic_call_first", _anthropic)
    assert check_run(task, run) is None
    assert [s.kind for s in run.steps] == ["call", "read", "call", "answer"]
    assert run.steps[0].error_code == "TOOL_DESCRIPTION_REQUIRED"
    assert run.answer == "17% of 2,340 is 397.8."
    assert len(api.requests) == 4

    first = api.requests[0]
    assert first["model"] == "claude-sonnet-5-5"
    assert "read_tool_descriptions" in first["system"] and "MISSING_TOOL_SELECTION" in first["system"]
    tools = {t["name"]: t for t in first["tools"]}
    assert len(tools) == 21  # 20 minimal entries + the synthetic reader
    assert tools["calculate"]["input_schema"] == {"type": "object", "additionalProperties": True}
    assert tools["read_tool_descriptions"]["input_schema"]["required"] == ["tools"]
    assert "resource:///tool_descriptions" in tools["read_tool_descriptions"]["description"]

    # the error the server gave went back to the model as an error tool_result it could act on
    (refused,) = tool_results(api.requests[1])
    assert refused["is_error"] is True and refused["tool_use_id"] == "toolu_01Hq8vR2m01KcYt5WnE3bPa"
    document = json.loads(refused["content"])
    assert document["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert document["error"]["resource_uri"] == "resource:///tool_descriptions?tools=calculate"
    # ...the assistant turn with the failed tool_use was replayed before it
    assert api.requests[1]["messages"][1]["content"][1]["type"] == "tool_use"
    (definition,) = tool_results(api.requests[2])
    assert definition["is_error"] is False and '"inputSchema"' in definition["content"]
    (result,) = tool_results(api.requests[3])
    assert json.loads(result["content"])["result"] == 397.8


@pytest.mark.anyio
async def test_anthropic_recovers_from_unknown_tool_name():
    task, run, api = await _run("anthropic_unknown_name", _anthropic)
    assert check_run(task, run) is None
    assert run.steps[0].error_code == "TOOL_NOT_FOUND"
    (not_found,) = tool_results(api.requests[1])
    entry = json.loads(not_found["content"])["unit_converter"]
    assert entry["error"] == "Tool 'unit_converter' not found"
    assert "convert_units" in entry["available_tools"]
    assert run.fetched_tools() == ["convert_units"]


@pytest.mark.anyio
async def test_openai_recovers_from_missing_tool_selection_and_uses_three_tools():
    task, run, api = await _run("openai_create_assign", _openai)
    assert check_run(task, run) is None
    assert run.steps[0].error_code == "MISSING_TOOL_SELECTION"
    assert [s.name for s in run.calls(ok=True)] == ["list_projects", "create_task", "assign_task"]
    assert run.answer is not None and "carol" in run.answer

    first = api.requests[0]
    assert (
        first["messages"][0]["role"] == "system" and "Instructions from the server" in first["messages"][0]["content"]
    )
    assert first["messages"][1] == {"role": "user", "content": task.prompt}
    assert first["max_completion_tokens"] == 1024
    names = [t["function"]["name"] for t in first["tools"]]
    assert names[-1] == "read_tool_descriptions" and "create_task" in names
    # the refused read came back as a tool message carrying the spec 6.1 document
    second = api.requests[1]["messages"]
    assert second[2]["tool_calls"][0]["function"] == {"name": "read_tool_descriptions", "arguments": '{"tools": []}'}
    refused = json.loads(second[3]["content"])
    assert second[3]["role"] == "tool" and refused["error"]["code"] == "MISSING_TOOL_SELECTION"
    assert refused["error"]["examples"][0].startswith("resource:///tool_descriptions?tools=")
    # the last request carried the whole conversation: 6 tool round trips
    assert sum(m["role"] == "tool" for m in api.requests[-1]["messages"]) == 5


def test_backend_selection(monkeypatch):
    monkeypatch.delenv("MCP_PD_DEMO_BACKEND", raising=False)
    assert resolve_backend_name(None) == "planner"
    monkeypatch.setenv("MCP_PD_DEMO_BACKEND", "OpenAI")
    assert resolve_backend_name(None) == "openai"
    assert resolve_backend_name("anthropic") == "anthropic"
    with pytest.raises(ValueError, match="unknown back-end"):
        resolve_backend_name("gemini")


def test_openai_backend_needs_a_key_or_a_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        create_backend("openai")


@pytest.mark.anyio
async def test_openai_backend_for_a_local_server_uses_max_tokens(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = create_backend("openai", model="qwen3-8b", base_url="http://127.0.0.1:8080/v1")
    try:
        assert isinstance(backend, OpenAIBackend)
        assert backend.token_limit == "max_tokens" and backend.label == "openai-compatible qwen3-8b"
        assert str(backend.client.base_url) == "http://127.0.0.1:8080/v1/"
    finally:
        await backend.aclose()


def test_sdks_are_imported_lazily():
    code = "import sys, mcp_pd_agent; print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
