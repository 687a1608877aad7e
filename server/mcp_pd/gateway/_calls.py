"""Calls of tools on one upstream (`Upstream.calls`): over the session, or
straight onto a stdio upstream's pipe with its answer validated as the SDK would, so one classification serves
both paths; a timeout, a closed connection or a malformed result becomes `UpstreamUnavailable` saying why, and a
progressive upstream's refusal is retried once after re-reading the definition.
Knows nothing about starting, supervising or restarting upstreams (it asks the `Upstream` to recycle).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ._failures import UpstreamUnavailable, call_failure, session_forgotten, went_away
from ._process import OnAnswer, Pending

if TYPE_CHECKING:
    from ._pool import Upstream

__all__ = ["UpstreamCalls"]

PING_TIMEOUT: Final = 5.0


class UpstreamCalls:
    """The tool calls of the `Upstream` it serves (its `calls`)."""

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        meta: Mapping[str, Any] | None = None,
        progress: ProgressFnT | None = None,
        again: bool = True,
    ) -> types.CallToolResult:
        """Call `name` on this upstream through its shared session: the result (or its JSON-RPC error) as given.

        Raises UpstreamUnavailable when there is no usable answer, and says why. `again`: whether an HTTP session
        the upstream forgot, or a progressive upstream's refusal, may still be retried once.
        """
        session = await self._upstream.ensure()
        process = self._upstream.process
        if process is not None and progress is None and self._upstream.config.url is None:
            # The hot path over stdio: written straight onto the pipe, the answer validated as the SDK would. Calls
            # that report progress keep the session, which routes the upstream's progress notifications.
            answer: dict[str, Any] | Exception
            try:
                answer = await process.request(
                    "tools/call", _call_params(name, arguments, meta), timeout=self._upstream.pool.call_timeout
                )
            except (TimeoutError, ConnectionError) as exc:
                answer = exc
            return await self.settle(name, arguments, meta, answer, session, again=again)
        wire_meta = cast(types.RequestParamsMeta, dict(meta)) if meta else None
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=arguments, _meta=wire_meta)
        )
        try:
            result = await session.send_request(
                request,
                types.CallToolResult,
                request_read_timeout_seconds=self._upstream.pool.call_timeout,
                progress_callback=progress,
            )
        except MCPError as exc:
            if again and self._upstream.config.url is not None and session_forgotten(exc):
                self._upstream.recycle(f"forgot the session ({exc.message})", reinit=True)
                with anyio.move_on_after(self._upstream.pool.start_timeout + 1):  # until the supervisor has a new one
                    while self._upstream.session is session or (
                        self._upstream.session is None and self._upstream.state in ("ready", "starting")
                    ):
                        await anyio.sleep(0.01)
                return await self.call(name, arguments, meta=meta, progress=progress, again=False)
            raise await self._failure(exc, name, session) from None
        except ValidationError as exc:
            raise _malformed(exc, self._upstream.name, name) from None
        return await self._accepted(result, name, arguments, meta, session, again)

    def send(
        self, name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any] | None, on_answer: OnAnswer
    ) -> Pending | None:
        """Write a call of `name` straight onto the pipe of a ready stdio upstream; `on_answer` gets the pipe's
        answer (pass it to `passed` and, when that gives nothing, to `settle`). None when the upstream is not
        ready for that (not started, restarting, over HTTP): then `call` decides."""
        process = self._upstream.process
        if (
            self._upstream.state != "ready"
            or self._upstream.session is None
            or process is None
            or self._upstream.config.url is not None
        ):
            return None
        try:
            return process.send(
                "tools/call", _call_params(name, arguments, meta), on_answer, timeout=self._upstream.pool.call_timeout
            )
        except ConnectionError:
            return None

    def passed(self, answer: dict[str, Any] | Exception) -> types.CallToolResult | None:
        """The result in `answer` when `call` would return it unchanged (valid, not a refusal to retry); else None."""
        if isinstance(answer, Exception) or "result" not in answer:
            return None
        try:
            result = _pipe_result(answer)
        except (MCPError, ValidationError):  # an answer with an error beside its result, say: `settle` says why
            return None
        return result if self._upstream._pd is None or not self._upstream._pd.refused(result) else None

    async def settle(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        meta: Mapping[str, Any] | None,
        answer: dict[str, Any] | Exception,
        session: ClientSession,
        *,
        again: bool = True,
    ) -> types.CallToolResult:
        """What `call` makes of `answer`, the pipe's answer to a call of `name` written on `session`'s pipe: the
        result, a refusal that says why, or one retry after re-reading a progressive upstream's definition."""
        try:
            result = _pipe_result(answer)
        except MCPError as exc:
            raise await self._failure(exc, name, session) from None
        except ValidationError as exc:
            raise _malformed(exc, self._upstream.name, name) from None
        return await self._accepted(result, name, arguments, meta, session, again)

    async def _accepted(
        self,
        result: types.CallToolResult,
        name: str,
        arguments: dict[str, Any] | None,
        meta: Mapping[str, Any] | None,
        session: ClientSession,
        again: bool,
    ) -> types.CallToolResult:
        if again and self._upstream._pd is not None and self._upstream._pd.refused(result):
            await self._upstream._pd.describe(session, [name])  # our grant there expired or the definition changed
            return await self.call(name, arguments, meta=meta, again=False)
        return result

    async def _failure(self, exc: MCPError, name: str, session: ClientSession) -> BaseException:
        kind = call_failure(exc)
        if kind == "timeout":
            if self._upstream.pool.task_group is not None:
                self._upstream.pool.task_group.start_soon(self._probe, session)
            return UpstreamUnavailable(
                self._upstream.name,
                f"did not answer '{name}' within {self._upstream.pool.call_timeout:g} s (the call was cancelled there; "
                "it may or may not have taken effect)",
            )
        if kind == "closed":
            process = self._upstream.process
            if process is not None:
                with anyio.move_on_after(1.0):  # the pipe closes a moment before the exit status is seen
                    await process.exited.wait()
            why = process.exit_reason() if process is not None and process.exited.is_set() else "closed the connection"
            self._upstream.recycle(why)
            return went_away(self._upstream.name, name, why, await _restart_in(self._upstream, session))
        return exc  # the upstream's own JSON-RPC error, passed on as it is

    async def _probe(self, session: ClientSession) -> None:
        """After a timed-out call: an upstream that cannot answer a ping either is recycled."""
        try:
            with anyio.fail_after(PING_TIMEOUT):
                await session.send_ping()
        except Exception:
            if self._upstream.session is session:
                self._upstream.recycle(
                    f"stopped answering (a call timed out and a ping got no answer within {PING_TIMEOUT:g} s)"
                )


async def _restart_in(upstream: Upstream, session: ClientSession) -> float | None:
    """Seconds until the supervisor starts `upstream` again after `session` ended (None: not known within 1 s)."""
    with anyio.move_on_after(1.0):
        while upstream.state == "ready" and upstream.session is session:
            await anyio.sleep(0.01)
    return max(0.0, upstream.retry_at - time.monotonic()) if upstream.state == "failed" else None


def _call_params(name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta:
        params["_meta"] = dict(meta)
    return params


def _pipe_result(answer: dict[str, Any] | Exception) -> types.CallToolResult:
    """The pipe's answer as the SDK's session would have given it: a result, or MCPError / ValidationError raised
    as the SDK raises them, so one classification serves both paths."""
    if isinstance(answer, TimeoutError):
        raise MCPError(code=types.REQUEST_TIMEOUT, message="Request 'tools/call' timed out")
    if isinstance(answer, Exception):
        raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
    if "error" in answer:
        raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
    return types.CallToolResult.model_validate(answer["result"], by_name=False)


def _malformed(exc: ValidationError, server: str, name: str) -> UpstreamUnavailable:
    first = exc.errors(include_url=False)[0]
    where = ".".join(map(str, first["loc"])) or "result"
    return UpstreamUnavailable(
        server, f"returned a result for '{name}' that is not a valid tools/call result ({where}: {first['msg']})"
    )
