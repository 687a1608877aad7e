"""The audit trail (`--audit`): one JSON line per decision, for `serve` and `proxy`, behind the real OpenID provider:
who (principal, client), what (method, tool), how it ended (answered / refused and why / failed), how long; never
a token, a session id or (unless asked) arguments; rotated by size; the operator page filters it by principal."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from gateway.gwtest import PLAIN, gateway_params, stdio, wait_for_no_pids, write_config
from oauth.idptest import IdP
from oauth.test_resource_server import SCOPE, SERVE, client, code, initialize
from pdtest import _wait_for_port, free_port, http_command, stop_process

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
SECRET_ARGUMENT = "do-not-log-this-0123456789"


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdP]:
    provider = IdP(tmp_path_factory.mktemp("idp"))
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


def records(path: Path) -> list[dict[str, Any]]:
    lines = [line for p in sorted(path.parent.glob(path.name + "*")) for line in p.read_text().splitlines()]
    return [json.loads(line) for line in lines]


@pytest.mark.req("PDX-AUDIT-01", "PDX-AUDIT-02")
async def test_each_decision_is_one_line_naming_who_what_and_how_it_ended(tmp_path: Path, idp: IdP) -> None:
    audit = tmp_path / "audit.jsonl"
    argv = [*SERVE, "--oauth-issuer", idp.issuer, "--oauth-scope", SCOPE, "--audit", str(audit), "--port"]
    with http_command(argv) as url:
        alice = await idp.authorization_code("alice", resource=url, scope=SCOPE)
        bob = await idp.authorization_code("bob", resource=url, scope=SCOPE)
        async with client(url, alice) as session:
            await session.read_resource(f"{URI}?tools=hash_text")
            assert not (await session.call_tool("hash_text", {"text": SECRET_ARGUMENT})).is_error
        async with client(url, bob) as session:
            assert code(await session.call_tool("hash_text", {"text": SECRET_ARGUMENT})) == "TOOL_DESCRIPTION_REQUIRED"
        forged = alice[:-8] + ("A" * 8 if not alice.endswith("A" * 8) else "B" * 8)
        assert (await initialize(url, forged)).status_code == 401
    written = audit.read_text()
    for secret in (alice, bob, forged, SECRET_ARGUMENT):
        assert secret not in written  # no token, no argument (not asked for)
    entries = records(audit)
    calls = [e for e in entries if e.get("method") == "tools/call" and e.get("tool") == "hash_text"]
    assert [(e["principal"], e["client"], e["outcome"]) for e in calls] == [
        ("alice", "team-cli", "answered"),
        ("bob", "team-cli", "refused"),
    ]
    assert calls[1]["reason"].startswith("TOOL_DESCRIPTION_REQUIRED")
    assert all(e["issuer"] == idp.issuer and e["ms"] >= 0 and e["time"].endswith("Z") for e in calls)
    read = next(e for e in entries if e.get("method") == "resources/read" and e.get("principal") == "alice")
    assert read["outcome"] == "answered" and "hash_text" in read["resource"]
    door = [e for e in entries if e.get("method") == "(http)"]
    assert door and door[-1]["outcome"] == "refused" and "invalid_token" in door[-1]["reason"]
    assert all("session" not in e or len(e["session"]) == 16 for e in entries)  # a digest, never the id


@pytest.mark.req("PDX-AUDIT-03")
async def test_the_trail_rotates_by_size_and_can_go_to_stdout_with_arguments(tmp_path: Path, idp: IdP) -> None:
    audit = tmp_path / "small.jsonl"
    argv = [*SERVE, "--oauth-issuer", idp.issuer, "--audit", str(audit), "--audit-max-bytes", "2048"]
    with http_command([*argv, "--audit-backups", "2", "--port"]) as url:
        token = await idp.client_credentials(resource=url)
        async with client(url, token) as session:
            for _ in range(40):
                await session.list_tools()
    files = sorted(p.name for p in tmp_path.glob("small.jsonl*"))
    assert files == ["small.jsonl", "small.jsonl.1", "small.jsonl.2"]
    assert all((tmp_path / name).stat().st_size <= 2048 for name in files)
    port = free_port()
    command = [*SERVE, "--oauth-issuer", idp.issuer, "--audit", "-", "--audit-arguments", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        token = await idp.client_credentials(resource=url)
        async with client(url, token) as session:
            await session.read_resource(f"{URI}?tools=hash_text")
            await session.call_tool("hash_text", {"text": SECRET_ARGUMENT})
    finally:
        stop_process(proc)
        out = proc.stdout.read().decode() if proc.stdout else ""
        if proc.stdout:
            proc.stdout.close()
    lines = [json.loads(line) for line in out.splitlines()]
    call = next(e for e in lines if e.get("tool") == "hash_text")
    assert call["principal"] == "team-service" and SECRET_ARGUMENT in call["arguments"]


@pytest.mark.req("PDX-AUDIT-04")
def test_audit_flags_that_cannot_hold_are_refused(tmp_path: Path) -> None:
    for extra, says in (
        (["--audit", "-"], "standard output, which stdio uses"),
        (["--audit-arguments"], "--audit-arguments needs --audit"),
        (["--audit", str(tmp_path / "missing" / "audit.jsonl")], "cannot open the audit file"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "mcp_pd", "serve", *extra], capture_output=True, text=True, timeout=120
        )
        assert done.returncode != 0 and says in done.stderr, done.stderr


@pytest.mark.req("PDX-AUDIT-05")
async def test_the_gateways_operator_page_filters_decisions_by_principal(tmp_path: Path, idp: IdP) -> None:
    mark = uuid.uuid4().hex
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    operator = "operator-token-0123456789abcdef"
    (tmp_path / "admin").write_text(operator)
    params = gateway_params("--config", str(config), "--transport", "http", "--oauth-issuer", idp.issuer)
    extra = ["--audit", str(tmp_path / "audit.jsonl"), "--admin-token-file", str(tmp_path / "admin"), "--port"]
    with http_command([params.command, *params.args, *extra]) as url:
        alice = await idp.authorization_code("alice", resource=url)
        bob = await idp.authorization_code("bob", resource=url)
        async with client(url, alice) as session:
            await session.read_resource(f"{URI}?tools=echo")
            assert not (await session.call_tool("echo", {"text": "hi"})).is_error
        async with client(url, bob) as session:
            await session.call_tool("pid", {})
        admin = url.replace("/mcp", "/admin")
        async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {operator}"}) as http:
            everyone = (await http.get(admin)).text
            only_alice = (await http.get(admin, params={"principal": "alice"})).text
            as_alice = await http.get(
                admin, params={"principal": "alice"}, headers={"Authorization": f"Bearer {alice}"}
            )
    decisions = everyone.split("Latest decisions (audit trail)")[1]
    assert "<td>alice</td>" in decisions and "<td>bob</td>" in decisions
    mine = only_alice.split("Latest decisions (audit trail)")[1].split("</form>")[1]
    assert "<td>alice</td>" in mine and "<td>bob</td>" not in mine and "<code>echo</code>" in mine
    assert as_alice.status_code == 401  # a client's token never opens the page
    assert not wait_for_no_pids(mark)
