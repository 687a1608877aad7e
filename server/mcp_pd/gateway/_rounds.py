"""Multi-round-trip calls (SEP-2322) for 2026-07-28 clients: what an upstream asks mid-call, asked of a client that
has no back-channel.

A handshake-era client is asked on its call's own stream (`_bridge.py`). A 2026-07-28 client cannot be: a server of
that era answers `input_required` with the requests inside, and the client sends the same request again with the
answers and the `requestState` it was given. The gateway's upstreams speak the handshake era and wait for their
answer, so the gateway parks the upstream call: it goes on running in the pool's task group while the client is
answered `input_required`. The retry finds it by its `requestState`, a random single-use token bound to the
caller's principal and to the request (method, name or URI, arguments), which lapses after `PARK_TIMEOUT`. The
answers go to the waiting upstream requests, and the retry waits for what comes next: the result, or another round.

A parked call nobody resumes is cancelled when its token lapses, and so is one whose client goes away mid-round
(the upstream is told, as for any cancelled call); its upstream requests get an error that says why.

Knows nothing about tools, grants or modes.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_pd._sessions import ClientId

__all__ = ["MAX_PARKED", "MAX_PARKED_PER_CLIENT", "MAX_ROUNDS", "PARK_TIMEOUT", "Exchange", "Rounds"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
# How long a parked call waits for its client's retry: a person may be answering an elicitation.
PARK_TIMEOUT: Final = 300.0
# Bounds on what clients can make the gateway hold: parked calls at once, and rounds of one call.
MAX_PARKED: Final = 1000
MAX_PARKED_PER_CLIENT: Final = 16  # per client (anonymous requests: per peer address), so none fills the rest
MAX_ROUNDS: Final = 16


class _Asked:
    """One request an upstream sent, waiting for the client's answer."""

    def __init__(self, request: types.InputRequest) -> None:
        self.request = request
        self.answered = anyio.Event()
        self.answer: Any = None

    def settle(self, answer: Any) -> None:
        self.answer = answer
        self.answered.set()


class Exchange:
    """One upstream call of a 2026-07-28 client, running while its client is asked for input."""

    def __init__(self, binding: str, client: str) -> None:
        self.binding = binding
        self.client = client  # what its parking counts against (`ClientId.limit_key`)
        self.rounds = 0
        self._asked: dict[str, _Asked] = {}
        self._unsent: list[str] = []
        self._count = 0
        self._wake = anyio.Event()
        self._finished = False  # the upstream call returned, or was stopped: later requests are refused at once
        self._result: Any = None
        self._error: BaseException | None = None
        self._scope = anyio.CancelScope()

    @property
    def waiting(self) -> bool:
        """Whether the upstream call waits for its client's answer now (then a new request is not from it)."""
        return bool(self._asked)

    async def ask(self, kind: str, request: types.InputRequest) -> Any:
        """Called from the upstream's request callback: the client's answer (a result model or `ErrorData`)."""
        if self._finished or self._scope.cancel_called:
            message = "The call this request belongs to has ended; its client can no longer be asked."
            return types.ErrorData(code=types.INVALID_REQUEST, message=message)
        self._count += 1
        key = f"{kind}-{self._count}"
        asked = self._asked[key] = _Asked(request)
        self._unsent.append(key)
        self._wake.set()
        await asked.answered.wait()
        return asked.answer

    def answer(self, responses: Mapping[str, Any] | None) -> None:
        """The client's retry: each request sent to it gets its answer (or an error naming what was missing)."""
        for key in [k for k in self._asked if k not in self._unsent]:
            response = (responses or {}).get(key)
            if response is None:
                message = f"The client's retry did not answer input request '{key}'."
                response = types.ErrorData(code=types.INVALID_PARAMS, message=message)
            self._asked.pop(key).settle(response)

    def abandon(self, why: str) -> None:
        """Stop the upstream call; its waiting requests get `why`."""
        for asked in self._asked.values():
            asked.settle(types.ErrorData(code=types.INVALID_REQUEST, message=why))
        self._asked.clear()
        self._unsent.clear()
        self._scope.cancel()

    async def run(self, work: Callable[[], Awaitable[Any]]) -> None:
        with self._scope:
            try:
                self._result = await work()
            except Exception as exc:  # the caller's retry raises it, as a direct call would have
                self._error = exc
        if self._scope.cancelled_caught:
            self._error = MCPError(types.INTERNAL_ERROR, "The call was cancelled while it waited for its client.")
        self._finished = True
        for asked in self._asked.values():  # asked while the call ended: nobody will answer them now
            asked.settle(
                types.ErrorData(code=types.INVALID_REQUEST, message="The call ended before its client answered.")
            )
        self._asked.clear()
        self._unsent.clear()
        self._wake.set()

    async def next(self) -> dict[str, types.InputRequest] | None:
        """The requests to send the client now, or None once the call finished (`result()` has it)."""
        while True:
            if self._unsent:
                await anyio.sleep(0.01)  # requests an upstream sends together go to the client in one round
                keys, self._unsent = self._unsent, []
                requests = {k: self._asked[k].request for k in keys if k in self._asked}
                if requests:
                    return requests
                continue
            if self._finished:
                return None
            self._wake = anyio.Event()
            await self._wake.wait()

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result


class Rounds:
    """Parked calls of 2026-07-28 clients, by `requestState` (see the module's docstring)."""

    def __init__(self, task_group: Callable[[], TaskGroup | None]) -> None:
        self._task_group = task_group
        self._parked: dict[str, Exchange] = {}
        self._parked_by: Counter[str] = Counter()  # per client: how many of its calls are parked now
        self._running: dict[int, Exchange] = {}  # id(first request's context) -> its exchange, while it runs
        # Who is asking, for binding a token to them (the gateway sets it to the extension's session key).
        self.principal: Callable[[Context], str | None] = lambda ctx: None

    def exchange(self, ctx: Context) -> Exchange | None:
        """The exchange whose upstream call `ctx` started, while it runs."""
        return self._running.get(id(ctx))

    async def serve(
        self,
        ctx: Context,
        params: types.InputResponseRequestParams,
        request: tuple[str, str, Any],
        work: Callable[[], Awaitable[Any]],
        client: ClientId,
    ) -> Any:
        """`work`'s result, or `input_required` while its upstream waits for this client's input.

        `request` is (method, name or URI, arguments): what a retry must repeat to resume the call; `client`:
        whose call it is (its parked calls are bounded).
        """
        binding = json.dumps([self.principal(ctx), *request], sort_keys=True, default=str)
        token = params.request_state
        if token is not None:
            exchange = self._parked.get(token)
            if exchange is None or not secrets.compare_digest(exchange.binding, binding):
                # Not this caller's or not this request's: it stays parked for its own.
                raise MCPError(
                    types.INVALID_PARAMS,
                    "This requestState is unknown, already used or lapsed (each is single-use, for the request that "
                    f"received it, and lasts {PARK_TIMEOUT:.0f} s): send the request again without requestState and "
                    "inputResponses.",
                )
            self._unpark(token)
            exchange.answer(params.input_responses)
        else:
            task_group = self._task_group()
            if task_group is None:  # the pool is not running (closing): nothing to park the call in
                return await work()
            exchange = Exchange(binding, client.limit_key)
            task_group.start_soon(self._run, ctx, exchange, work, name=f"parked {request[0]} {request[1]}")
        try:
            requests = await exchange.next()
        except anyio.get_cancelled_exc_class():
            exchange.abandon("The client went away while the upstream waited for its input.")
            raise
        if requests is None:
            return exchange.result()
        return self._park(exchange, requests)

    def _park(self, exchange: Exchange, requests: dict[str, types.InputRequest]) -> types.InputRequiredResult:
        exchange.rounds += 1
        why = None
        if exchange.rounds > MAX_ROUNDS:
            why = f"the upstream asked for input more than {MAX_ROUNDS} times in one call"
        elif self._parked_by[exchange.client] >= MAX_PARKED_PER_CLIENT:
            why = f"{MAX_PARKED_PER_CLIENT} calls of this client already wait for its input"
        elif len(self._parked) >= MAX_PARKED:
            why = f"{MAX_PARKED} calls already wait for their clients' input"
        if why is not None:
            exchange.abandon(f"The gateway stopped this call: {why}.")
            raise MCPError(types.INTERNAL_ERROR, f"The gateway stopped this call: {why}; answer or drop those first.")
        token = secrets.token_urlsafe(24)
        self._parked[token] = exchange
        self._parked_by[exchange.client] += 1
        task_group = self._task_group()
        if task_group is not None:
            task_group.start_soon(self._lapse, token, exchange)
        return types.InputRequiredResult(input_requests=requests, request_state=token)

    def _unpark(self, token: str) -> None:
        exchange = self._parked.pop(token)
        self._parked_by[exchange.client] -= 1
        if not self._parked_by[exchange.client]:
            del self._parked_by[exchange.client]

    async def _run(self, ctx: Context, exchange: Exchange, work: Callable[[], Awaitable[Any]]) -> None:
        self._running[id(ctx)] = exchange
        try:
            await exchange.run(work)
        finally:
            del self._running[id(ctx)]

    async def _lapse(self, token: str, exchange: Exchange) -> None:
        await anyio.sleep(PARK_TIMEOUT)
        if self._parked.get(token) is exchange:
            self._unpark(token)
            logger.info("a parked call lapsed: its client did not come back within %.0f s", PARK_TIMEOUT)
            exchange.abandon(f"The client did not answer within {PARK_TIMEOUT:.0f} s.")
