"""The suite's judgement on its own: document parsing and the keyword heuristics, without a server."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_pd_conformance import Status
from mcp_pd_conformance._checks import Discovery
from mcp_pd_conformance._documents import classify_call, read_body, same_selection_uri, schema_detail
from mcp_pd_conformance._listing import extension_tools
from mcp_pd_conformance._probe import ErrorInfo, Exchange
from mcp_pd_conformance._record import Recorder
from mcp_pd_conformance._resource_listing import resource_listing
from mcp_pd_conformance._text import (
    call_example,
    explains_consequence,
    explains_fetch_first,
    explains_tools_list,
    parameter_docs,
)

SPEC_EXAMPLE_11_2 = {
    "uri": "resource:///tool_descriptions",
    "name": "Tool Descriptions - Required for tool use",
    "description": "WORKFLOW: Step 1: Pick tool from tools/list based on what it does. Step 2: Fetch full "
    "description: resource:///tool_descriptions?tools=TOOL_NAME. Step 3: Call tool with parameters learned. "
    "Must specify ?tools= parameter when fetching.",
    "mimeType": "application/json",
}


@pytest.mark.parametrize(
    ("schema", "minimal"),
    [
        (None, True),
        ({"type": "object", "additionalProperties": True}, True),
        ({"type": "object"}, True),
        ({"type": "object", "properties": {}, "required": []}, True),
        ({"type": "object", "properties": {"q": {"type": "string"}}}, False),
        ({"type": "object", "required": ["q"]}, False),
        ({"type": "object", "anyOf": [{}]}, False),
        ({"type": "object", "additionalProperties": {"type": "string"}}, False),
        ({"type": "string"}, False),
    ],
)
def test_minimal_schema_forms(schema: Any, minimal: bool) -> None:
    assert (schema_detail(schema) is None) == minimal


def _call(result: dict[str, Any] | None = None, error: ErrorInfo | None = None) -> Exchange:
    return Exchange("tools/call", {"name": "t"}, result, error)


def test_call_outcomes() -> None:
    tdr = {"error": {"code": "TOOL_DESCRIPTION_REQUIRED", "message": "m", "resource_uri": "u"}}
    assert classify_call(_call({"content": [], "isError": False})).kind == "ok"
    as_result = classify_call(_call({"isError": True, "structuredContent": tdr}))
    assert (as_result.kind, as_result.via, as_result.code) == ("refused", "result", "TOOL_DESCRIPTION_REQUIRED")
    text = [{"type": "text", "text": '{"error": {"code": "X"}}'}]
    text_only = classify_call(_call({"isError": True, "content": text}))
    assert (text_only.kind, text_only.code) == ("refused", "X")
    as_error = classify_call(_call(error=ErrorInfo(-32001, "m", tdr)))
    assert (as_error.kind, as_error.via, as_error.code) == ("refused", "jsonrpc", "TOOL_DESCRIPTION_REQUIRED")
    assert classify_call(_call(error=ErrorInfo(-32602, "bad", None))).kind == "error"
    assert classify_call(_call({"isError": True, "content": [{"type": "text", "text": "boom"}]})).kind == "error"


def test_selection_uris_compare_by_meaning() -> None:
    base = "resource:///tool_descriptions"
    assert same_selection_uri(f"{base}?tools=get_data", base, "get_data")
    assert same_selection_uri(f"{base}?tools=get%5Fdata", base, "get_data")
    assert not same_selection_uri(f"{base}?tools=other", base, "get_data")
    assert not same_selection_uri(f"{base}?tools=get_data&x=1", base, "get_data")
    assert not same_selection_uri(None, base, "get_data")


def test_read_bodies() -> None:
    def read(text: str) -> Exchange:
        return Exchange("resources/read", {}, {"contents": [{"uri": "u", "text": text}]})

    assert read_body(read('{"a": {}}')).mapping == {"a": {}}
    prefixed = read_body(read('Read carefully! {"a": {}}'))
    assert prefixed.mapping == {"a": {}} and prefixed.prefix == "Read carefully!"
    assert read_body(read("not json")).problem is not None
    assert read_body(Exchange("resources/read", {}, {"contents": []})).problem == "the read returned no contents"


class _ListingPeer:
    """Just enough of a Peer for resource_listing."""

    instructions = None

    def __init__(self, resource: dict[str, Any]) -> None:
        self.resource = resource

    async def paginate(self, what: str) -> tuple[list[dict[str, Any]], Exchange]:
        return [self.resource], Exchange("resources/list", {}, {"resources": [self.resource]})


@pytest.mark.anyio
async def test_the_spec_example_description_omits_the_consequence_of_an_unfetched_call() -> None:
    """Spec 11.2's example covers 4.2 points 1-3 but not point 4 (what an unfetched call does)."""
    rec = Recorder()
    await resource_listing(_ListingPeer(SPEC_EXAMPLE_11_2), rec, Discovery())  # type: ignore[arg-type]
    status = {r.id.split("/")[1]: r.status for r in rec.results}
    assert status["explains-tools-list"] is Status.SUCCESS
    assert status["explains-fetch-first"] is Status.SUCCESS
    assert status["explains-query-syntax"] is Status.SUCCESS
    assert status["explains-consequence"] is Status.FAILURE
    assert status["sequential-steps"] is Status.SUCCESS
    assert status["uri-examples"] is Status.SUCCESS
    assert status["explains-authorization"] is Status.WARNING
    assert status["system-prompt-guidance"] is Status.WARNING
    assert status["name"] is Status.SUCCESS and status["uri"] is Status.SUCCESS


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Add two integers. :param a: first addend", ":param"),
        ("Count words. Args: text (str): the text.", "Args: t"),
        ("Delete notes. @param confirm must be true.", "@param"),
        ("Search. Parameters\n----------\nq : str", "Parameters\n---"),
        ("Fetch a page. url (string): the address", "url (string):"),
        ("Add two integers and return their sum.", None),
        ("Lists the arguments a tool takes, by name.", None),
    ],
)
def test_parameter_docs_in_every_docstring_style(text: str, found: str | None) -> None:
    hit = parameter_docs(text)
    assert (hit is None) if found is None else (hit is not None and hit.startswith(found.split("\n")[0])), hit


@pytest.mark.parametrize(
    ("text", "example"),
    [
        ("Add two integers, e.g. add(a=2, b=3).", True),
        ('Search issues; pass {"query": "bug"}.', True),
        ("Fetch weather. Example: get_weather(city: 'Paris')", True),
        ("Add two integers (exact arithmetic).", False),
        ("Return the sum (an integer).", False),
    ],
)
def test_inline_call_examples(text: str, example: bool) -> None:
    assert (call_example(text, "add") is not None) is example


def test_workflow_sentences_need_their_parts_together() -> None:
    """Keywords scattered over unrelated sentences do not explain the workflow (PD-4.2-01/02/04)."""
    scattered = "Definitions as JSON. Errors follow the tools/list format. First published in 2024."
    assert not explains_tools_list(scattered)
    assert not explains_fetch_first(scattered)
    assert not explains_consequence(scattered)
    told = (
        "Choose a tool from tools/list. Read its description here before calling it; "
        "a call without fetching fails with an error."
    )
    assert explains_tools_list(told) and explains_fetch_first(told) and explains_consequence(told)
    steps = "Step 1: pick a tool. Step 2: read resource:///tool_descriptions?tools=X. Step 3: call the tool."
    assert explains_fetch_first(steps)


def test_extension_tools_are_the_advertised_names_else_describe_tools() -> None:
    listed = ["describe_tools", "search_tools", "add"]
    advertised = {"resourceUri": "resource:///tool_descriptions", "describeTool": "describe_tools", "mode": "x"}
    assert extension_tools(advertised, listed) == {"describe_tools": "advertised as describeTool"}
    catalog = {"describeTool": "describe_tools", "searchTool": "search_tools", "callTool": "missing"}
    assert set(extension_tools(catalog, listed)) == {"describe_tools", "search_tools"}
    assert extension_tools(None, listed) == {"describe_tools": "named describe_tools"}
    # Catalog mode advertises its meta-tools as a list (I-16); names it lists but tools/list lacks are ignored.
    meta = {"describeTool": "describe_tools", "metaTools": ["search_tools", "browse_tools", "describe_tools"]}
    assert extension_tools(meta, listed) == {
        "describe_tools": "advertised as describeTool",
        "search_tools": "advertised in metaTools",
    }
    assert extension_tools(None, ["add"]) == {}
