"""The audit trail (`--audit PATH|-`): one JSON line per decision, saying who asked what and how it ended.

Each MCP request a server answers (listings, reads, calls, prompts, completions) and each token `/mcp` refuses
becomes one record: `time` (UTC, ISO 8601), `principal` (the token's subject), `issuer`, `client` (the token's
client id), `session` (a digest of the transport session, never the id itself, which is a credential), `method`,
`tool` (for a call: the tool, catalog mode's inner one included; for a describe: the names asked), `resource`,
`outcome` (`answered`, `refused` with `reason`, or `failed` with `reason`) and `ms`. Arguments go in only with
`--audit-arguments`; results never. Secrets never: no token, no session id, no header.

Request handlers are wrapped from outside after install, as the metrics are (`_metrics.py`), so nothing that
decides knows it is audited. Lines are handed to a queue and written by the standard library's logging thread
(`QueueHandler` / `QueueListener`), so a slow disk never holds up a request; a file is rotated by size
(`RotatingFileHandler`: `--audit-max-bytes`, `--audit-backups`). The last records are also kept in memory for the
operator page, which filters them by principal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import logging.handlers
import queue
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

__all__ = ["AuditTrail", "add_audit_flags", "audit_trail", "principals"]

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
    "completion/complete",
)
_DESCRIBE: Final = "describe_tools"
_CALL: Final = "call_tool"
_KEPT: Final = 1000  # records kept in memory for the operator page
_FIELD: Final = 200  # characters kept of a name, URI or reason a client chose (no client grows a line unbounded)
_ARGUMENTS: Final = 4096  # characters kept of a call's arguments, when they are audited


def add_audit_flags(p: argparse.ArgumentParser) -> None:
    """`--audit` and its companions, for `serve` and `proxy`."""
    g = p.add_argument_group("Audit trail", "One JSON line per decision: who, which client, what, how it ended.")
    g.add_argument(
        "--audit",
        metavar="PATH",
        help="write the audit trail to PATH (rotated by size), or to standard output with '-' (HTTP only: over "
        "stdio, standard output is the MCP channel)",
    )
    g.add_argument(
        "--audit-max-bytes",
        type=int,
        default=10 * 1024 * 1024,
        metavar="BYTES",
        help="rotate the audit file past this size (default 10 MiB)",
    )
    g.add_argument("--audit-backups", type=int, default=5, metavar="N", help="rotated audit files kept (default 5)")
    g.add_argument(
        "--audit-arguments",
        action="store_true",
        help="also record each call's arguments (at most 4 KiB each; they may hold personal data): off by default",
    )


def audit_trail(args: argparse.Namespace, command: str) -> AuditTrail | None:
    """The trail the flags ask for (None without `--audit`); SystemExit with the reason when they cannot hold."""
    if args.audit is None:
        if args.audit_arguments:
            raise SystemExit(f"mcp-pd {command}: --audit-arguments needs --audit PATH")
        return None
    if args.audit == "-" and getattr(args, "transport", "stdio") != "http":
        raise SystemExit(
            f"mcp-pd {command}: --audit - writes to standard output, which stdio uses for MCP: give a file"
        )
    if args.audit_max_bytes < 1024 or args.audit_backups < 0:
        raise SystemExit(f"mcp-pd {command}: --audit-max-bytes must be at least 1024 and --audit-backups at least 0")
    handler: logging.Handler
    if args.audit == "-":
        handler = logging.StreamHandler(sys.stdout)
    else:
        path = Path(args.audit)
        try:
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=args.audit_max_bytes, backupCount=args.audit_backups, encoding="utf-8"
            )
        except OSError as exc:
            raise SystemExit(f"mcp-pd {command}: cannot open the audit file {path}: {exc}") from None
    return AuditTrail(handler, arguments=args.audit_arguments)


class AuditTrail:
    """Writes decision records through `handler` (on the logging thread) and keeps the last ones in memory."""

    def __init__(self, handler: logging.Handler, *, arguments: bool = False) -> None:
        handler.setFormatter(logging.Formatter("%(message)s"))
        self.arguments = arguments
        self.recent: deque[dict[str, Any]] = deque(maxlen=_KEPT)
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._logger = logging.Logger("mcp_pd.audit")  # its own: never the root's handlers, never propagated
        self._logger.addHandler(logging.handlers.QueueHandler(self._queue))
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._handler = handler
        self._listener.start()

    def close(self) -> None:
        """Write what is queued and close the file."""
        self._listener.stop()
        self._handler.close()

    def where(self) -> str:
        name = getattr(self._handler, "baseFilename", None)
        return "standard output" if name is None else str(name)

    def record(self, entry: dict[str, Any]) -> None:
        entry = {"time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"), **entry}
        self.recent.append(entry)
        self._logger.info(json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str))

    def filtered(self, principal: str | None, limit: int = 100) -> list[dict[str, Any]]:
        """The newest records first, only `principal`'s when given."""
        chosen = (e for e in reversed(self.recent) if principal is None or e.get("principal") == principal)
        return [e for _, e in zip(range(limit), chosen, strict=False)]

    def refused_at_the_door(self, status: int, error: str | None, reason: str, peer: str | None) -> None:
        """A request `/mcp` refused before any handler (no or a bad token): who it was is unknown."""
        self.record(
            {
                "principal": None,
                "method": "(http)",
                "outcome": "refused",
                "reason": f"HTTP {status} {error or 'no token'}: {_short(reason)}",
                "peer": peer,
            }
        )

    def instrument(self, server: Any) -> None:
        """Wrap every request handler `server` has (call after the extension is installed, and after metrics)."""
        for method in _METHODS:
            entry = server.get_request_handler(method)
            if entry is not None:
                server.add_request_handler(method, entry.params_type, self._wrap(method, entry.handler))

    def _wrap(self, method: str, handler: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        async def audited(ctx: Any, params: Any) -> Any:
            started = time.perf_counter()
            try:
                result = await handler(ctx, params)
            except MCPError as exc:
                self._done(ctx, method, params, started, "refused", _reason(exc.error.data, exc.error.message))
                raise
            except Exception as exc:
                self._done(ctx, method, params, started, "failed", type(exc).__name__)
                raise
            outcome, reason = _outcome(result)
            self._done(ctx, method, params, started, outcome, reason, result)
            return result

        return audited

    def _done(
        self, ctx: Any, method: str, params: Any, started: float, outcome: str, reason: str | None, result: Any = None
    ) -> None:
        try:
            entry = {**_who(ctx), "method": method, **self._what(method, params, result), "outcome": outcome}
            if reason is not None:
                entry["reason"] = _short(reason)
            entry["ms"] = round((time.perf_counter() - started) * 1000, 2)
            self.record(entry)
        except Exception:  # the audit must never turn an answer into a failure
            logging.getLogger("mcp_pd.audit").exception("could not write an audit record for %s", method)

    def _what(self, method: str, params: Any, result: Any) -> dict[str, Any]:
        name = getattr(params, "name", None)
        what: dict[str, Any] = {}
        if method == "tools/call" and isinstance(name, str):
            arguments = getattr(params, "arguments", None) or {}
            if name == _CALL and isinstance(arguments.get("name"), str):
                what["tool"] = _short(arguments["name"])
                what["via"] = _CALL
                arguments = arguments.get("arguments") or {}
            elif name == _DESCRIBE:
                what["tool"] = _DESCRIBE
                names = arguments.get("tools")
                if isinstance(names, list):
                    what["described"] = [_short(str(n)) for n in names[:50]]
            else:
                what["tool"] = _short(name)
            if self.arguments:
                what["arguments"] = _short(json.dumps(arguments, default=str, ensure_ascii=False), _ARGUMENTS)
        elif isinstance(name, str):
            what["name"] = _short(name)  # a prompt
        uri = getattr(params, "uri", None)
        if uri is not None:
            what["resource"] = _short(str(uri))
        return what


def _outcome(result: Any) -> tuple[str, str | None]:
    """(outcome, reason) of a handler's result: a refusal's error document, a tool's own error, or an answer."""
    if getattr(result, "is_error", False):
        content = getattr(result, "structured_content", None)
        error = content.get("error") if isinstance(content, Mapping) else None
        if isinstance(error, Mapping) and isinstance(error.get("code"), str):
            return "refused", _reason(error, None)
        return "failed", "the tool reported an error"
    return "answered", None


def _reason(data: Any, message: str | None) -> str:
    if isinstance(data, Mapping) and isinstance(data.get("code"), str):
        said = data.get("message")
        return f"{data['code']}: {said}" if isinstance(said, str) else str(data["code"])
    return message or "refused"


def _who(ctx: Any) -> dict[str, Any]:
    """The token's principal, its client and the transport session (as a digest), as far as known."""
    from ._sessions import access_token

    token = access_token(ctx)
    who: dict[str, Any] = {"principal": None, "client": None}
    if token is not None:
        claims = token.claims or {}
        who = {"principal": token.subject, "issuer": claims.get("iss"), "client": token.client_id or None}
    session = None
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        session = headers.get("mcp-session-id")
    if session:
        # The session id lets whoever holds it act in the session: only a digest is written.
        who["session"] = hashlib.sha256(session.encode()).hexdigest()[:16]
    return who


def _short(text: str, limit: int = _FIELD) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def principals(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The principals among `records`, most recent first (for the operator page's filter)."""
    return list(dict.fromkeys(str(r["principal"]) for r in records if r.get("principal")))
