"""Upstream processes that cannot outlive the gateway: a stdio transport and the reaper behind it.

Each stdio upstream runs in its own process group (so a tree such as `npx` -> `node` is stopped as one) with
PR_SET_PDEATHSIG on Linux (so the direct child dies with the gateway even before anything else can act), and
every group is registered with a watchdog process that kills what is left if the gateway dies without
reaping (SIGKILL included). `send` (and `request`, its awaited form) is the hot path's own lane onto the pipe: one
JSON-RPC request written and its response handed back as parsed JSON, without the SDK's session in between (the
session keeps every other message).

stdout is read by `_stdout.StdoutReader` (at most `max_line` bytes a message; a longer one, or one that cannot be
decoded, fails the request it answers rather than leave it waiting for its timeout). stderr is the operator's:
copied to the gateway's stderr (unless quiet), and its last lines logged when the process ends on its own; it
never goes into `exit_reason`, which callers may show to clients.
Knows nothing about MCP beyond framing JSON-RPC lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import logging
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TextIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from ._config import UpstreamConfig
from ._lines import MAX_LINE, OFF_LOOP, dump, parse
from ._stdout import LANE_ID, LANE_MARK, READ_CHUNK, StdoutReader
from ._watchdog import group_alive, signal_group

__all__ = ["OnAnswer", "Pending", "StderrLog", "StdioProcess", "Watchdog"]

logger = logging.getLogger("mcp_pd.gateway")

# The MCP shutdown sequence (close stdin, wait, SIGTERM, wait, SIGKILL), each wait bounded.
STDIN_GRACE: Final = 2.0
TERM_GRACE: Final = 2.0
_POLL: Final = 0.02
_EXIT_POLL: Final = 0.25
_PR_SET_PDEATHSIG: Final = 1
_STDERR_DRAIN: Final = 0.5  # after an exit, how long its last stderr lines may take to arrive


def _frame(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as one line on the pipe."""
    return dump(message) + b"\n"


OnAnswer = Callable[[dict[str, Any] | Exception], None]


def _resolve(future: asyncio.Future[dict[str, Any]], answer: dict[str, Any] | Exception) -> None:
    if future.done():
        return
    if isinstance(answer, Exception):
        future.set_exception(answer)
    else:
        future.set_result(answer)


class Pending:
    """One request of the lane on the pipe, until its answer is handed over (at most once)."""

    __slots__ = ("_on_answer", "_process", "deadline", "request_id", "timeout")

    def __init__(self, process: StdioProcess, request_id: str, on_answer: OnAnswer, timeout: float) -> None:
        self._process = process
        self.request_id = request_id
        self._on_answer: OnAnswer | None = on_answer
        self.timeout = timeout
        self.deadline = asyncio.get_running_loop().time() + timeout

    def answer(self, answer: dict[str, Any] | Exception) -> None:
        on_answer, self._on_answer = self._on_answer, None
        self._forget()
        if on_answer is None:
            return
        try:
            on_answer(answer)
        except Exception:  # called from the pipe's reader: one bad answer must not cost the pipe
            logger.exception("handling the answer to %s failed", self.request_id)

    def expire(self) -> None:
        self._process._cancel(self.request_id, f"timed out after {self.timeout:g}s")
        self.answer(TimeoutError())

    def cancel(self, reason: str) -> None:
        """Nobody wants the answer any more: forget it and tell the upstream."""
        if self._on_answer is None:
            return
        self._on_answer = None
        self._forget()
        self._process._cancel(self.request_id, reason)

    def _forget(self) -> None:
        self._process._waiting.pop(self.request_id, None)


class _InFlight:
    """The lane's requests on one pipe until answered: by id, with one timer for all their deadlines (one set and
    cancelled per call cost more than the call's own write), and answers taken as they arrive (`arrived`)."""

    def __init__(self) -> None:
        self.waiting: dict[str, Pending] = {}
        self.idle = False  # the stdout reader waits for input between two lines
        self._expiry: asyncio.TimerHandle | None = None

    def add(self, pending: Pending) -> None:
        self.waiting[pending.request_id] = pending
        if self._expiry is None or pending.deadline < self._expiry.when():
            self._arm(pending.deadline)

    def _arm(self, deadline: float) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = asyncio.get_running_loop().call_at(deadline, self._expire)

    def _expire(self) -> None:
        """Time out the requests whose deadline has passed; the timer is set again for the earliest left."""
        self._expiry = None
        now = asyncio.get_running_loop().time()
        for pending in [p for p in self.waiting.values() if p.deadline <= now]:
            pending.expire()
        if self.waiting:
            self._arm(min(p.deadline for p in self.waiting.values()))

    def answered(self, line: bytes) -> bool:
        """True when `line` answers a request of the lane (and hands it over)."""
        try:
            message = parse(line)
        except (ValueError, RecursionError):
            return False
        request_id = message.get("id") if isinstance(message, dict) else None
        pending = self.waiting.get(request_id) if isinstance(request_id, str) else None
        if pending is None or not ("result" in message or "error" in message):
            return False
        pending.answer(message)
        return True

    def arrived(self, data: bytes) -> int:
        """How many leading bytes of `data`, fresh from stdout, were whole answers to requests of the lane, handed
        over here at once rather than by the reader task a turn of the event loop later (a turn is a good part of
        the hop's cost). Only while that task waits for input with nothing unread before `data`, so that messages
        keep their order; the rest of `data` goes to the task."""
        taken = 0
        if self.idle and self.waiting and LANE_MARK in data:
            while (end := data.find(b"\n", taken)) >= 0 and end - taken < OFF_LOOP:
                line = data[taken:end]
                if LANE_MARK not in line or not self.answered(line):
                    break
                taken = end + 1
        if taken < len(data):
            self.idle = False  # the task has something to read now
        return taken

    def abandon(self) -> None:
        """The pipe closed: every request left fails now."""
        for pending in list(self.waiting.values()):
            pending.answer(ConnectionError("the upstream closed the connection"))
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own protocol for a subprocess's pipes, with stdout's data offered to `arrived` before it is
    buffered for the reader: what `arrived` took (it says how many leading bytes) is not buffered."""

    def __init__(self, arrived: Callable[[bytes], int], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=READ_CHUNK, loop=loop)
        self._take = arrived

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1 and isinstance(data, bytes):
            taken = self._take(data)
            if taken:
                if taken == len(data):
                    return
                data = data[taken:]
        super().pipe_data_received(fd, data)


class Watchdog:
    """A small separate process that reaps every registered process group when the gateway's pipe closes."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._broken = False

    def start(self) -> None:
        script = Path(__file__).with_name("_watchdog.py")
        # Its own session: a Ctrl-C or a group kill aimed at the gateway must not take the reaper down first.
        # stdout is never the gateway's: on stdio that is the MCP channel.
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _send(self, line: str) -> None:
        if self._proc is None or self._proc.stdin is None or self._broken:
            return
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()
        except OSError as exc:
            self._broken = True
            logger.warning("the upstream watchdog is gone (%s); upstreams are still stopped on a clean shutdown", exc)

    def register(self, pgid: int) -> None:
        self._send(f"+{pgid}")

    def unregister(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def close(self) -> None:
        """Say goodbye (everything registered was reaped) and wait for the watchdog to exit."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=TERM_GRACE * 3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """A preexec function that makes the child receive SIGKILL when the gateway (the forking thread) dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the gateway died between fork and prctl
            os._exit(1)

    return preexec


class StderrLog:
    """An upstream's stderr, the operator's: copied to the gateway's stderr (`errlog`, unless quiet), its last lines
    kept for the log line written when the process ends on its own; never in what clients are told (they can hold
    arguments, paths, secrets)."""

    def __init__(self, name: str, errlog: TextIO | None) -> None:
        self.name = name
        self.errlog = errlog
        self.lines: deque[str] = deque(maxlen=20)
        self.closed = anyio.Event()

    def tail(self, lines: int = 5) -> str:
        return " | ".join(list(self.lines)[-lines:])

    async def read(self, stream: asyncio.StreamReader) -> None:
        buffer = b""
        try:
            while chunk := await stream.read(READ_CHUNK):
                *lines, buffer = (buffer + chunk).split(b"\n")
                buffer = buffer[-READ_CHUNK:]
                for raw in lines:
                    self._line(raw)
            self._line(buffer)  # a last line without a newline (a crash often writes one)
        finally:
            self.closed.set()

    def _line(self, raw: bytes) -> None:
        line = raw.decode(errors="replace").rstrip()
        if line:
            self.lines.append(line[:500])
            if self.errlog is not None:
                print(f"[{self.name}] {line}", file=self.errlog, flush=True)


class StdioProcess:
    """One stdio upstream as an MCP client transport (`async with` yields the read and write streams).

    Also what the pool needs to report failures: `exited` (set when the process ends), `returncode`, why it
    ended (`exit_reason`, fit for clients), the last lines of stderr (for the operator only), and how many stdout
    lines were not JSON-RPC. `max_line`: the longest message read from stdout, in bytes (default: the config's).
    """

    def __init__(
        self, config: UpstreamConfig, watchdog: Watchdog, *, errlog: TextIO | None = None, max_line: int | None = None
    ) -> None:
        assert config.command is not None
        self.config = config
        self.watchdog = watchdog
        self.errlog = errlog
        self.max_line = max_line or config.max_message or MAX_LINE  # the flag's, else the entry's, else 64 MiB
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exited = anyio.Event()
        self.noise = 0
        self.fault: str | None = None  # why the gateway stopped it, when it did so for something it wrote
        self.stderr = StderrLog(config.name, errlog)
        self._stdin: asyncio.StreamWriter | None = None
        self._in_flight = _InFlight()
        self._waiting = self._in_flight.waiting
        self._stdout = StdoutReader(self, self._in_flight)
        self._ids = itertools.count(1)
        self._context: (
            contextlib.AbstractAsyncContextManager[
                tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
            ]
            | None
        ) = None

    def exit_reason(self) -> str:
        """Why the process ended, in words fit for any client: never its stderr (`stderr.tail()` is logged)."""
        if self.fault is not None:
            return self.fault
        code = self.returncode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return f"the process {how}"

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        self._context = self._run()
        return await self._context.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._context is not None
        return await self._context.__aexit__(exc_type, exc, tb)

    @contextlib.asynccontextmanager
    async def _run(
        self,
    ) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
    ]:
        config = self.config
        assert config.command is not None
        # asyncio.create_subprocess_exec, with a protocol that offers stdout's data to `_InFlight.arrived` first.
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(self._in_flight.arrived, loop),
            config.command,
            *config.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=get_default_environment() | dict(config.env),
            cwd=config.cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        self.pid = proc.pid
        self._stdin = proc.stdin
        self.watchdog.register(proc.pid)
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._stdout.run, proc, read_writer)
                tg.start_soon(self._write_stdin, proc, write_reader)
                assert proc.stderr is not None
                tg.start_soon(self.stderr.read, proc.stderr)
                tg.start_soon(self._watch_exit, proc)
                try:
                    yield read_stream, write_stream
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(proc)
                    tg.cancel_scope.cancel()
        finally:
            self._stdin = None
            self._in_flight.abandon()
            for stream in (read_writer, read_stream, write_stream, write_reader):
                stream.close()
            self.watchdog.unregister(proc.pid)

    # -- the lane: one request straight onto the pipe ------------------------------------------------
    def send(self, method: str, params: dict[str, Any], on_answer: OnAnswer, *, timeout: float) -> Pending:
        """Write one JSON-RPC request now; `on_answer` is called once, from the pipe's reader, with the response
        object (`result` or `error`), or with TimeoutError after `timeout` seconds (the upstream is then sent
        `notifications/cancelled`, as the SDK does) or ConnectionError when the pipe closes first.

        A callback rather than a future: the answer is handled as soon as it is read, not one event-loop turn
        later in a waiting task. Raises ConnectionError when the pipe is already closed.
        """
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            raise ConnectionError("the upstream's pipe is closed")
        request_id = f"{LANE_ID}{next(self._ids)}"
        try:
            stdin.write(_frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise ConnectionError(f"the upstream's pipe is closed ({exc})") from None
        pending = Pending(self, request_id, on_answer, timeout)
        self._in_flight.add(pending)
        return pending

    async def request(self, method: str, params: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        """`send`, awaited: the response object; raises what `send` would have handed over instead."""
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        pending = self.send(method, params, partial(_resolve, answer), timeout=timeout)
        try:
            return await answer
        except anyio.get_cancelled_exc_class():
            pending.cancel("the caller cancelled the request")
            raise

    def _cancel(self, request_id: str, reason: str) -> None:
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with contextlib.suppress(OSError, RuntimeError):
            stdin.write(_frame(note))

    def _reply_error(self, request_id: int | str, message: str) -> None:
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            return
        error = {"code": types.INVALID_REQUEST, "message": message}
        with contextlib.suppress(OSError, RuntimeError):
            stdin.write(_frame({"jsonrpc": "2.0", "id": request_id, "error": error}))

    async def _write_stdin(
        self, proc: asyncio.subprocess.Process, source: MemoryObjectReceiveStream[SessionMessage]
    ) -> None:
        assert proc.stdin is not None
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    proc.stdin.write(data.encode())
                    await proc.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the process is gone; its stdout EOF ends the session

    async def _log_exit(self) -> None:
        """An upstream that ended on its own: its last stderr lines go to the operator's log (never to clients)."""
        with anyio.move_on_after(_STDERR_DRAIN):
            await self.stderr.closed.wait()
        tail = self.stderr.tail()
        logger.warning(
            "upstream %r: %s%s",
            self.config.name,
            self.exit_reason(),
            f"; its last stderr lines: {tail}" if tail else "",
        )

    async def _watch_exit(self, proc: asyncio.subprocess.Process) -> None:
        # Not proc.wait(): on 3.11 it also waits for the pipes, which a surviving grandchild can hold open.
        while proc.returncode is None:
            await anyio.sleep(_EXIT_POLL)
        self.returncode = proc.returncode
        self.exited.set()

    async def _stop(self, proc: asyncio.subprocess.Process) -> None:
        """Close stdin, then SIGTERM and SIGKILL the whole group, each step bounded; never leaves a member."""
        on_its_own = proc.returncode is not None or self.fault is not None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        pgid = proc.pid
        with anyio.move_on_after(STDIN_GRACE):
            while proc.returncode is None:
                await anyio.sleep(_POLL)
        # A crash seen a moment late (its exit status not reaped yet) still ends with a failure status of its own.
        on_its_own = on_its_own or proc.returncode not in (None, 0)
        if group_alive(pgid):
            signal_group(pgid, signal.SIGTERM)
            with anyio.move_on_after(TERM_GRACE):
                while group_alive(pgid):
                    await anyio.sleep(_POLL)
            if group_alive(pgid):
                signal_group(pgid, signal.SIGKILL)
                with anyio.move_on_after(TERM_GRACE):
                    while group_alive(pgid):
                        await anyio.sleep(_POLL)
        self.returncode = proc.returncode
        self.exited.set()
        if on_its_own:
            await self._log_exit()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
