"""The Anthropic and OpenAI back-ends, driven by recorded API responses through each SDK's own HTTP layer.

The real loop runs against the real reference server over stdio; only the model is a recording (a
recording may name its host: "resources" by default, or "tools-only"; and the server's mode: "progressive" by
default, or "catalog"). No network: the SDK clients get an httpx2 MockTransport.
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
        async with connect(ServerSpec.reference(mode=data.get("mode", "progressive"))) as server:
            run = await run_agent(server, backend, task.prompt, host=data.get("host", "resources"))
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
    assert len(tools) == 22  # 20 minimal entries + the server's describe_tools entry + the synthetic reader
    assert tools["calculate"]["input_schema"] == {"type": "object", "additionalProperties": True}
    assert tools["read_tool_descriptions"]["input_schema"]["required"] == ["tools"]
    assert "resource:///tool_descriptions" in tools["read_tool_descriptions"]["description"]
    # the describe tool is passed on as the server lists it: its small real schema, not a placeholder
    assert tools["describe_tools"]["input_schema"]["properties"]["tools"]["type"] == "array"

    # the error the server gave went back to the model as an error tool_result it could act on
    (refused,) = tool_results(api.requests[1])
    assert refused["is_error"] is True and refused["tool_use_id"] == "toolu_01Hq8vR2m01KcYt5WnE3bPa"
    document = json.loads(refused["content"])
    assert document["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert document["error"]["resource_uri"] == "resource:///tool_descriptions?tools=calculate"
    assert document["error"]["describe_tool_call"] == {"name": "describe_tools", "arguments": {"tools": ["calculate"]}}
    # ...the assistant turn with the failed tool_use was replayed before it
    assert api.requests[1]["messages"][1]["content"][1]["type"] == "tool_use"
    (definition,) = tool_results(api.requests[2])
    assert definition["is_error"] is False and '"inputSchema"' in definition["content"]
    (result,) = tool_results(api.requests[3])
    assert json.loads(result["content"])["result"] == 397.8


@pytest.mark.anyio
async def test_anthropic_in_a_tools_only_host_fetches_with_the_describe_tool():
    task, run, api = await _run("anthropic_tools_only", _anthropic)
    assert check_run(task, run) is None
    assert [(s.kind, s.name) for s in run.steps] == [
        ("call", "calculate"),
        ("read", "describe_tools"),
        ("call", "calculate"),
        ("answer", ""),
    ]
    assert run.steps[0].error_code == "TOOL_DESCRIPTION_REQUIRED"
    assert run.fetched_tools() == ["calculate"] and len(api.requests) == 4

    first = api.requests[0]
    tools = {t["name"]: t for t in first["tools"]}
    # only what the server lists: no reader function; the describe tool with its real schema
    assert len(tools) == 21 and "read_tool_descriptions" not in tools
    assert tools["describe_tools"]["input_schema"]["required"] == ["tools"]
    assert "read_tool_descriptions" not in first["system"]
    assert 'describe_tools(tools=["TOOL_NAME"])' in first["system"] and "describe_tool_call" in first["system"]

    # the refusal names the way out for a model that can only call tools, and the model took it
    (refused,) = tool_results(api.requests[1])
    error = json.loads(refused["content"])["error"]
    assert refused["is_error"] is True and error["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert error["describe_tool_call"] == {"name": "describe_tools", "arguments": {"tools": ["calculate"]}}
    assert run.steps[1].arguments == error["describe_tool_call"]["arguments"]
    # describe_tools answered with the same document the resource read gives, and it authorized the call
    (described,) = tool_results(api.requests[2])
    assert described["is_error"] is False
    async with connect(ServerSpec.reference()) as server:
        read = await server.read_descriptions(["calculate"])
    assert described["content"] == read.text
    (result,) = tool_results(api.requests[3])
    assert json.loads(result["content"])["result"] == 2**64 - 1


@pytest.mark.anyio
async def test_anthropic_in_catalog_mode_searches_describes_and_calls_through_call_tool():
    task, run, api = await _run("anthropic_catalog_mode", _anthropic)
    assert check_run(task, run) is None and run.setup == "catalog"
    assert [(s.kind, s.name, s.via) for s in run.steps] == [
        ("search", "search_tools", ""),
        ("read", "describe_tools", ""),
        ("call", "convert_units", "call_tool"),
        ("call", "convert_units", "call_tool"),
        ("answer", "", ""),
    ]
    assert run.error_codes() == ["INVALID_ARGUMENTS"] and len(api.requests) == 5

    first = api.requests[0]
    # nothing special for the back-end: the four meta-tools are ordinary tools with their real schemas
    tools = {t["name"]: t for t in first["tools"]}
    assert list(tools) == ["search_tools", "browse_tools", "describe_tools", "call_tool"]
    assert tools["call_tool"]["input_schema"]["required"] == ["name"]
    assert 'search_tools(query="what you want to do")' in first["system"]
    assert "This server has more tools than it lists" in first["system"]

    (found,) = tool_results(api.requests[1])
    assert json.loads(found["content"])["results"][0]["name"] == "convert_units"
    # call_tool checked the arguments against the schema the model had just read, and ran nothing
    (refused,) = tool_results(api.requests[3])
    error = json.loads(refused["content"])["error"]
    assert refused["is_error"] is True and error["code"] == "INVALID_ARGUMENTS"
    (problem,) = error["problems"]
    assert (problem["field"], problem["rule"]) == ("from_unit", "enum") and "mi" in problem["schema"]["enum"]
    (result,) = tool_results(api.requests[4])
    assert json.loads(result["content"])["result"] == pytest.approx(42.1648128)
    assert run.answer == "26.2 mi is about 42.16 km."
    # the ledger counts the search answer on top of what the tools-only host would carry
    assert len(run.context.searched) == 1 and run.context.searched[0] == found["content"]


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
    assert names[0] == "describe_tools"  # the server lists it first; the resources host passes it on too
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


def test_anthropic_backend_needs_a_key_a_token_or_a_base_url(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        create_backend("anthropic")


def test_demo_stops_when_the_backend_fails_its_first_request(monkeypatch):
    """An endpoint nobody answers: the first task says so and the demo ends (exit 2), instead of 14 identical
    failures and a ledger of zeros (issue 23.5)."""
    import socket

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with socket.socket() as probe:  # a loopback port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "mcp_pd", "demo", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "[1/14" in done.stdout and "[2/14" not in done.stdout
    assert "failed on its first request" in done.stderr and "--base-url" in done.stderr
    assert "APIConnectionError" in done.stderr


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
