"""`--policy FILE`: who may use which tool, behind the real OpenID provider. Two principals at once, one hostile,
probe every surface a tool name can come out of for a tool the policy hides from one of them; the file is
reloaded when it changes (a broken edit keeps the last good policy)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway.gwtest import PLAIN, gateway_params, stdio, wait_for_no_pids, write_config
from mcp import Client
from oauth.idptest import IdP
from oauth.test_resource_server import SERVE, client, code
from pdtest import http_command

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
HIDDEN = "pid"  # the tool bob may not use
POLICY = """
groups_claim = "groups"

[[allow]]                 # engineering: everything
groups = ["engineering"]

[[allow]]                 # support: a few tools ...
groups = ["support"]
upstreams = ["plain"]
tools = ["echo", "add", "p*"]

[[deny]]                  # ... but never pid, whatever allows it
groups = ["support"]
tools = ["pid"]
"""


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdP]:
    provider = IdP(tmp_path_factory.mktemp("idp"))
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


def mentions(value: Any, name: str = HIDDEN) -> bool:
    """Whether `name` appears as a word anywhere in `value` (a result, dumped)."""
    text = value if isinstance(value, str) else json.dumps(value.model_dump(mode="json", by_alias=True))
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


async def probe_everything(bob: Client, *, catalog: bool) -> None:
    """Every way bob could learn of, or reach, the hidden tool."""
    listed = await bob.list_tools()
    assert not mentions(listed)
    assert not mentions(bob.instructions or "")
    assert not mentions(await bob.list_resources())
    assert not mentions(await bob.list_resource_templates())
    # Described or read by name, and by a near miss: "not found", never suggested, never in available_tools.
    for asked in (HIDDEN, "pidd", "Pid"):
        read = await bob.read_resource(f"{URI}?tools={asked}")
        entry = json.loads(read.contents[0].text)[asked]  # type: ignore[union-attr]
        assert "inputSchema" not in entry and entry["error"] == f"Tool '{asked}' not found"
        assert HIDDEN not in entry["available_tools"]  # the spec 6.3 candidates: never the hidden one
        assert entry["available_tools_total"] == 2  # echo and add: the hidden tool is not even counted
        described = await bob.call_tool("describe_tools", {"tools": [asked]})
        said = json.dumps(described.structured_content or {})  # bob's own word, echoed, is no leak: drop it
        assert not mentions(said.replace(f'"{asked}"', '""').replace(f"'{asked}'", "''")), said
    # Called: the same refusal as a name that does not exist at all.
    assert code(await bob.call_tool(HIDDEN, {})) == code(await bob.call_tool("no_such_tool_here", {}))
    if catalog:
        for query in ("process id", "pid", "server process"):
            assert not mentions(await bob.call_tool("search_tools", {"query": query}))
        assert not mentions(await bob.call_tool("browse_tools", {}))
        via = await bob.call_tool("call_tool", {"name": HIDDEN, "arguments": {}})
        said = json.dumps(via.structured_content or {}).replace('"pid"', '""').replace("'pid'", "''")
        assert via.is_error and not mentions(said), said
    assert not mentions(await bob.list_prompts())


@pytest.mark.req("PDX-ACCESS-01", "PDX-ACCESS-02")
@pytest.mark.parametrize("mode", ["progressive", "catalog"])
async def test_a_hidden_tool_does_not_exist_for_the_principal_it_is_hidden_from(
    tmp_path: Path, idp: IdP, mode: str
) -> None:
    mark = uuid.uuid4().hex
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    params = gateway_params("--config", str(config), "--transport", "http", "--oauth-issuer", idp.issuer)
    with http_command([params.command, *params.args, "--mode", mode, "--policy", str(policy), "--port"]) as url:
        alice_token = await idp.authorization_code("alice", resource=url)
        bob_token = await idp.authorization_code("bob", resource=url)
        async with client(url, alice_token) as alice, client(url, bob_token) as bob:  # at once
            if mode == "progressive":
                assert HIDDEN in {t.name for t in (await alice.list_tools()).tools}
                await alice.read_resource(f"{URI}?tools={HIDDEN}")
                assert not (await alice.call_tool(HIDDEN, {})).is_error
                assert {t.name for t in (await bob.list_tools()).tools} == {"echo", "add", "describe_tools"}
                await bob.read_resource(f"{URI}?tools=echo")
                assert not (await bob.call_tool("echo", {"text": "hi"})).is_error
            else:
                found = await alice.call_tool("search_tools", {"query": "process id"})
                assert mentions(found)  # the search finds it for whoever may use it
            await probe_everything(bob, catalog=mode == "catalog")
        async with client(url, bob_token, mode="legacy") as legacy:  # the handshake's instructions, too
            assert legacy.instructions and "plain" in legacy.instructions
            assert not mentions(legacy.instructions)
    assert not wait_for_no_pids(mark)


@pytest.mark.req("PDX-ACCESS-03")
async def test_the_policy_is_reloaded_when_it_changes_and_a_broken_edit_keeps_the_last(
    tmp_path: Path, idp: IdP
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ngroups = ["support"]\ntools = ["list_*", "get_*"]\n')
    with http_command([*SERVE, "--oauth-issuer", idp.issuer, "--policy", str(policy), "--port"]) as url:
        bob = await idp.authorization_code("bob", resource=url)
        alice = await idp.authorization_code("alice", resource=url)
        async with client(url, bob) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert "list_projects" in names and "create_project" not in names
        async with client(url, alice) as session:  # engineering: no rule names it, so nothing is there
            assert {t.name for t in (await session.list_tools()).tools} <= {"describe_tools"}
        policy.write_text('[[allow]]\ngroups = ["support"]\ntools = ["get_*"]\n')

        async def narrowed() -> bool:
            async with client(url, bob) as session:
                return "list_projects" not in {t.name for t in (await session.list_tools()).tools}

        with anyio.fail_after(30):
            while not await narrowed():
                await anyio.sleep(0.2)
        policy.write_text("[[allow]\nbroken = ")  # a broken edit: the last good policy stays
        await anyio.sleep(1.5)
        async with client(url, bob) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert "get_project" in names and "list_projects" not in names


@pytest.mark.req("PDX-ACCESS-04")
@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[allow]]\ntools = ['*']\n", "names nobody"),
        ("[[deny]]\neveryone = true\n", "no [[allow]] rule"),
        ("[[allow]]\neveryone = true\nroles = ['x']\n", "unknown key 'roles'"),
        ("[[allow]\n", "not TOML"),
        ("[[allow]]\ngroups = 'admins'\n", "expected a list of non-empty strings"),
    ],
)
def test_a_policy_that_cannot_hold_stops_the_start(tmp_path: Path, text: str, says: str) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "serve", "--policy", str(policy)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and says in done.stderr, done.stderr


@pytest.mark.req("PDX-ACCESS-05")
def test_rules_match_subjects_groups_and_scopes_and_deny_wins() -> None:
    from mcp_pd._access import AccessPolicy, Principal

    policy = AccessPolicy.parse(
        """
        [[allow]]
        subjects = ["carol"]
        upstreams = ["github"]
        [[allow]]
        scopes = ["mcp:admin"]
        tools = ["admin_*"]
        [[allow]]
        everyone = true
        tools = ["status"]
        [[deny]]
        groups = ["contractors"]
        tools = ["*delete*"]
        """
    )
    carol = Principal("carol", frozenset({"contractors"}), frozenset())
    assert policy.allowed(carol, "get_issue", "github")
    assert not policy.allowed(carol, "get_issue", "jira")  # another upstream
    assert not policy.allowed(carol, "delete_repo", "github")  # deny wins over her allow
    admin = Principal("dan", frozenset(), frozenset({"mcp:admin"}))
    assert policy.allowed(admin, "admin_users") and not policy.allowed(admin, "get_issue", "github")
    nobody = Principal(None, frozenset(), frozenset())
    assert policy.allowed(nobody, "status") and not policy.allowed(nobody, "admin_users")


@pytest.mark.req("PDX-ACCESS-06")
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # resources/subscribe: a handshake-era request
async def test_an_upstream_a_principal_may_use_nothing_of_hides_its_resources_and_prompts(
    tmp_path: Path, idp: IdP
) -> None:
    mark = uuid.uuid4().hex
    notes = Path(__file__).resolve().parents[1] / "gateway" / "content_server.py"
    servers = {
        "plain": stdio(sys.executable, str(PLAIN), mark=mark),
        "notes": stdio(sys.executable, str(notes), mark=mark),
    }
    config = write_config(tmp_path / "servers.json", servers)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)  # support: a few tools of "plain" only
    params = gateway_params("--config", str(config), "--transport", "http", "--oauth-issuer", idp.issuer)
    with http_command([params.command, *params.args, "--policy", str(policy), "--port"]) as url:
        alice_token = await idp.authorization_code("alice", resource=url)
        bob_token = await idp.authorization_code("bob", resource=url)
        async with client(url, alice_token) as alice, client(url, bob_token) as bob:
            assert "note://first" in {r.uri for r in (await alice.list_resources()).resources}
            assert (await alice.read_resource("note://first")).contents
            assert "note-first" in {p.name for p in (await alice.list_prompts()).prompts}
            assert not mentions(await bob.list_resources(), "note://first")
            assert not mentions(await bob.list_prompts(), "note-first")
            assert not mentions(bob.instructions or "", "add_note")
            attempts = (
                lambda: bob.read_resource("note://first"),
                lambda: bob.get_prompt("note-first"),
            )
            for attempt in attempts:
                with pytest.raises(Exception) as refused:  # noqa: PT011 - an MCPError, as for a name that is not served
                    await attempt()
                said = str(refused.value)
                assert "not served by any upstream" in said or "Unknown prompt" in said, said
        async with client(url, bob_token, mode="legacy") as legacy:  # subscriptions are of the handshake era
            with pytest.raises(Exception) as refused:  # noqa: PT011 - an MCPError, as for a name that is not served
                await legacy.subscribe_resource("note://first")
            assert "not served by any upstream" in str(refused.value), str(refused.value)
    assert not wait_for_no_pids(mark)
