"""The HTTP doors of `mcp-pd proxy` and `mcp-pd serve` (issue 31, items 9, 10 and 12), over real sockets.

The proxy has `serve`'s HTTP limits and flags: a half-sent request is cut off at the head timeout, sessions are
capped, oversized bodies are refused, and beyond loopback only the allowed Host names are served (without any, it
refuses to start). `/metrics` and `/admin` pass the same Host/Origin check as `/mcp`, and open only with the operator
token: a client's bearer token never does. Metric labels name only served tools, on the gateway too.
"""

from __future__ import annotations

import base64
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from gateway.gwtest import PLAIN, stdio, write_config
from gateway.test_admin_page import _until, browser  # noqa: F401 - the fixture: Debian's chromium, nothing downloaded
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_pd._cli import main as cli_main
from mcp_pd.gateway import main as gateway_main
from pdtest import _wait_for_port, free_port, stop_process
from pdtest_metrics import value
from prometheus_client.parser import text_string_to_metric_families
from selenium import webdriver

pytestmark = pytest.mark.anyio

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
CLIENT_TOKEN = "client-token-of-alice-0123456789"
OPERATOR_TOKEN = "operator-token-0123456789abcdef"
SLACK = 3.0  # on top of a limit before a test calls it missed: a loaded 2-core machine must not flake


@contextmanager
def running(argv: Sequence[str], env: dict[str, str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """`argv --port P` as a subprocess until it says it is serving; yields (base URL, its start-up lines)."""
    port = free_port()
    proc = subprocess.Popen(
        [*argv, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or ():
            lines.put(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        seen: list[str] = []
        while not any("serving" in line and "/mcp" in line for line in seen):
            try:
                seen.append(lines.get(timeout=60))
            except queue.Empty:
                raise AssertionError(f"not serving within 60 s (exit code {proc.poll()}): {seen}") from None
        _wait_for_port(port, proc)  # the line comes just before uvicorn binds
        yield f"http://127.0.0.1:{port}", seen
    finally:
        stop_process(proc, close_stderr=False)  # the reader ends with the pipe: close it after that
        reader.join(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()


def proxy(tmp_path: Path, mark: str, *flags: str) -> list[str]:
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    return [sys.executable, "-m", "mcp_pd", "proxy", "--quiet-upstreams", "--config", str(config), "--transport",
            "http", *flags]  # fmt: skip


def serve(*flags: str) -> list[str]:
    return [sys.executable, "-m", "mcp_pd", "serve", "--transport", "http", "--no-watch", *flags]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def half_sent(port: int) -> tuple[float, bytes]:
    """Open a connection, send half a request head and nothing more; (seconds until the server hung up, reply)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    async with stream:
        start = anyio.current_time()
        await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port)
        received = b""
        with anyio.fail_after(30):  # far beyond the limit: the server must hang up first
            while True:
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    break
        return anyio.current_time() - start, received


# -- item 10: serve's HTTP limits on the proxy ---------------------------------------------------------------


@pytest.mark.req("PDX-HTTP-02")
async def test_proxy_cuts_half_sent_requests_caps_sessions_and_refuses_big_bodies(tmp_path: Path, mark: str) -> None:
    # Long enough that, on a busy 2-core machine, the gateway reads each client's first bytes before its head timer
    # fires (at 0.5 s and load 11 some were cut as silent connections, with no 408).
    timeout = 2.0
    flags = ("--request-timeout", str(timeout), "--max-sessions", "2", "--max-body-size", "4096")
    with running(proxy(tmp_path, mark, *flags)) as (base, lines):
        assert "mcp-pd proxy: sessions: at most 2; they end after 1800 s idle" in lines
        url, port = base + "/mcp", int(base.rsplit(":", 1)[1])
        results: list[tuple[float, bytes]] = []

        async def one() -> None:
            results.append(await half_sent(port))

        async with anyio.create_task_group() as tg:
            for _ in range(200):
                tg.start_soon(one)
            # While they hang, a real client is served.
            async with Client(url, mode="legacy", cache=None) as client:
                assert {t.name for t in (await client.list_tools()).tools} >= {"describe_tools", "echo"}
        assert len(results) == 200
        slowest = max(elapsed for elapsed, _ in results)
        assert slowest < timeout + SLACK, slowest  # none stays open past the head timeout
        assert all(b"HTTP/1.1 408 " in reply for _, reply in results), {reply[:60] for _, reply in results}

        async with Client(url, mode="legacy", cache=None) as first, Client(url, mode="legacy", cache=None):
            with (
                anyio.fail_after(20),
                pytest.RaisesGroup(pytest.RaisesExc(MCPError, match="Too many open sessions"), flatten_subgroups=True),
            ):
                async with Client(url, mode="legacy", cache=None):
                    pass
            assert (await first.list_tools()).tools  # the open sessions are unaffected

        async with httpx2.AsyncClient(timeout=10) as http:
            big = await http.post(url, content=b" " * 4097, headers=HEADERS)
            assert big.status_code == 413
            assert big.json()["error"]["message"] == "Request body too large: the limit is 4096 bytes"
        async with Client(url, mode="legacy", cache=None) as client:  # and it keeps serving
            assert (await client.list_tools()).tools


@pytest.mark.req("PDX-HTTP-01")
async def test_proxy_beyond_loopback_serves_only_its_allowed_hosts(tmp_path: Path, mark: str) -> None:
    flags = ("--host", "0.0.0.0", "--allowed-host", "mcp.example.test", "--allowed-origin", "https://app.example.test")
    with running(proxy(tmp_path, mark, *flags)) as (base, lines):
        assert "mcp-pd proxy: allowed Host: mcp.example.test, mcp.example.test:*" in lines
        url, port = base + "/mcp", base.rsplit(":", 1)[1]
        async with httpx2.AsyncClient(timeout=10) as http:
            for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port}"):
                refused = await http.post(url, json=INITIALIZE, headers={**HEADERS, "Host": host})
                assert refused.status_code == 421, (host, refused.text)
            cross = {"Host": f"mcp.example.test:{port}", "Origin": "https://evil.example"}
            assert (await http.post(url, json=INITIALIZE, headers={**HEADERS, **cross})).status_code == 403
            modern = {"Host": "evil.example", "mcp-protocol-version": "2026-07-28"}
            assert (await http.post(url, json=INITIALIZE, headers={**HEADERS, **modern})).status_code == 421
            ok = {"Host": "mcp.example.test", "Origin": "https://app.example.test"}
            accepted = await http.post(url, json=INITIALIZE, headers={**HEADERS, **ok})
            assert accepted.status_code == 200, accepted.text


@pytest.mark.req("PDX-HTTP-01")
def test_proxy_beyond_loopback_without_allowed_hosts_refuses_to_start(tmp_path: Path, mark: str) -> None:
    argv = proxy(tmp_path, mark, "--host", "0.0.0.0", "--port", "1")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "mcp-pd proxy: --host 0.0.0.0 serves beyond this machine" in done.stderr
    assert "add --allowed-host NAME" in done.stderr
    assert "serving" not in done.stderr  # refused before any upstream started


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-sessions", "3"], "--max-sessions applies to --transport http only"),
        (["--bearer-tokens", "tokens.json"], "--bearer-tokens applies to --transport http only"),
        (["--transport", "http", "--allowed-host", "https://x.test/"], "--allowed-host 'https://x.test/' is not"),
        (["--transport", "http", "--host", "::"], "add --allowed-host"),
    ],
)
def test_proxy_refuses_http_flags_that_cannot_hold(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as refused:
        gateway_main(["proxy", "--upstream-stdio", "never-started", *argv])
    assert message in str(refused.value)


# -- item 12: the operator endpoints ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["serve", "proxy"])
@pytest.mark.req("PDX-HTTP-03")
async def test_operator_endpoints_check_host_and_origin(command: str, tmp_path: Path, mark: str) -> None:
    argv = serve() if command == "serve" else proxy(tmp_path, mark)
    paths = ["/metrics"] if command == "serve" else ["/metrics", "/admin"]
    with running(argv) as (base, _):
        port = base.rsplit(":", 1)[1]
        async with httpx2.AsyncClient(timeout=10) as http:
            for path in paths:
                # A DNS-rebinding page: the browser sends the attacker's name as Host.
                for host in ("evil.example", f"evil.example:{port}"):
                    refused = await http.get(base + path, headers={"Host": host})
                    assert refused.status_code == 421, (path, host, refused.text)
                    assert "Invalid Host header" in refused.text
                cross = await http.get(base + path, headers={"Origin": "http://evil.example"})
                assert cross.status_code == 403, (path, cross.text)
                assert (await http.get(base + path)).status_code == 200, path  # loopback, no tokens anywhere
                proxied = await http.get(base + path, headers={"X-Forwarded-For": "203.0.113.7"})
                assert proxied.status_code == 403, (path, proxied.text)  # a reverse proxy here: not a local client
                assert "loopback clients only" in proxied.text


def _token_files(tmp_path: Path) -> tuple[Path, Path]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(f'{{"{CLIENT_TOKEN}": {{"client_id": "alice", "subject": "alice"}}}}')
    operator = tmp_path / "operator-token"
    operator.write_text(OPERATOR_TOKEN + "\n")
    return tokens, operator


@pytest.mark.parametrize("command", ["serve", "proxy"])
@pytest.mark.req("PDX-HTTP-03")
async def test_only_the_operator_token_opens_metrics_and_admin(command: str, tmp_path: Path, mark: str) -> None:
    tokens, operator = _token_files(tmp_path)
    if command == "serve":
        argv, env = serve("--bearer-tokens", str(tokens), "--admin-token-file", str(operator)), None
        paths = ["/metrics"]
    else:  # the proxy takes the operator token from the environment instead
        argv, env = proxy(tmp_path, mark, "--bearer-tokens", str(tokens)), {"MCP_PD_ADMIN_TOKEN": OPERATOR_TOKEN}
        paths = ["/metrics", "/admin"]
    with running(argv, env) as (base, lines):
        assert any("operator token required (client tokens do not open them)" in line for line in lines), lines
        client = {"Authorization": f"Bearer {CLIENT_TOKEN}"}
        async with httpx2.AsyncClient(timeout=10) as http:
            for path in paths:
                anonymous = await http.get(base + path)
                assert anonymous.status_code == 401, (path, anonymous.text)
                assert anonymous.headers.get_list("www-authenticate")[0].startswith("Basic ")  # a browser asks
                refused = await http.get(base + path, headers=client)
                assert refused.status_code == 401, (path, refused.text)
                assert "client tokens do not open it" in refused.text
                wrong = await http.get(base + path, headers={"Authorization": f"Bearer {OPERATOR_TOKEN[:-1]}x"})
                assert wrong.status_code == 401, path
                opened = await http.get(base + path, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
                assert opened.status_code == 200, (path, opened.text)
                basic = base64.b64encode(f"ops:{OPERATOR_TOKEN}".encode()).decode()
                browser = await http.get(base + path, headers={"Authorization": f"Basic {basic}"})
                assert browser.status_code == 200, (path, browser.text)
                # The operator token is checked against the Host like everything else.
                rebound = {"Authorization": f"Bearer {OPERATOR_TOKEN}", "Host": "evil.example"}
                assert (await http.get(base + path, headers=rebound)).status_code == 421
            # The operator token is not a client token: /mcp still takes only client tokens.
            operator_on_mcp = {**HEADERS, "Authorization": f"Bearer {OPERATOR_TOKEN}"}
            assert (await http.post(base + "/mcp", json=INITIALIZE, headers=operator_on_mcp)).status_code == 401
        async with (
            httpx2.AsyncClient(headers=client) as http,
            Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy", cache=None) as session,  # type: ignore[arg-type]
        ):
            assert (await session.list_tools()).tools


@pytest.mark.req("PDX-HTTP-03")
async def test_with_client_tokens_and_no_operator_token_the_endpoints_stay_closed(tmp_path: Path, mark: str) -> None:
    tokens, _ = _token_files(tmp_path)
    with running(proxy(tmp_path, mark, "--bearer-tokens", str(tokens))) as (base, lines):
        assert any("closed (client tokens do not open them" in line for line in lines), lines
        async with httpx2.AsyncClient(timeout=10) as http:
            for path in ("/metrics", "/admin"):
                for headers in ({}, {"Authorization": f"Bearer {CLIENT_TOKEN}"}):  # loopback, with a client token
                    closed = await http.get(base + path, headers=headers)
                    assert closed.status_code == 403, (path, closed.text)
                    assert "start it with an operator token" in closed.text


@pytest.mark.parametrize(
    ("command", "setting", "message"),
    [
        ("serve", "short", "at least 16 printable characters"),
        ("proxy", "short", "at least 16 printable characters"),
        ("serve", "client", "the operator token is also a client token"),
        ("proxy", "client", "the operator token is also a client token"),
        ("serve", "both", "--admin-token-file and $MCP_PD_ADMIN_TOKEN both give an operator token"),
    ],
)
def test_operator_tokens_that_cannot_hold_are_refused_at_start(
    command: str, setting: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens, operator = _token_files(tmp_path)
    monkeypatch.delenv("MCP_PD_ADMIN_TOKEN", raising=False)
    if setting == "short":
        operator.write_text("short-token")
    elif setting == "client":
        operator.write_text(CLIENT_TOKEN)
    else:
        monkeypatch.setenv("MCP_PD_ADMIN_TOKEN", OPERATOR_TOKEN)
    flags = ["--transport", "http", "--bearer-tokens", str(tokens), "--admin-token-file", str(operator)]
    run, argv = (cli_main, ["serve"]) if command == "serve" else (gateway_main, ["proxy", "--upstream-stdio", "x"])
    with pytest.raises(SystemExit) as refused:
        run([*argv, *flags])
    assert message in str(refused.value)


# -- item 9 on the gateway: metric labels name served tools only ----------------------------------------------


@pytest.mark.req("PDX-HTTP-04")
async def test_gateway_metrics_fold_unknown_names(tmp_path: Path, mark: str) -> None:
    with running(proxy(tmp_path, mark)) as (base, _):
        async with Client(base + "/mcp", mode="legacy", cache=None) as client:

            async def unknown(i: int) -> None:
                assert (await client.call_tool(f"{i:04d}".ljust(30_000, "x"), {})).is_error

            async with anyio.create_task_group() as tg:  # concurrently: they share the re-listings they cause
                for i in range(250):
                    tg.start_soon(unknown, i)
            await client.call_tool("describe_tools", {"tools": ["echo", "not_a_tool_here"]})
            assert not (await client.call_tool("echo", {"text": "hi"})).is_error
        response = httpx2.get(base + "/metrics", timeout=30)
        page = httpx2.get(base + "/admin", timeout=30)
    assert response.status_code == 200
    assert len(response.content) < 64 * 1024, len(response.content)  # 15 MB when every name was a label
    found = samples(response.text)
    tools = {dict(labels).get("tool") for (_, labels) in found} - {None}
    assert tools == {"(other)", "echo"}, sorted(t[:40] for t in tools if t)[:5]
    assert value(found, "mcp_pd_tool_calls_total", tool="(other)", outcome="refused") == 250
    assert value(found, "mcp_pd_tool_calls_total", tool="echo", outcome="ok") == 1
    assert value(found, "mcp_pd_tool_describes_total", tool="echo") == 1
    assert value(found, "mcp_pd_upstream_call_seconds_count", upstream="plain") == 1
    assert page.status_code == 200 and len(page.content) < 256 * 1024, len(page.content)  # refusals shown folded


def test_the_operator_page_opens_in_a_browser_with_the_operator_token(
    tmp_path: Path,
    mark: str,
    browser: webdriver.Chrome,  # noqa: F811 - the fixture imported above
) -> None:
    tokens, operator = _token_files(tmp_path)
    argv = proxy(tmp_path, mark, "--bearer-tokens", str(tokens), "--admin-token-file", str(operator))
    with running(argv) as (base, _):
        browser.get(base + "/admin")  # no credential: the browser gets the 401 and shows no page
        assert "mcp-pd gateway" not in browser.title
        # The operator types the token as the password of the prompt (here: in the address, as a prompt would send).
        browser.get(base.replace("http://", f"http://operator:{OPERATOR_TOKEN}@") + "/admin")
        assert "mcp-pd gateway" in browser.title
        # Served while the upstream starts (issue 34): the page, refreshing itself, lists its tools once it is up.
        _until(lambda: "echo" in str(browser.execute_script("return document.body.innerText;")), "its tools")
        # The page refreshes itself every 2 s: the browser resends the credential, and the page stays open.
        browser.execute_script("window.beforeRefresh = true;")
        _until(lambda: not browser.execute_script("return window.beforeRefresh === true;"), "the page to refresh")
        assert "mcp-pd gateway" in browser.title
