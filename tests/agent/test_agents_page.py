"""docs/agents.md (issue 40.5): each snippet is run as written, against the real reference server over stdio, with the
real SDK client objects; only the model is scripted (its answers served through the SDK's own HTTP layer, a
MockTransport: no network). What each request carried is checked: strict schemas once described, deferred
definitions with Anthropic's tool search, and the server's real answers going back to the model."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import openai
import pytest
from agent.pdagent_fixtures import RecordedAPI, tool_results
from mcp_pd_agent import ServerSpec, connect, loose_arguments, strict_schema
from pdtest import ROOT

PAGE = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def snippet(name: str) -> dict[str, Any]:
    """The page's `agents-example: NAME` block, executed: its functions."""
    found = re.search(rf"<!-- agents-example: {name} -->\n```python\n(.*?)```", PAGE, re.S)
    assert found is not None, name
    namespace: dict[str, Any] = {"__name__": f"agents_{name}"}
    exec(compile(found.group(1), f"docs/agents.md:{name}", "exec"), namespace)
    return namespace


def _openai_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }
    return _completion(message, "tool_calls")


def _completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-5.5",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


@pytest.mark.req("PDX-AGENT-01")
async def test_openai_loop_describes_then_calls_with_a_strict_schema() -> None:
    api = RecordedAPI(
        [
            _openai_call("call_1", "describe_tools", {"tools": ["list_tasks"]}),
            # Under the strict schema every property is sent; null means "left out".
            _openai_call(
                "call_2",
                "list_tasks",
                {"project_id": None, "status": "open", "assignee": "alice", "priority": None, "due_before": None},
            ),
            _completion({"role": "assistant", "content": "alice has open tasks."}),
        ],
        "/v1/chat/completions",
    )
    client = openai.AsyncOpenAI(api_key="test-key", max_retries=0, http_client=api.client())
    answer = await snippet("openai")["answer"](client, ServerSpec.reference(), "What is alice working on?")
    assert answer == "alice has open tasks."
    first, second, third = api.requests
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert "strict" not in offered["list_tasks"]  # a minimal entry is open: not strict until described
    assert offered["describe_tools"]["strict"] is True
    assert "workflow" in first["messages"][0]["content"].lower() or first["messages"][0]["content"]
    described = {t["function"]["name"]: t["function"] for t in second["tools"]}["list_tasks"]
    assert described["strict"] is True
    parameters = described["parameters"]
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) == set(parameters["properties"]) >= {"project_id", "status", "assignee"}
    assert "default" not in json.dumps(parameters)
    # The server's real answer went back: alice's open tasks from the seeded tracker, called without the nulls.
    result = third["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_2"
    assert "alice" in result["content"] and "TOOL_DESCRIPTION_REQUIRED" not in result["content"]
    assert "INVALID_ARGUMENTS" not in result["content"]


def _message(*content: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


@pytest.mark.req("PDX-AGENT-02")
async def test_anthropic_loop_defers_every_definition_and_describes_before_the_call() -> None:
    api = RecordedAPI(
        [
            _message({"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "6 * 7"}}),
            _message({"type": "text", "text": "42."}, stop="end_turn"),
        ],
        "/v1/messages",
    )
    client = anthropic.AsyncAnthropic(api_key="test-key", max_retries=0, http_client=api.client())
    answer = await snippet("anthropic")["answer"](client, ServerSpec.reference(), "What is 6 * 7?")
    assert answer == "42."
    first, second = api.requests
    tools = {t["name"]: t for t in first["tools"]}
    assert tools.pop("tool_search_tool_bm25")["type"] == "tool_search_tool_bm25_20251119"
    assert len(tools) == 20 and all(t["defer_loading"] is True for t in tools.values())
    assert tools["calculate"]["input_schema"]["required"] == ["expression"]  # the full definition, not the minimal
    assert tools["calculate"]["input_examples"][0] == {"expression": "(1200 * 1.19) / 12"}
    # The call ran in the working session although only the reader's session had read the definitions: the loop
    # described calculate there first, so the gate let it through and the real result went back.
    (result,) = tool_results(second)
    assert result["is_error"] is False and json.loads(result["content"])["result"] == 42


async def test_a_call_without_describe_in_the_working_session_is_refused_by_the_server() -> None:
    # What Toolset.run's describe-first prevents: the reader's grants do not reach another session.
    async with connect(ServerSpec.reference()) as reader:
        await reader.fetch_all_definitions()
        async with connect(ServerSpec.reference()) as other:
            refused = await other.call_tool("calculate", {"expression": "1"})
    assert refused.error_code == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PDX-AGENT-01")
async def test_loader_binds_full_definitions_and_says_why_a_name_is_wrong() -> None:
    load_tools = snippet("loader")["load_tools"]
    async with connect(ServerSpec.reference()) as server:
        (definition,) = await load_tools(server, ["convert_units", "no_such_tool"])
        assert definition["name"] == "convert_units" and "from_unit" in definition["inputSchema"]["properties"]
        called = await server.call_tool("convert_units", {"value": 1, "from_unit": "km", "to_unit": "m"})
        assert not called.is_error, called.text
        with pytest.raises(LookupError, match=r"TOOL_NOT_FOUND|not found|no_such"):
            await load_tools(server, ["no_such_tool"])


@pytest.mark.req("PDX-AGENT-01")
def test_strict_schema_and_loose_arguments_round_trip() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "default": "x"},
            "limit": {"type": "integer"},
            "filter": {"type": "object", "properties": {"tag": {"type": "string"}, "mine": {"type": "boolean"}}},
        },
        "required": ["q"],
    }
    strict = strict_schema(schema)
    assert strict["required"] == ["q", "limit", "filter"] and strict["additionalProperties"] is False
    assert strict["properties"]["limit"]["type"] == ["integer", "null"]
    assert strict["properties"]["q"] == {"type": "string"}
    nested = strict["properties"]["filter"]
    assert nested["type"] == ["object", "null"]
    assert nested["additionalProperties"] is False and nested["required"] == ["tag", "mine"]
    assert nested["properties"]["tag"]["type"] == ["string", "null"]
    assert schema["properties"]["q"]["default"] == "x"  # the definition itself is untouched
    sent = {"q": "a", "limit": None, "filter": {"tag": None, "mine": True}}
    assert loose_arguments(sent, schema) == {"q": "a", "filter": {"mine": True}}
    with pytest.raises(ValueError, match="open object"):
        strict_schema({"type": "object", "additionalProperties": True})
