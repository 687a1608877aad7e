"""The operator page of `mcp-pd proxy` over HTTP (`GET /admin`): what a team running the gateway for others needs
to see without reading logs.

Server-rendered HTML, no script and nothing loaded from elsewhere (works offline); it refreshes itself every two
seconds unless it shows a search. Each upstream's state, process id, starts, last error, tool count and call
latency; its tools with their listed line, how often they were described, and their calls answered, refused and
failed apart; the config entries skipped (and why) or the last reload; tools left out (task-only); how many
sessions hold grants; the latest refusals by code; in catalog mode a search box showing the ranked hits and why.
Never shows configuration values (commands, arguments, environment, headers) or tokens: every reason and note is
written through `mcp_pd._redact` (an error that quotes a header value or a URL's credentials included). Who may
open it is decided at the door (`mcp_pd._http.OperatorAccess`: the operator token, or loopback clients while there
is neither an operator token nor client tokens; the Host/Origin check first). Reads the pool, the gateway, the
extension and the metrics tallies; changes nothing.
"""

from __future__ import annotations

import html
import statistics
import time
from collections.abc import Sized
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from mcp_pd._audit import AuditTrail, principals
from mcp_pd._redact import redact

if TYPE_CHECKING:
    from mcp_pd import ProgressiveDisclosure
    from mcp_pd._metrics import Metrics

    from ._pool import UpstreamPool
    from ._server import Gateway

__all__ = ["ADMIN_PATH", "admin_app"]

ADMIN_PATH: Final = "/admin"
_STYLE: Final = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}.ready{color:#176317;font-weight:600}.failed{color:#b00020;font-weight:600}
.starting,.idle{color:#8a6d00;font-weight:600}.closed{color:#666}code{font-size:13px}.muted{color:#666}
"""


def admin_app(
    *,
    pool: UpstreamPool,
    gateway: Gateway,
    pd: ProgressiveDisclosure,
    metrics: Metrics | None,
    audit: AuditTrail | None = None,
) -> Any:
    """The ASGI endpoint answering `GET /admin` with the operator page (served behind the operator door);
    `?principal=SUBJECT` narrows the audit trail's latest decisions to one principal."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") != "GET":
            await _respond(send, 405, "GET only\n")
            return
        asked = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
        query = asked.get("q", [""])[0][:200]
        page = await _page(pool, gateway, pd, metrics, query)
        if audit is not None:
            principal = asked.get("principal", [""])[0][:200] or None
            page = page.replace("</body></html>", _decisions(audit, principal) + "</body></html>")
        await _respond(send, 200, page, "text/html; charset=utf-8")

    return asgi


async def _respond(send: Any, status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
    data = body.encode("utf-8")
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _said(value: object) -> str:
    """A reason or note (text built from errors, which may quote configuration), without secrets, escaped."""
    return _e(redact(str(value)))


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _percentiles(samples: Any) -> str:
    values = sorted(samples or ())
    if not values:
        return "-"
    p50 = statistics.median(values) * 1000
    p95 = values[min(len(values) - 1, int(0.95 * (len(values) - 1) + 0.5))] * 1000
    return f"{p50:.1f} / {p95:.1f} ms"


async def _page(
    pool: UpstreamPool, gateway: Gateway, pd: ProgressiveDisclosure, metrics: Metrics | None, query: str
) -> str:
    served: dict[str, list[str]] = {}
    for name, route in gateway.routes.items():
        served.setdefault(route.server, []).append(name)
    upstream_rows = []
    for name, upstream in pool.upstreams.items():
        label = upstream.config.label
        state = upstream.state
        upstream_rows.append(
            [
                _e(name) + (f" <span class=muted>({_e(label)})</span>" if label != name else ""),
                f"<span class={_e(state)} data-upstream-state={_e(name)}>{_e(state)}</span>",
                _e(upstream.pid or "-"),
                _e(upstream.starts),
                _said(upstream.reason or "-"),
                _e(len(upstream.tools) if upstream.tools is not None else "-"),
                _e(pool.client_sessions_live(name)),
                _percentiles(metrics.upstream_seconds.get(name) if metrics else None),
            ]
        )
    listed = f"{len(gateway.listing)} tool" + ("" if len(gateway.listing) == 1 else "s")
    parts = [
        "<!doctype html><html><head><meta charset=utf-8><title>mcp-pd gateway</title>",
        "" if query else '<meta http-equiv="refresh" content="2">',
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>mcp-pd gateway <span class=muted>({_e(pd.mode)} mode, {listed})</span></h1>",
        "<h2>Upstreams</h2>",
        _table(
            ["upstream", "state", "pid", "starts", "last error", "tools", "clients' own sessions", "call p50 / p95"],
            upstream_rows,
        ),
    ]
    if pool.config_note:
        parts.append(f"<p id=config-note>Config: {_said(pool.config_note)}</p>")
    parts += [f"<p class=name-note>Names: {_said(note)}</p>" for note in gateway.name_notes]
    parts += [f"<p class=task-note>Tasks: {_said(note)}</p>" for note in gateway.task_notes]
    held = len(pd.grants) if isinstance(pd.grants, Sized) else None
    parts.append(
        "<h2>Grants</h2><p>"
        + (f"{held} session(s) or principal(s) hold grants." if held is not None else "Kept in Redis (not counted).")
        + "</p>"
    )
    if metrics is not None and metrics.latest_refusals:
        rows = [
            [_e(time.strftime("%H:%M:%S", time.localtime(t))), f"<code>{_e(code)}</code>", _e(tool)]
            for t, code, tool in reversed(metrics.latest_refusals)
        ]
        parts += ["<h2>Latest refusals</h2>", _table(["time", "code", "tool or resource"], rows)]
    if pd.metatools is not None:
        parts.append(await _search(pd, query))
    for name, tools in served.items():
        rows = []
        for tool in tools:
            line = (pd.catalog.minimal(tool) or {}).get("description", "")
            described = metrics.described.get(tool, 0) if metrics else "-"
            tallies = (metrics.called, metrics.refused_calls, metrics.failed_calls) if metrics else ()
            counts = [_e(tally.get(tool, 0)) for tally in tallies] or ["-"] * 3
            rows.append([f"<code>{_e(tool)}</code>", _e(line), _e(described), *counts])
        header = ["tool", "listed line", "described", "calls answered", "calls refused", "calls failed"]
        parts += [f"<h2>Tools of {_e(name)}</h2>", _table(header, rows)]
    parts.append("</body></html>")
    return "".join(parts)


def _decisions(audit: AuditTrail, principal: str | None) -> str:
    """The audit trail's latest decisions (all, or one principal's), with a filter form."""
    records = audit.filtered(principal)
    options = "".join(
        f"<option{' selected' if p == principal else ''}>{_e(p)}</option>" for p in principals(audit.recent)
    )
    rows = [
        [
            _e(str(r.get("time", ""))[11:23]),
            _e(r.get("principal") or "-"),
            _e(r.get("client") or "-"),
            _e(r.get("method")),
            f"<code>{_e(r.get('tool') or r.get('resource') or r.get('name') or '-')}</code>",
            _e(r.get("outcome")) + (f" <span class=muted>({_e(r['reason'])})</span>" if r.get("reason") else ""),
            _e(r.get("ms", "-")),
        ]
        for r in records
    ]
    form = (
        f'<form method=get action="{ADMIN_PATH}" id=audit-filter>principal <select name=principal>'
        f"<option value=''>(everyone)</option>{options}</select> <button>show</button></form>"
    )
    header = ["time (UTC)", "principal", "client", "method", "tool or resource", "outcome", "ms"]
    return "<h2>Latest decisions (audit trail)</h2>" + form + _table(header, rows)


async def _search(pd: ProgressiveDisclosure, query: str) -> str:
    assert pd.metatools is not None
    form = (
        f'<h2>Search</h2><form method=get action="{ADMIN_PATH}"><input name=q size=50 value="{_e(query)}" '
        'placeholder="what a model would ask for"> <button type=submit>Search</button></form>'
    )
    if not query.strip():
        return form
    index = pd.metatools.index
    found = await index.search(query, limit=10, category=None, allowed=None)
    ranking = index.ranking
    why = f"{ranking['ranking']} ranking" + (
        f" ({ranking['model']})" if "model" in ranking else f": {ranking.get('why')}"
    )
    if found.abstained:
        return (
            form
            + f"<p id=search-result>Abstained ({_e(found.reason)}); {_said(why)}. Categories: "
            + _e(", ".join(c for c in found.browse if c))
            + "</p>"
        )
    rows = []
    for i, h in enumerate(found.hits):
        only = ", ".join(found.ties.get(h.name, []))
        rows.append([_e(i + 1), f"<code>{_e(h.name)}</code>", _e(h.category), _e(h.summary), _e(h.score), _e(only)])
    summary = f"<p id=search-result>{found.total} tool(s) matched; {_said(why)}; confidence {found.confidence}.</p>"
    table = _table(["#", "tool", "category", "listed line", "score", "only this one says"], rows)
    return form + summary + table
