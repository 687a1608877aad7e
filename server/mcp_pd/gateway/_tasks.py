"""Task-augmented tool calls carried through the gateway (MCP 2025-11-25 tasks): create, get, result, cancel, list.

A client on protocol 2025-11-25 may call a tool of an upstream that runs tasks with `params.task`; the gateway
passes the call on task-augmented and answers the upstream's `CreateTaskResult` with a task id of its own, bound to
that client (`_sessions.ClientId`). `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` are answered only
for the caller's own ids: another client's id, or one never given, is "not found" alike, and `tasks/list` lists the
caller's tasks only, although every client's tasks live in the one shared upstream session. What a client may hold
is bounded (64 tasks, 4096 in all); its tasks are cancelled upstream and forgotten once its session ends.

`tasks` is declared (in `initialize`, to 2025-11-25 clients) when an upstream declares task-augmented tool calls
or lists a tool that takes them. A tool that runs only as a task (`execution.taskSupport: "required"`) is listed
to those clients; to clients of other protocol versions, which have no task-augmented calls, it is not listed, and
a plain call of it, by anyone, is refused with -32601 (as the spec has a server do) and a message saying why.

What the `mcp` 2.3 SDK lacks, and what is done instead (spec/interpretations.md I-51): its per-version result
validation has no `CreateTaskResult` for `tools/call` (tasks/* are "deliberately absent" from its surfaces), on
either side. The server side's answer is therefore written by a server middleware (`Server.middleware`, which the
SDK lets answer on its own) after the whole handler chain, the extension's gate included, has run; the upstream
side sends the task-augmented call as raw JSON-RPC (the pipe of a stdio upstream; the session's dispatcher,
private, for an HTTP one). `tasks/*` are custom methods to the SDK: registered with `add_request_handler`.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcp_pd._sessions import ClientId

from ._pool import Upstream, UpstreamPool, UpstreamUnavailable

__all__ = ["TASKS_PROTOCOL", "TASK_CAPABILITY", "TaskRouter", "runs_tasks", "task_only"]

logger = logging.getLogger("mcp_pd.gateway")

# The only protocol version with task-augmented requests in the core (2026-07-28 moved them to an extension).
TASKS_PROTOCOL: Final = "2025-11-25"
TASK_CAPABILITY: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
PER_CLIENT: Final = 64
IN_ALL: Final = 4096
_RAW: Final = TypeAdapter(dict[str, Any])


def task_only(tool: types.Tool) -> bool:
    """Whether `tool` runs only as a task-augmented call."""
    return tool.execution is not None and tool.execution.task_support == "required"


def _takes_tasks(tool: types.Tool) -> bool:
    return tool.execution is not None and tool.execution.task_support in ("optional", "required")


def runs_tasks(upstream: Upstream) -> bool:
    """Whether `upstream`, as it is up now, runs task-augmented tool calls (declared, or a listed tool takes them)."""
    session = upstream.session
    capabilities = session.server_capabilities if session is not None else None
    tasks = capabilities.tasks if capabilities is not None else None
    if tasks is not None and tasks.requests is not None and tasks.requests.tools is not None:
        return True
    return any(_takes_tasks(t) for t in upstream.tools or ())


@dataclass(frozen=True)
class CarriedTask:
    """One task a client created through the gateway: whose it is and where it runs."""

    owner: str  # the client's key (`ClientId.key`)
    session: str  # the upstream session it runs on: the shared one (the upstream's name) or a client's own
    server: str  # the upstream's name
    remote: str  # the upstream's task id (never shown to the client)


class _Creating:
    """Set by the middleware around a task-augmented `tools/call`: who asks, and the task the call created."""

    def __init__(self, owner: ClientId, task: types.TaskMetadata) -> None:
        self.owner = owner
        self.task = task
        self.created: dict[str, Any] | None = None


_creating: contextvars.ContextVar[_Creating | None] = contextvars.ContextVar("mcp_pd_task_creating", default=None)


class TaskRouter:
    """The tasks clients created through the gateway, by the gateway's own ids."""

    def __init__(
        self,
        pool: UpstreamPool,
        *,
        listing: Callable[[], Iterable[types.Tool]],
        cached: Callable[[], Iterable[types.Tool]] = tuple,
        results: Callable[[str, types.CallToolResult], types.CallToolResult] | None = None,
        remembered: Callable[[Upstream], bool | None] = lambda upstream: None,
    ) -> None:
        self.pool = pool
        self.listing = listing  # the gateway's merged listing
        self.cached = cached  # tools of the export (--cache) whose upstreams have not listed yet
        self.results = results  # a task's result as served (resource links rewritten: `_content.py`)
        self.remembered = remembered  # whether an upstream not up yet ran tasks at its last start (None: unknown)
        self.tasks: dict[str, CarriedTask] = {}
        self._client: Callable[[ServerRequestContext[Any, Any]], ClientId] | None = None
        self._seen: Iterable[types.Tool] | None = None
        self._required: frozenset[str] = frozenset()

    # -- what is carried ----------------------------------------------------------------------------------
    def supported(self) -> bool:
        """Whether `tasks` is declared: an upstream runs task-augmented tool calls (as it says now, as it said at its
        last start, or as its export shows), or one is on its first start with nothing known of it yet (declared
        rather than withheld from a session that keeps its handshake: a call to an upstream without tasks is then
        made as a plain call, which the spec lets a receiver do)."""
        starting = self.pool.first_starting()
        for upstream in self.pool.upstreams.values():
            if upstream.tools is not None:
                if runs_tasks(upstream):
                    return True
                continue
            remembered = self.remembered(upstream)
            if remembered or (remembered is None and upstream in starting):
                return True
        return any(_takes_tasks(t) for t in self.cached())

    def required(self) -> frozenset[str]:
        """The served names that run only as tasks (worked out again only when the listing is another object)."""
        listing = self.listing()
        if listing is not self._seen:
            self._seen, self._required = listing, frozenset(t.name for t in listing if task_only(t))
        return self._required

    @staticmethod
    def carries(ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether the client of `ctx` has task-augmented calls (its protocol version)."""
        return ctx.protocol_version == TASKS_PROTOCOL

    def refusal(self, name: str, ctx: ServerRequestContext[Any, Any] | None) -> MCPError:
        """Why a plain call of the task-only `name` is not run: -32601, as the spec has a server answer it."""
        version = ctx.protocol_version if ctx is not None else None
        if version is not None and version != TASKS_PROTOCOL:
            how = (
                f"this client speaks MCP {version}, which has no task-augmented calls; a client on {TASKS_PROTOCOL} "
                "that supports tasks can run it"
            )
        else:
            how = (
                "call it with the `task` parameter (a task-augmented tools/call), then poll tasks/get and tasks/result"
            )
        return MCPError(
            types.METHOD_NOT_FOUND,
            f"Tool '{name}' runs only as a task (its execution.taskSupport is 'required'): {how}.",
            {"tool": name, "taskSupport": "required", "tasksProtocolVersion": TASKS_PROTOCOL},
        )

    # -- the server side -----------------------------------------------------------------------------------
    def install(self, server: Server[Any], client: Callable[[ServerRequestContext[Any, Any]], ClientId]) -> None:
        """Register tasks/* on `server`, the middleware that answers a task-augmented `tools/call` with the task it
        created and declares `tasks` in `initialize`, and the listing without task-only tools for the clients of
        other protocol versions."""
        self._client = client
        server.middleware.append(self._middleware)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)
        listing = server.get_request_handler("tools/list")
        if listing is not None:
            inner = listing.handler

            async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
                result = await inner(ctx, params)
                required = self.required()
                if not required or self.carries(ctx):
                    return result
                if isinstance(result, types.ListToolsResult):
                    return result.model_copy(update={"tools": [t for t in result.tools if t.name not in required]})
                if isinstance(result, dict) and isinstance(result.get("tools"), list):  # the extension's page
                    kept = [t for t in result["tools"] if not (isinstance(t, dict) and t.get("name") in required)]
                    return {**result, "tools": kept}
                return result

            server.add_request_handler("tools/list", listing.params_type, list_tools)

    async def _middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            result = await call_next(ctx)
            if isinstance(result, dict) and result.get("protocolVersion") == TASKS_PROTOCOL and self.supported():
                result["capabilities"] = {**result.get("capabilities", {}), "tasks": TASK_CAPABILITY}
            return result
        task = (ctx.params or {}).get("task") if ctx.method == "tools/call" else None
        if task is None or self._client is None or not self.carries(ctx):
            return await call_next(ctx)
        try:
            metadata = types.TaskMetadata.model_validate(task, by_name=False)
        except ValidationError as exc:
            why = exc.errors()[0]["msg"]
            raise MCPError(types.INVALID_PARAMS, f"params.task is not valid task metadata: {why}") from None
        creating = _Creating(self._client(ctx), metadata)
        token = _creating.set(creating)
        try:
            result = await call_next(ctx)  # the whole chain: the extension's gate, then the gateway's route
        finally:
            _creating.reset(token)
        # The SDK's result validation knows no CreateTaskResult for tools/call: what the call created is answered
        # here, after it; a refusal of the gate (or any result without a task) is answered as it came.
        return creating.created if creating.created is not None else result

    def asked(self) -> types.TaskMetadata | None:
        """The task metadata of the task-augmented call being handled now (None for a plain call)."""
        creating = _creating.get()
        return None if creating is None else creating.task

    # -- creating ------------------------------------------------------------------------------------------
    async def create(
        self, upstream: Upstream, tool: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any] | None
    ) -> types.CallToolResult:
        """Call `tool` on `upstream` task-augmented for the client of the call being handled. The task it created
        is what the middleware answers; the returned result only passes the SDK's validation of a tools/call."""
        creating = _creating.get()
        assert creating is not None
        owner = creating.owner
        if not owner.lasting:
            raise MCPError(
                types.INVALID_REQUEST,
                "A task needs a client session to belong to (tasks/get, tasks/result come later): connect with the "
                f"{TASKS_PROTOCOL} initialize handshake",
            )
        mine = sum(t.owner == owner.key for t in self.tasks.values())
        if mine >= PER_CLIENT or len(self.tasks) >= IN_ALL:
            bound = f"{PER_CLIENT} for one client" if mine >= PER_CLIENT else f"{IN_ALL} in all"
            raise MCPError(
                types.INVALID_REQUEST,
                f"Too many tasks held ({bound}): fetch the results (tasks/result) or cancel tasks first",
            )
        if not runs_tasks(upstream):  # `tasks` was declared before this upstream was known: a plain call, then
            return await upstream.calls.call(tool, arguments, meta=meta)
        params: dict[str, Any] = {"name": tool, "task": creating.task.model_dump(by_alias=True, exclude_none=True)}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        answer = await self._raw(upstream, "tools/call", params)
        task = answer.get("task")
        if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
            # The upstream ran it as a plain call (a tool that takes no tasks): that result is the answer.
            return types.CallToolResult.model_validate(answer, by_name=False)
        ours = secrets.token_urlsafe(18)
        self.tasks[ours] = CarriedTask(owner.key, upstream.key, upstream.name, task["taskId"])
        creating.created = {**answer, "task": {**task, "taskId": ours}}
        logger.info("task %s of %r created on upstream %r for %s", ours, tool, upstream.name, owner.key)
        return types.CallToolResult(content=[])

    # -- tasks/* ---------------------------------------------------------------------------------------------
    def _own(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> CarriedTask:
        """The caller's task `task_id`; another client's is not found, exactly like one never given."""
        task = self.tasks.get(task_id)
        if task is None or self._client is None or task.owner != self._client(ctx).key:
            raise MCPError(types.INVALID_PARAMS, f"Task '{task_id}' not found (tasks are seen only by their client)")
        return task

    async def _forward(self, task_id: str, task: CarriedTask, method: str) -> dict[str, Any]:
        try:
            upstream = self.pool.instance(task.session)
            answer = await self._raw(upstream, method, {"taskId": task.remote})
        except MCPError as exc:
            if method == "tasks/get" and exc.code == types.INVALID_PARAMS:  # gone upstream (its TTL ran out)
                self.tasks.pop(task_id, None)
            raise
        except UpstreamUnavailable as exc:
            raise MCPError(types.INTERNAL_ERROR, f"Task '{task_id}': {exc}", {"server": task.server}) from None
        return self._ours(task_id, task, answer)

    def _ours(self, task_id: str, task: CarriedTask, answer: dict[str, Any]) -> dict[str, Any]:
        """`answer` with the upstream's task id replaced by ours, wherever it names the task."""
        if answer.get("taskId") == task.remote:
            answer = {**answer, "taskId": task_id}
        meta = answer.get("_meta")
        if isinstance(meta, dict) and isinstance(meta.get(RELATED_TASK), dict):
            answer = {**answer, "_meta": {**meta, RELATED_TASK: {**meta[RELATED_TASK], "taskId": task_id}}}
        return answer

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams) -> dict[str, Any]:
        return await self._forward(params.task_id, self._own(ctx, params.task_id), "tasks/get")

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        return await self._forward(params.task_id, self._own(ctx, params.task_id), "tasks/cancel")

    async def _result(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        task = self._own(ctx, params.task_id)
        answer = await self._forward(params.task_id, task, "tasks/result")
        if self.results is None or "content" not in answer:
            return answer
        try:
            result = types.CallToolResult.model_validate(answer, by_name=False)
        except ValidationError:
            return answer
        served = self.results(task.server, result)
        return served.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        """The caller's tasks (all of them: at most PER_CLIENT), each as its upstream says it is now."""
        key = self._client(ctx).key if self._client is not None else None
        mine = [(task_id, task) for task_id, task in self.tasks.items() if task.owner == key]
        found: dict[str, dict[str, Any]] = {}

        async def one(task_id: str, task: CarriedTask) -> None:
            try:
                found[task_id] = await self._forward(task_id, task, "tasks/get")
            except (MCPError, UpstreamUnavailable) as exc:
                logger.info("task %s left out of tasks/list: %s", task_id, exc)

        async with anyio.create_task_group() as tg:
            for task_id, task in mine:
                tg.start_soon(one, task_id, task)
        return {"tasks": [found[task_id] for task_id, _ in mine if task_id in found]}

    # -- clients leaving ---------------------------------------------------------------------------------------
    def left(self, client: str) -> None:
        """A session listener: a client that left has its tasks cancelled upstream (nobody can reach them now)."""
        gone = [(task_id, task) for task_id, task in self.tasks.items() if task.owner == client]
        for task_id, _ in gone:
            del self.tasks[task_id]
        if gone:
            logger.info("a client left: its %d task(s) are forgotten and cancelled upstream", len(gone))
        if gone and self.pool.task_group is not None:
            self.pool.task_group.start_soon(self._cancel_all, [task for _, task in gone])

    async def _cancel_all(self, tasks: list[CarriedTask]) -> None:
        for task in tasks:
            try:
                await self._raw(self.pool.instance(task.session), "tasks/cancel", {"taskId": task.remote})
            except (MCPError, UpstreamUnavailable) as exc:  # finished already, or its upstream is gone
                logger.debug("task %s of upstream %r not cancelled: %s", task.remote, task.server, exc)

    # -- the upstream side -------------------------------------------------------------------------------------
    async def _raw(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`method` sent to `upstream` as raw JSON-RPC: its result, or its error raised as MCPError (the SDK's
        client validates a tools/call result as CallToolResult, which a CreateTaskResult is not)."""
        session = await upstream.ensure()
        process = upstream.process
        if process is not None and upstream.config.url is None:
            try:
                answer = await process.request(method, params, timeout=self.pool.call_timeout)
            except (TimeoutError, ConnectionError) as exc:
                why = f"did not answer {method}: {exc or type(exc).__name__}"
                raise UpstreamUnavailable(upstream.name, why) from None
            if "error" in answer:
                raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
            return _RAW.validate_python(answer.get("result", {}))
        dispatcher = getattr(session, "_dispatcher", None)  # private: the SDK sends no raw request otherwise
        if dispatcher is None:
            raise UpstreamUnavailable(upstream.name, "cannot be sent task requests by this version of the mcp SDK")
        answer = await dispatcher.send_raw_request(method, params, {"timeout": self.pool.call_timeout})
        return _RAW.validate_python(answer)
