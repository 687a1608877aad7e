"""The checks shown by calls in sessions: the gate, grants, isolation, session end (spec 5.1, 5.2, 6.2)."""

from __future__ import annotations

from typing import Final

from ._requirements import CheckSpec, Severity, define

__all__ = ["SESSION_CHECKS"]

M, S, N = Severity.MUST, Severity.SHOULD, Severity.INFO

# In run order. Scenario names are the part before the slash.
SESSION_CHECKS: Final[tuple[CheckSpec, ...]] = (
    define(
        "authorization/era-listings",
        M,
        ("PD-2-01", "PD-4.1-01"),
        "tools/list and resources/list work in this protocol era",
        "Serve the minimal listing and the resource in every protocol version the server negotiates.",
    ),
    define(
        "authorization/unfetched-call-refused",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "calling a tool before fetching its description fails with TOOL_DESCRIPTION_REQUIRED",
        "A server you did not write: serve it through `mcp-pd proxy`. Yours: gate tools/call: unless this session "
        "fetched the tool, return an isError result whose structuredContent is the spec 6.2 document.",
    ),
    define(
        "authorization/error-document",
        M,
        ("PD-6.2-01",),
        'the TOOL_DESCRIPTION_REQUIRED document is wrapped in {"error": ...}, names the tool and gives resource_uri',
        'Return {"error": {"code": "TOOL_DESCRIPTION_REQUIRED", "message": "Tool \'<name>\' requires fetching '
        'its description before use.", "resource_uri": "<base>?tools=<name>"}}, the wrapper included.',
    ),
    define(
        "authorization/fetch-authorizes",
        M,
        ("PD-5.1-01", "PD-5.2-01", "PD-2-03"),
        "after fetching its description the tool can be called in the same session",
        "Record a grant for (session, tool) on every successful read and check it in tools/call.",
    ),
    define(
        "authorization/persists",
        M,
        ("PD-5.1-03",),
        "the authorization survives further calls in the session, spread over a few seconds",
        "Keep grants until the session ends; never consume them on use.",
    ),
    define(
        "grants/every-tool-gated",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "every safe (read-only) tool is refused when called unfetched, not only the first",
        "Gate every tool the extension discloses, not a subset.",
    ),
    define(
        "grants/unsafe-tools-gated",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "tools the suite will not run (not read-only) are refused unfetched too, before their arguments are checked",
        "Gate every tool, whenever it was registered and whatever its annotations, and run the gate before argument "
        "validation: an unfetched call is refused with TOOL_DESCRIPTION_REQUIRED whatever its arguments.",
    ),
    define(
        "grants/repeated-unfetched-refused",
        M,
        ("PD-5.1-02",),
        "a second and third unfetched call of the same tool are refused too",
        "Refuse every unfetched call; a refusal must not count as a fetch.",
    ),
    define(
        "grants/refused-read-grants-nothing",
        M,
        ("PD-5.1-02", "PD-5.1-01"),
        "reads without a selection, of unknown names, or of case, punctuation, prefix or near-spelling variants "
        "authorize nothing",
        "Grant only the listed names a read actually served; an error entry or a refused read grants nothing.",
    ),
    define(
        "grants/read-other-refused",
        M,
        ("PD-5.1-02", "PD-5.1-01"),
        "reading tool X does not authorize tool Y",
        "Record a grant per tool served, never for the whole catalog.",
    ),
    define(
        "grants/each-read-tool-authorized",
        M,
        ("PD-5.1-01",),
        "one read of several tools authorizes each of them, wherever it stands in the list",
        "Grant every tool a read served, not only the first.",
    ),
    define(
        "grants/mixed-read-authorizes-known",
        M,
        ("PD-5.1-01",),
        "a read that mixes known and unknown names authorizes the known ones",
        "An unknown name in the selection must not cancel the grants of the known ones.",
    ),
    define(
        "grants/survive-refusals",
        M,
        ("PD-5.1-03",),
        "a read without a selection, a read naming an unknown tool and a refused call of another tool each leave the "
        "session's grants",
        "Change grants only when a read serves a definition, and then only add to them: a read refused with "
        "MISSING_TOOL_SELECTION, a read naming an unknown tool (its error entry grants nothing) and a call refused "
        "with TOOL_DESCRIPTION_REQUIRED must not clear or reset the session's grants.",
    ),
    define(
        "grants/persist-through-session",
        M,
        ("PD-5.1-03",),
        "grants still hold after a longer stretch of other requests (and, with --grant-hold, of waiting)",
        "Keep grants for the life of the session; do not expire them after some requests or seconds.",
    ),
    define(
        "grants/overlapping-reads",
        M,
        ("PD-5.1-01",),
        "many reads of one session sent at once (pipelined, as hosts do) each authorize their tool",
        "Update a session's grants atomically: add each read's tools to the set in one step (no read, await, write "
        "back), so that overlapping reads cannot overwrite each other's grants.",
    ),
    define(
        "grants/overlapping-sessions",
        M,
        ("PD-5.1-04", "PD-5.2-02"),
        "two sessions reading at the same time each get their own grant, and none of the other's",
        "Take the session from the request being served (its context), never from state shared between requests "
        "(a global or a variable set by the last request to arrive).",
    ),
    define(
        "grants/proxy-tool-gated",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "a tool that calls tools (its schema takes a tool name and arguments) does not run a tool the session never "
        "fetched",
        "Put the gate in front of every way a tool runs: a dispatcher tool (run_tool, execute, call_tool) must ask "
        "the gate for the tool it is told to run, in the caller's session, and refuse with TOOL_DESCRIPTION_REQUIRED "
        "when that tool was never fetched.",
    ),
    define(
        "grants/required-truthful",
        M,
        ("PD-3.2-02",),
        "a schema that requires nothing is not contradicted by the tool rejecting a call without arguments",
        "Serve the schema the tool validates against, with its required list.",
    ),
    define(
        "isolation/other-session-refused",
        M,
        ("PD-5.1-04", "PD-5.2-02"),
        "a concurrent session that never fetched the tool is refused",
        "When session B's call ran, grants leak: key them by the MCP session (Mcp-Session-Id on HTTP, the "
        "connection on stdio), never globally; when B got another error, refuse an unfetched call with "
        "TOOL_DESCRIPTION_REQUIRED before anything else looks at it.",
    ),
    define(
        "isolation/own-session-unaffected",
        M,
        ("PD-5.1-03",),
        "the fetching session stays authorized while another session is refused",
        "Refusing one session must not touch another session's grants.",
    ),
    define(
        "session-end/new-session-refused",
        M,
        ("PD-5.2-03",),
        "a session opened after the fetching session ended is refused",
        "Drop a session's grants when it ends (stdio EOF, HTTP DELETE, idle timeout); never reuse keys.",
    ),
    define(
        "sessionless/negotiated-version",
        N,
        ("PD-5.2-01",),
        "which protocol version the default client negotiates",
        "",
    ),
    define(
        "sessionless/unfetched-call-refused",
        M,
        ("PD-5.1-02",),
        "in the sessionless 2026-07-28 protocol an unfetched call never succeeds",
        "Without a session identity, refuse calls explicitly (e.g. SESSION_REQUIRED) rather than letting them run.",
    ),
    define(
        "sessionless/fetch-then-call",
        M,
        ("PD-5.2-01", "PD-5.1-01"),
        "in the sessionless protocol, fetch-then-call succeeds or is refused with an explicit documented error",
        "Either key sessionless requests to a session identity, or refuse with a documented code "
        "(e.g. SESSION_REQUIRED) that tells the client how to get a session; never loop on TOOL_DESCRIPTION_REQUIRED.",
    ),
)
