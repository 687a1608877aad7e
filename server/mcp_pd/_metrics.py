"""Prometheus metrics for `mcp-pd serve` and `mcp-pd proxy` over HTTP (`GET /metrics`; prometheus-client is a base
dependency, imported only once metrics are on (`mcp_pd._cli.serve_metrics`), so `--no-metrics` never loads it).

The server's request handlers are wrapped from outside, after the extension is installed, so nothing in the
extension knows about metrics: every request is timed and counted by method and outcome, and what it says is read
from its result (a refusal's code, the tools described, the tool called). A `server/discover` declined by design
(-32601, so an SDK client falls back to the handshake, `_advertise.discover_refusal`) is outcome `declined`, not
`error`: every healthy HTTP client's first request is one. Gauges (grants held, each upstream's
state and starts) are read when scraped, never kept in step. Every label value is bounded: a tool is named only if
the server serves it and a refusal code only if it is one of ours; anything else (an unknown name, a 30 kB name, an
upstream's own code) is counted under `(other)`, so no client can grow the series. Knows handler results and the
official `prometheus-client`; nothing of how decisions are made. Who may read `GET /metrics` is `_http`'s decision.
"""

from __future__ import annotations

import time
from collections import Counter as Counter_
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Receive, Scope, Send

from ._errors import ErrorCode

__all__ = ["OTHER", "PATH", "Metrics", "UpstreamView", "metrics_app"]

PATH: Final = "/metrics"
OTHER: Final = "(other)"
"""The label every name the server does not serve (and every code not its own) is counted under."""
_CODES: Final = frozenset(code.value for code in ErrorCode)
_SHOWN: Final = 120  # characters of a refused resource URI kept for the operator page
_METHODS: Final = (
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "server/discover",
)
_DESCRIBE: Final = "describe_tools"
_CALL: Final = "call_tool"

UpstreamView = Callable[[], Iterable[tuple[str, str, int, int]]]
"""(upstream, state, starts, clients' own sessions live) for each upstream of a gateway, read at scrape time."""


class Metrics:
    """One registry per server: request, refusal, describe and call counters, latency histograms, gauges.

    `served(name)` says whether the server serves a tool of that name now: only those become `tool` labels.
    """

    def __init__(
        self,
        *,
        served: Callable[[str], bool],
        grants: Callable[[], int | None] = lambda: None,
        upstream_of: Callable[[str], str | None] = lambda name: None,
        upstreams: UpstreamView | None = None,
    ) -> None:
        self.registry = CollectorRegistry()
        self._served = served
        self._upstream_of = upstream_of
        self.requests = Counter(
            "mcp_pd_requests", "MCP requests by method and outcome", ["method", "outcome"], registry=self.registry
        )
        self.latency = Histogram(
            "mcp_pd_request_seconds", "Time to answer an MCP request", ["method"], registry=self.registry
        )
        self.refusals = Counter("mcp_pd_refusals", "Refusals by error code", ["code"], registry=self.registry)
        self.describes = Counter(
            "mcp_pd_tool_describes",
            "Tool definitions returned (resource reads and describe_tools)",
            ["tool"],
            registry=self.registry,
        )
        self.calls = Counter("mcp_pd_tool_calls", "Tool calls by outcome", ["tool", "outcome"], registry=self.registry)
        self.upstream_latency = Histogram(
            "mcp_pd_upstream_call_seconds",
            "Tool calls through the gateway, by upstream",
            ["upstream"],
            registry=self.registry,
        )
        self.registry.register(_Gauges(grants, upstreams))
        # Plain tallies beside the Prometheus series, for the operator page (which reads, never scrapes).
        self.described: Counter_[str] = Counter_()
        # Tool calls by what became of them: answered (the tool ran, even if it said it failed), refused (by the
        # extension: not granted, unknown, upstream unavailable), failed (a JSON-RPC error).
        self.called: Counter_[str] = Counter_()
        self.refused_calls: Counter_[str] = Counter_()
        self.failed_calls: Counter_[str] = Counter_()
        self.latest_refusals: deque[tuple[float, str, str]] = deque(maxlen=20)  # (unix time, code, tool or URI)
        self.upstream_seconds: dict[str, deque[float]] = {}

    def instrument(self, server: Server[Any]) -> None:
        """Wrap every request handler `server` has (call after the extension is installed)."""
        for method in _METHODS:
            entry = server.get_request_handler(method)
            if entry is not None:
                server.add_request_handler(method, entry.params_type, self._wrap(method, entry.handler))

    def _wrap(self, method: str, handler: Any) -> Any:
        async def observed(ctx: Any, params: Any) -> Any:
            started = time.perf_counter()
            try:
                result = await handler(ctx, params)
            except MCPError as exc:
                declined = method == "server/discover" and exc.error.code == types.METHOD_NOT_FOUND
                self._done(method, params, "declined" if declined else "error", started, exc.error.data)
                raise
            except Exception:
                self._done(method, params, "error", started, None)
                raise
            error = _error_document(result)
            self._done(method, params, "refused" if error is not None else "ok", started, error, result)
            return result

        return observed

    def _done(self, method: str, params: Any, outcome: str, started: float, error: Any, result: Any = None) -> None:
        seconds = time.perf_counter() - started
        self.latency.labels(method).observe(seconds)
        code = error.get("code") if isinstance(error, Mapping) else None
        target = _target(params)
        if isinstance(code, str):
            code = code if code in _CODES else OTHER
            self.refusals.labels(code).inc()
            shown = self._tool(target) if method == "tools/call" else _truncated(target)
            self.latest_refusals.append((time.time(), code, shown))
        if method == "tools/call" and outcome == "ok" and isinstance(result, types.CallToolResult) and result.is_error:
            outcome = "tool_error"  # the tool ran and said it failed: not a refusal
        self.requests.labels(method, outcome).inc()
        if method == "tools/call":
            if target == _DESCRIBE:
                if outcome == "ok" and isinstance(result, types.CallToolResult):
                    entries = (result.structured_content or {}).items()
                    # An entry without a schema refuses that one name (unknown, hidden): nothing was described.
                    self._described(n for n, entry in entries if isinstance(entry, Mapping) and "inputSchema" in entry)
            else:
                name = self._tool(target)
                self.calls.labels(name, outcome).inc()
                tally = {"refused": self.refused_calls, "error": self.failed_calls}.get(outcome, self.called)
                tally[name] += 1
                upstream = self._upstream_of(name) if name != OTHER else None
                if upstream is not None and outcome in ("ok", "tool_error"):
                    self.upstream_latency.labels(upstream).observe(seconds)
                    self.upstream_seconds.setdefault(upstream, deque(maxlen=500)).append(seconds)
        elif method == "resources/read" and outcome == "ok" and isinstance(result, types.ReadResourceResult):
            meta = (result.contents[0].meta or {}) if result.contents else {}
            for entry in meta.values():
                if isinstance(entry, Mapping) and isinstance(entry.get("versions"), Mapping):
                    self._described(str(tool) for tool in entry["versions"])

    def _tool(self, name: str) -> str:
        """The label of a tool name: itself if served, else `OTHER` (a name no client can turn into a series)."""
        return name if self._served(name) else OTHER

    def _described(self, names: Iterable[str]) -> None:
        for name in names:
            label = self._tool(name)
            self.describes.labels(label).inc()
            self.described[label] += 1

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _target(params: Any) -> str:
    """The tool a request is about (the inner one of catalog mode's call_tool), or the resource it reads."""
    name = getattr(params, "name", None)
    if name is None:
        return str(getattr(params, "uri", ""))
    arguments = getattr(params, "arguments", None) or {}
    if name == _CALL and isinstance(arguments.get("name"), str):
        return str(arguments["name"])
    return str(name)


def _truncated(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "\u2026"


def _error_document(result: Any) -> Mapping[str, Any] | None:
    """A refusal's error document in a tool result (`{"error": {"code": ...}}`), else None."""
    if isinstance(result, types.CallToolResult) and result.is_error:
        content = result.structured_content
        if isinstance(content, Mapping) and isinstance(content.get("error"), Mapping):
            error: Mapping[str, Any] = content["error"]
            if isinstance(error.get("code"), str):
                return error
    return None


class _Gauges:
    """Grants held and each upstream's state, read from their owners at scrape time."""

    def __init__(self, grants: Callable[[], int | None], upstreams: UpstreamView | None) -> None:
        self._grants = grants
        self._upstreams = upstreams

    def collect(self) -> Iterable[Any]:
        held = self._grants()
        if held is not None:
            gauge = GaugeMetricFamily("mcp_pd_grant_sessions", "Sessions (or principals) holding grants")
            gauge.add_metric([], held)
            yield gauge
        if self._upstreams is not None:
            state = GaugeMetricFamily(
                "mcp_pd_upstream_state", "1 for each upstream's current state", labels=["upstream", "state"]
            )
            starts = CounterMetricFamily(
                "mcp_pd_upstream_starts", "Times each upstream was started", labels=["upstream"]
            )
            own = GaugeMetricFamily(
                "mcp_pd_upstream_client_sessions",
                "Sessions (processes) of each upstream opened for one client of its own (servers on client roots)",
                labels=["upstream"],
            )
            for name, current, count, sessions in self._upstreams():
                state.add_metric([name, current], 1)
                starts.add_metric([name], count)
                own.add_metric([name], sessions)
            yield state
            yield starts
            yield own


def metrics_app(metrics: Metrics) -> ASGIApp:
    """The ASGI endpoint answering `GET /metrics` with `metrics` (Prometheus text format). Served at `PATH` behind
    the operator door (`_http.http_server(operator=...)`), which decides who may read it."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "GET":
            await _respond(send, 405, b"GET only\n", "text/plain; charset=utf-8")
            return
        await _respond(send, 200, metrics.exposition(), CONTENT_TYPE_LATEST)

    return asgi


async def _respond(send: Any, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
