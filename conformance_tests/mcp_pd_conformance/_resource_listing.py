"""Scenario resource-listing: the tool_descriptions resource entry of spec 4.1 and its description (4.2)."""

from __future__ import annotations

import re
from typing import Any

from ._checks import NO_EXTENSION, NO_RESOURCE, Discovery
from ._documents import base_uri, uri_path
from ._probe import Exchange, Peer
from ._record import Recorder
from ._text import (
    explains_authorization,
    explains_consequence,
    explains_fetch_first,
    explains_tools_list,
    sequential_steps,
)

__all__ = ["resource_listing"]

_NAME = re.compile(r"tool[\s_-]*(descriptions?|definitions?|docs?|documentation)", re.IGNORECASE)
_TOOLS_LIST = re.compile(r"tools/list|tools list|tool list|list of tools|list_tools|listTools", re.IGNORECASE)
_SELECT = re.compile(r"select|choos|pick|identify|decide", re.IGNORECASE)
_PARAMS = re.compile(r"parameter|argument|schema|input", re.IGNORECASE)
_URI_EXAMPLE = re.compile(r"[a-z][a-z0-9+.-]*:\S*\?tools=[A-Za-z0-9_.-]+", re.IGNORECASE)


# -- resource-listing ---------------------------------------------------------------------------------
def _find_resource(resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    for resource in resources:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri_path(uri).rstrip("/").endswith("tool_descriptions"):
            return resource
    for resource in resources:
        label = f"{resource.get('name') or ''} {resource.get('title') or ''} {resource.get('uri') or ''}"
        if "tool_descriptions" in label or _NAME.search(label):
            return resource
    return None


async def resource_listing(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario resource-listing: the resource entry of spec 4.1 and its description (4.2)."""
    resources, last = await peer.paginate("resources")
    if last.error is not None:
        code = last.error.code if last.error.code is not None else "client-side"
        disc.no_resource_reason = f"resources/list failed ({code}: {last.error.message}): {NO_EXTENSION}"
        rec.fail(
            "resource-listing/listed",
            f"resources/list failed, so there is no tool_descriptions resource: {NO_EXTENSION}",
            expected="resources/list including resource:///tool_descriptions",
            exchange=last,
        )
        rec.skip_scenario("resource-listing", NO_RESOURCE)
        return
    resource = _find_resource(resources)
    if resource is None:
        templates = await peer.list_resource_templates()
        listed = [t.get("uriTemplate") for t in (templates.result or {}).get("resourceTemplates") or []]
        only_template = [t for t in listed if isinstance(t, str) and "tool_descriptions" in t]
        extra = f" (it is only a resource template: {only_template[0]}; list the base URI too)" if only_template else ""
        disc.no_resource_reason = f"no tool_descriptions resource in resources/list{extra}: {NO_EXTENSION}"
        rec.fail(
            "resource-listing/listed",
            f"no tool_descriptions resource in resources/list{extra}: {NO_EXTENSION}",
            expected="a resource whose uri is resource:///tool_descriptions (or ends in tool_descriptions)",
            exchange=last,
        )
        rec.skip_scenario("resource-listing", NO_RESOURCE)
        return
    disc.resource = resource
    uri = str(resource.get("uri") or "")
    disc.base = base_uri(uri)
    rec.ok("resource-listing/listed", f"listed as {uri}")
    listed_entry = Exchange("resources/list", {}, {"resources": [resource]})

    if uri == "resource:///tool_descriptions" or (uri == disc.base and uri_path(uri).endswith("tool_descriptions")):
        rec.ok("resource-listing/uri", f"uri {uri}")
    else:
        rec.fail(
            "resource-listing/uri",
            f"the listed uri {uri!r} is not a tool_descriptions base URI",
            expected="resource:///tool_descriptions, or a URI whose path ends in tool_descriptions, without a query",
            exchange=listed_entry,
        )

    name, title = str(resource.get("name") or ""), str(resource.get("title") or "")
    if _NAME.search(name) or _NAME.search(title) or "tool_descriptions" in name:
        rec.ok("resource-listing/name", f"name {name!r}" + (f", title {title!r}" if title else ""))
    else:
        rec.fail(
            "resource-listing/name",
            f"name {name!r} / title {title!r} does not say the resource holds tool descriptions",
            expected='a name or title such as "Tool Descriptions"',
            exchange=listed_entry,
        )

    text = str(resource.get("description") or "")

    def judge(check_id: str, passed: bool, what: str, expected: str) -> None:
        if passed:
            rec.ok(check_id, f"the description {what}")
        else:
            verb, _, rest = what.partition(" ")  # "says what ..." -> "does not say what ..."
            negated = f"{verb.removesuffix('s')} {rest}"
            rec.fail(check_id, f"the description does not {negated}", expected=expected, exchange=listed_entry)

    judge(
        "resource-listing/explains-tools-list",
        explains_tools_list(text),
        "relates tools/list to this resource in one sentence",
        "a sentence such as 'choose a tool from tools/list, then read its description here'",
    )
    judge(
        "resource-listing/explains-fetch-first",
        explains_fetch_first(text),
        "says to fetch a description before calling the tool",
        "a sentence ordering the fetch before the call ('read ... before calling'), or numbered steps doing so",
    )
    judge("resource-listing/explains-query-syntax", "?tools=" in text, "shows the ?tools= syntax", "?tools=")
    judge(
        "resource-listing/explains-consequence",
        explains_consequence(text),
        "says what an unfetched call does",
        "TOOL_DESCRIPTION_REQUIRED, or a sentence saying a call without fetching fails",
    )
    judge(
        "resource-listing/sequential-steps",
        sequential_steps(text),
        "lays the workflow out as steps in order",
        'steps in order: "Step 1: ... Step 2: ...", or "First ..., then ..., finally ..."',
    )
    judge(
        "resource-listing/selection-vs-parameters",
        bool(_TOOLS_LIST.search(text) and _SELECT.search(text) and _PARAMS.search(text)),
        "separates choosing a tool (tools/list) from learning its parameters",
        "tools/list for selection, this resource for parameters",
    )
    judge(
        "resource-listing/uri-examples",
        bool(_URI_EXAMPLE.search(text)),
        "gives a concrete URI example",
        f"{disc.base}?tools=TOOL_NAME",
    )
    judge(
        "resource-listing/explains-authorization",
        explains_authorization(text),
        "says fetching authorizes the tool for the session",
        '"fetching authorizes the tool for this session"',
    )
    mime = resource.get("mimeType")
    if mime == "application/json":
        rec.ok("resource-listing/mime-type", "application/json")
    else:
        rec.fail(
            "resource-listing/mime-type",
            f"mimeType is {mime!r}",
            expected="application/json",
            exchange=listed_entry,
        )
    instructions = peer.instructions or ""
    if "?tools=" in instructions or (disc.base is not None and disc.base in instructions):
        rec.ok("resource-listing/system-prompt-guidance", "the server instructions explain the two-stage workflow")
    else:
        rec.fail(
            "resource-listing/system-prompt-guidance",
            "the server instructions do not mention the tool_descriptions resource"
            if instructions
            else "the server sends no instructions",
            expected=f"instructions explaining the workflow, e.g. mentioning {disc.base}?tools=TOOL_NAME",
        )
