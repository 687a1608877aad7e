"""Asking one client, already chosen by `ClientBridge` (`_bridge.py`), what an upstream asked: a handshake-era client
on its call's own stream (or its connection outside calls), a 2026-07-28 client through its call's next
`input_required` round (`_rounds.py`). A client that did not declare the capability is not asked: the upstream gets
the error the SDK gives a client without it (for roots, an empty list), and a request alone never gives roots.
Knows nothing about which client a request is for, nor about tools, grants or modes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Final, Literal, TypeAlias

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_pd._sessions import ClientId

from ._rounds import Rounds

__all__ = ["REQUEST_TIMEOUT", "ClientAsker", "Outcome", "client_capabilities", "modern"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
Outcome: TypeAlias = Literal["answered", "refused", "unreached"]
REQUEST_TIMEOUT: Final = 300.0


def modern(conn: Any) -> bool:
    return getattr(conn, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def client_capabilities(conn: Any) -> types.ClientCapabilities:
    return getattr(conn, "client_capabilities", None) or types.ClientCapabilities()


class ClientAsker:
    """Asks the client `ClientBridge` chose for an upstream's request (see the module's docstring)."""

    def __init__(self, rounds: Rounds) -> None:
        self.rounds = rounds

    async def ask(
        self,
        ctx: Context | None,
        conn: Any,
        client: ClientId,
        request: Any,
        result_type: type[Any],
        capability: str,
        label: str,
    ) -> tuple[Any, Outcome, str | None]:
        """(the client's answer or an error for the upstream; `refused` or `unreached` as `ClientBridge._answer`
        says; and the key of the client asked, None when it was not)."""
        if capability == "roots" and not client.lasting:
            # A request alone never gives roots: the session would hold the roots of a client that is gone at once.
            message = (
                "Roots not available: this request has no session or credential, and the gateway gives an upstream "
                "only the roots of a client it can tell apart (a session, or a bearer token)."
            )
            return types.ErrorData(code=types.INVALID_REQUEST, message=message), "refused", None
        if getattr(client_capabilities(conn), capability) is None:
            if capability == "roots":
                # A client without roots has none: the empty list says so, where an error made upstreams print
                # "Failed to request roots" on every start (server-filesystem then keeps the folders it was given).
                return types.ListRootsResult(roots=[]), "refused", client.key
            message = f"{label} not supported: the client did not declare it."
            return types.ErrorData(code=types.INVALID_REQUEST, message=message), "refused", client.key
        if modern(conn):
            return (*await self._ask_in_rounds(ctx, request, result_type, capability, label), client.key)
        return (*await self._send(ctx, conn, request, result_type, capability, label), client.key)

    async def _send(
        self, ctx: Context | None, conn: Any, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome]:
        """Ask a handshake-era client: on its call's own stream if the request belongs to one."""
        try:
            if ctx is not None and ctx.request_id is not None:
                # On the call's own stream: over HTTP that is the response stream of the client's request.
                metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
                sent: Awaitable[Any] = ctx.session.send_request(
                    request, result_type, request_read_timeout_seconds=REQUEST_TIMEOUT, metadata=metadata
                )
            else:
                sent = conn.send_request(request, opts={"timeout": REQUEST_TIMEOUT})
            return await sent, "answered"
        except MCPError as exc:
            return exc.error, "refused" if exc.error.code == types.INVALID_REQUEST else "unreached"
        except Exception as exc:
            logger.info("passing on a %s request to a client failed: %s", capability, exc)
            failed = types.ErrorData(code=types.INTERNAL_ERROR, message=f"{label} failed through the gateway: {exc}")
            return failed, "unreached"

    async def _ask_in_rounds(
        self, ctx: Context | None, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome]:
        """Ask a 2026-07-28 client through its call's next `input_required` round."""
        exchange = None if ctx is None else self.rounds.exchange(ctx)
        if exchange is None:  # not inside one of its calls (a completion, say): there is no round to ask in
            message = f"{label} not available: the client speaks 2026-07-28 and is asked only during its calls."
            return types.ErrorData(code=types.INVALID_REQUEST, message=message), "unreached"
        answer = await exchange.ask(capability, request)
        if isinstance(answer, types.ErrorData):
            return answer, "refused" if answer.code == types.INVALID_REQUEST else "unreached"
        try:  # the client's answer was read as any input response: hold it to the one this request expects
            return result_type.model_validate(answer.model_dump(by_alias=True, exclude_none=True)), "answered"
        except ValidationError as exc:
            message = f"The client's answer is not a {capability} result: {exc.errors()[0]['msg']}."
            return types.ErrorData(code=types.INVALID_PARAMS, message=message), "refused"
