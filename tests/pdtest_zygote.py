"""Test servers started by fork from a process that has already imported them (a "zygote").

The conformance suite's tests start the negative controls (`conformance/pdconf_controls.py`) about a thousand
times a run, each a stdio server for one session, and each start is a fresh Python importing the `mcp` SDK: about
1.2 s of CPU, nearly all of it building the SDK's pydantic models, for a server that then answers a handful of
requests. The controls are test doubles (the product's own start-up is tested as users run it, by the CLI and
documentation tests), so here they start by fork instead: one zygote per pytest worker imports a control script
once, and each start is a small launcher (`python -S`, stdlib only, about 20 ms) that hands the zygote its stdin,
stdout and stderr; the zygote forks a child that runs the script as `__main__` on exactly those pipes. The suite
talks to the same bytes over the same pipes as before; only the imports are not paid again.

The launcher stands for the child: it forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to it and exits as it exits
(with its code, or by its signal); if the launcher is killed outright, the zygote kills the child. The zygote ends
when the worker that started it does (its stdin, a pipe from the worker, closes).

Run as `python -S pdtest_zygote.py launch SOCKET SCRIPT ARGS...` (the launcher) or `python pdtest_zygote.py serve
SOCKET SCRIPT` (the zygote): this module imports only the standard library at the top.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import threading
from pathlib import Path

__all__ = ["forked_argv"]

HERE = Path(__file__).resolve()
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_lock = threading.Lock()
_zygotes: dict[str, tuple[object, str]] = {}  # script -> (its zygote process, its socket path)


def forked_argv(script: Path | str, *args: str) -> tuple[str, ...]:
    """A command line that runs `python SCRIPT ARGS` as a fork of this worker's zygote for `script` (started on
    first use, kept for the worker's life)."""
    import subprocess
    import tempfile

    key = str(Path(script).resolve())
    with _lock:
        if key not in _zygotes:
            folder = tempfile.mkdtemp(prefix="pd-zygote-")
            path = os.path.join(folder, "socket")
            process = subprocess.Popen(
                [sys.executable, str(HERE), "serve", path, key],
                stdin=subprocess.PIPE,  # closed when this worker ends: the zygote then ends too
                stdout=subprocess.PIPE,
                text=True,
            )
            assert process.stdout is not None
            ready = process.stdout.readline().strip()
            if ready != "ready":
                process.kill()
                raise RuntimeError(f"the zygote for {key} did not start (said {ready!r})")
            _zygotes[key] = (process, path)
        path = _zygotes[key][1]
    return (sys.executable, "-S", str(HERE), "launch", path, key, *args)


# -- the launcher ----------------------------------------------------------------------------------------------


def _launch(path: str, argv: list[str]) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    header = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode() + b"\n"
    socket.send_fds(sock, [header], [0, 1, 2])
    # The child holds the pipes now: the launcher lets go of stdin and stdout, so that the other end sees them
    # close when the child ends (stderr stays, for what the launcher itself may have to say).
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    reply = sock.makefile("rb")
    first = reply.readline().split()
    if len(first) != 2 or first[0] != b"pid":
        print(f"pdtest_zygote: the zygote refused the start: {first!r}", file=sys.stderr)
        return 1
    pid = int(first[1])
    for number in _FORWARDED:
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    line = reply.readline().split()  # a signal that arrives meanwhile is forwarded, and the read goes on
    if len(line) != 2 or line[0] != b"exit":
        return 1
    code = int(line[1])
    if code < 0:  # ended by a signal: so does the launcher
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


# -- the zygote ------------------------------------------------------------------------------------------------


def _serve(path: str, script: str) -> None:
    import importlib.util

    sys.path.insert(0, os.path.dirname(script))
    spec = importlib.util.spec_from_file_location("_zygote_preloaded", script)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # its imports are what every child reuses
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd is what matters
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    selector.register(sys.stdin, selectors.EVENT_READ, "worker")
    children: dict[int, socket.socket] = {}  # pid -> its launcher's connection
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == "worker":
                if not os.read(sys.stdin.fileno(), 4096):  # the worker is gone
                    for pid in children:
                        _kill(pid)
                    os.unlink(path)
                    os.rmdir(os.path.dirname(path))
                    return
            elif key.data == "child":
                os.read(wake_read, 4096)
                _reap(children, selector)
            elif key.data == "accept":
                connection, _ = listener.accept()
                pid = _start(connection, (listener, wake_read, wake_write, selector))
                if pid is None:
                    connection.close()
                    continue
                children[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
            else:  # a launcher's connection: readable only when it closes (the launcher was killed)
                connection = key.fileobj
                assert isinstance(connection, socket.socket)
                if not connection.recv(1):
                    selector.unregister(connection)
                    _kill(key.data)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if connection.fileno() in selector.get_map():
            selector.unregister(connection)
        with contextlib.suppress(OSError):
            connection.sendall(b"exit %d\n" % code)
        connection.close()


def _start(connection: socket.socket, inherited: tuple[object, ...]) -> int | None:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            break
        data += more
    if len(fds) != 3 or not data.endswith(b"\n"):
        for fd in fds:
            os.close(fd)
        return None
    header = json.loads(data)
    pid = os.fork()
    if pid == 0:
        _child(header, fds, connection, inherited)
    for fd in fds:
        os.close(fd)
    connection.sendall(b"pid %d\n" % pid)
    return pid


def _child(header: dict[str, object], fds: list[int], connection: socket.socket, inherited: tuple[object, ...]) -> None:
    """In the fork: become `python SCRIPT ARGS` on the launcher's stdin, stdout and stderr; never return."""
    import atexit
    import io
    import runpy
    import traceback

    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener, wake_read, wake_write, selector = inherited
        selector.close()  # type: ignore[attr-defined]
        listener.close()  # type: ignore[attr-defined]
        connection.close()
        os.close(wake_read)  # type: ignore[arg-type]
        os.close(wake_write)  # type: ignore[arg-type]
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # Nothing else of the zygote's: the connections of the other launchers, say (a started script has only
        # what `python SCRIPT` would have, stdin, stdout and stderr).
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
        )
        os.chdir(str(header["cwd"]))
        os.environ.clear()
        os.environ.update(header["env"])  # type: ignore[arg-type]
        argv = [str(arg) for arg in header["argv"]]  # type: ignore[attr-defined]
        sys.argv = argv
        sys.path[0] = os.path.dirname(argv[0])
        try:
            runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as stop:
            if stop.code is None:
                code = 0
            elif isinstance(stop.code, int):
                code = stop.code
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            code = 130
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    role, socket_path, *rest = sys.argv[1:]
    if role == "launch":
        sys.exit(_launch(socket_path, rest))
    _serve(socket_path, rest[0])
