"""Clients of one gateway kept apart (issue 31): nothing of one client's roots, questions or logs reaches another,
and no client holds the others up. Each test puts two or more real clients on one gateway at once, in front of
real upstreams: the npm filesystem server started with no folder (it works on its client's roots) and
`asking_server.py` (asks its client things during calls and after them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import (
    ALICE_TOKEN,
    BOB_TOKEN,
    HERE,
    Peer,
    eventually,
    gateway_params,
    http_client,
    http_gateway,
    marked_pids,
    stdio,
    token_file,
    write_config,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

ASKING = HERE / "asking_server.py"
PASSWORD = "Enter the password for alice@bank"


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _folders(tmp_path: Path, *names: str) -> dict[str, Path]:
    folders = {}
    for name in names:
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "note.txt").write_text(f"{name}'s note")
    return folders


def _filesystem(npm: dict[str, Path], mark: str, **extra: Any) -> dict[str, Any]:
    return stdio("node", str(npm["filesystem"]), mark=mark, **extra)  # no directory: roots only


def _asking(mark: str, *args: str) -> dict[str, Any]:
    return stdio(sys.executable, str(ASKING), *args, mark=mark)


async def _read(client: Client, folder: Path) -> types.CallToolResult:
    return await client.call_tool("read_text_file", {"path": str(folder / "note.txt")})


def _refused(outcome: types.CallToolResult | MCPError) -> str:
    """What a refusal said: a tool error's text or a JSON-RPC error's message."""
    if isinstance(outcome, MCPError):
        return outcome.error.message
    assert outcome.is_error, outcome
    return _text(outcome)


async def _attempt(call: Any) -> Any:
    try:
        return await call
    except MCPError as exc:
        return exc


@pytest.mark.req("PDX-CARRY-05")
async def test_anonymous_2026_requests_never_ride_another_clients_upstream_session(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # Every anonymous 2026-07-28 request used to be one client ("principal:" with no principal): B read A's folder
    # through the upstream session A's roots had set up, by tool call (eager) and by resources/read (progressive).
    # Now an anonymous request is a client for itself alone: an upstream on its clients' roots refuses it with why
    # (a session per request would be a process per request), and nothing of A's roots reaches B.
    folders = _folders(tmp_path, "alice", "bob")
    config = write_config(tmp_path / "servers.json", {"filesystem": _filesystem(npm, mark), "asking": _asking(mark)})
    peers = {name: Peer(folder) for name, folder in folders.items()}
    for mode in ("eager", "progressive"):
        log = tmp_path / f"{mode}.log"
        async with (
            http_gateway(config, log, "--mode", mode) as url,
            http_client(url, mode="2026-07-28", **peers["alice"].options()) as a,
            http_client(url, mode="2026-07-28", **peers["bob"].options()) as b,
        ):
            assert a.protocol_version == b.protocol_version == "2026-07-28"
            if mode == "eager":
                said = _refused(await _attempt(_read(a, folders["alice"])))
                assert "bearer token" in said and "session" in said, said
                for attempt in (_read(b, folders["alice"]), b.call_tool("list_allowed_directories", {})):
                    outcome = await _attempt(attempt)
                    assert "alice" not in (_refused(outcome)), outcome
            else:  # progressive: resources are not gated, so they are what an attacker reads
                said = _refused(await _attempt(a.read_resource("folder://alice")))
                assert "bearer token" in said, said
                listed = {str(r.uri) for r in (await b.list_resources()).resources}
                assert not any("alice" in uri for uri in listed), listed
                with pytest.raises(MCPError):
                    await b.read_resource("folder://alice")
    # With a credential each is a client of its own: both at once, each on its own folder only.
    tokens = ("--bearer-tokens", str(token_file(tmp_path)))
    async with (
        http_gateway(config, tmp_path / "tokens.log", "--mode", "eager", *tokens) as url,
        http_client(url, ALICE_TOKEN, **peers["alice"].options()) as a,
        http_client(url, BOB_TOKEN, **peers["bob"].options()) as b,
    ):

        async def reads(client: Client, own: str, other: str) -> None:
            async def readable() -> bool:
                return _text(await _read(client, folders[own])) == f"{own}'s note"

            await eventually(readable, f"{own}'s folder to be readable")
            for _ in range(3):
                assert (await _read(client, folders[other])).is_error

        async with anyio.create_task_group() as tg:
            tg.start_soon(reads, a, "alice", "bob")
            tg.start_soon(reads, b, "bob", "alice")


@pytest.mark.req("PDX-CARRY-05")
async def test_what_an_upstream_asks_or_logs_outside_calls_reaches_no_other_client(tmp_path: Path, mark: str) -> None:
    # An upstream that asks 0.3 s after a call of A ("Enter the password for alice@bank") used to reach the one
    # handshake client connected (B, while A spoke 2026-07-28), and its log line every client. Now what no call
    # explains goes to the operator's log, and the upstream is told nobody can be asked.
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark)})
    log = tmp_path / "gateway.log"
    peers = {name: Peer(tmp_path) for name in ("a", "b", "c")}
    async with (
        http_gateway(config, log, "--mode", "eager", "--log-level", "INFO") as url,
        http_client(url, mode="legacy", **_rootless(peers["b"])) as b,
        http_client(url, mode="2026-07-28", **_rootless(peers["a"])) as a,
    ):
        assert (await b.call_tool("roots", {})).content  # b is connected and has called: the one handshake client
        for n, client in enumerate((a, b), 1):
            marker = tmp_path / f"marker{n}"
            assert _text(await client.call_tool("later", {"question": PASSWORD, "marker": str(marker)})) == "scheduled"
            outcome = await eventually(lambda m=marker: _marked(m), "the upstream's late question to end")  # type: ignore[misc]
            assert outcome.startswith("error:") and "cannot tell whose request" in outcome, outcome
        async with http_client(url, mode="legacy", **_rootless(peers["c"])) as c:
            await c.call_tool("roots", {})
        for peer in peers.values():  # nobody was asked, and no log line of the upstream reached a client
            assert "elicitation" not in peer.asked
            assert not any("later:" in str(entry.data) for entry in peer.logs), peer.logs
    said = log.read_text()
    assert f"later: {PASSWORD}" in said and "not passed on" in said  # the operator's log has both

    # Served over stdio, the gateway has one client: what the upstream asks outside calls is for that client.
    only = Peer(tmp_path)
    async with Client(
        gateway_params("--config", str(config), "--mode", "eager"), mode="legacy", cache=None, **only.options()
    ) as client:
        marker = tmp_path / "stdio-marker"
        await client.call_tool("later", {"question": "Still there?", "marker": str(marker)})

        assert (await eventually(lambda: _marked(marker), "the stdio client's answer")).startswith("answered:")
        await eventually(lambda: _logged(only, "later: Still there?"), "the log line to reach the stdio client")
        assert "elicitation" in only.asked


def _rootless(peer: Peer) -> dict[str, Any]:
    """A client that answers questions and hears logs, but has no roots (so no upstream session is bound to it)."""
    return {k: v for k, v in peer.options().items() if k != "list_roots_callback"}


async def _marked(marker: Path) -> str:
    return marker.read_text() if marker.exists() else ""


async def _logged(peer: Peer, text: str) -> bool:
    return any(text in str(entry.data) for entry in peer.logs)


@pytest.mark.req("PDX-CARRY-05")
async def test_listings_of_a_roots_upstream_come_from_the_callers_own_session(tmp_path: Path, mark: str) -> None:
    # B's resources/list used to come from the shared session, which held A's roots: names derived from A's folders.
    folders = _folders(tmp_path, "alice", "bob")
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark)})
    peers = {name: Peer(folder) for name, folder in folders.items()}
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="legacy", **peers["alice"].options()) as a,
        http_client(url, mode="legacy", **peers["bob"].options()) as b,
    ):

        async def holds_alice() -> bool:
            return "alice" in _text(await a.call_tool("roots", {}))

        await eventually(holds_alice, "the upstream to hold alice's roots")

        async def lists(client: Client, own: str, other: str) -> None:
            for _ in range(5):
                uris = {str(r.uri) for r in (await client.list_resources()).resources}
                assert f"folder://{own}" in uris and f"folder://{other}" not in uris, uris
            with pytest.raises(MCPError):
                await client.read_resource(f"folder://{other}")
            assert (await client.read_resource(f"folder://{own}")).contents

        async with anyio.create_task_group() as tg:
            tg.start_soon(lists, a, "alice", "bob")
            tg.start_soon(lists, b, "bob", "alice")


@pytest.mark.req("PDX-CARRY-04")
async def test_a_roots_change_reaches_the_clients_own_upstream_session_over_http(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # Once the gateway had a second client, the upstream's re-ask after a roots change reached nobody ("several
    # clients are connected"), so the folder the user removed stayed readable. Now the re-ask goes to the client
    # whose roots that session holds (the shared one, or a client's own), and its next call gives them again if not.
    folders = _folders(tmp_path, "a1", "a2", "b1", "b2")
    config = write_config(tmp_path / "servers.json", {"filesystem": _filesystem(npm, mark)})
    peers = {"a": Peer(folders["a1"]), "b": Peer(folders["b1"])}
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="legacy", **peers["a"].options()) as a,
        http_client(url, mode="legacy", **peers["b"].options()) as b,
    ):
        for client, first in ((a, "a1"), (b, "b1")):

            async def readable(c: Client = client, f: str = first) -> bool:
                return _text(await _read(c, folders[f])) == f"{f}'s note"

            await eventually(readable, f"{first} to be readable")
        for client, name, old, new in ((a, "a", "a1", "a2"), (b, "b", "b1", "b2")):
            peers[name].folders = [folders[new]]
            await client.session.send_roots_list_changed()

            async def moved(c: Client = client, f: str = new) -> bool:
                return _text(await _read(c, folders[f])) == f"{f}'s note"

            await eventually(moved, f"{name}'s new folder {new} to be readable")
            assert (await _read(client, folders[old])).is_error  # the folder the user removed: gone at once
        assert (await _read(a, folders["b2"])).is_error and (await _read(b, folders["a2"])).is_error


@pytest.mark.req("PDX-CARRY-04")
async def test_a_client_that_left_without_a_delete_frees_its_session_after_the_idle_timeout(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # A client that closes without an HTTP DELETE (TS SDK 1.x) used to hold the shared session for good: with
    # maxClientSessions 0 the next client was refused 15 minutes later. Silent for the idle timeout, it counts as gone.
    folders = _folders(tmp_path, "a", "b")
    config = write_config(tmp_path / "servers.json", {"filesystem": _filesystem(npm, mark, maxClientSessions=0)})
    peers = {name: Peer(folder) for name, folder in folders.items()}
    async with http_gateway(config, tmp_path / "gateway.log", "--mode", "eager", "--session-idle-timeout", "2") as url:
        transport = streamable_http_client(url, terminate_on_close=False)
        async with Client(transport, mode="legacy", cache=None, **peers["a"].options()) as a:  # type: ignore[arg-type]

            async def a_reads() -> bool:
                return _text(await _read(a, folders["a"])) == "a's note"

            await eventually(a_reads, "a's folder to be readable")
        async with http_client(url, mode="legacy", **peers["b"].options()) as b:

            async def b_reads() -> bool:
                outcome = await _attempt(_read(b, folders["b"]))
                return not isinstance(outcome, MCPError) and _text(outcome) == "b's note"

            await eventually(b_reads, "b to be served once a has been silent for the idle timeout")
            assert (await _read(b, folders["a"])).is_error  # a fresh session: nothing of a's folders


@pytest.mark.req("PDX-CARRY-04")
async def test_idle_sessions_of_clients_never_lock_a_working_client_out(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # maxClientSessions 1: a and b (its own session) have each read once and sit idle. c used to be refused for 10
    # minutes per call; now the least recently used idle session is stopped for it, and so on in turn.
    folders = _folders(tmp_path, "a", "b", "c")
    config = write_config(tmp_path / "servers.json", {"filesystem": _filesystem(npm, mark, maxClientSessions=1)})
    peers = {name: Peer(folder) for name, folder in folders.items()}
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="legacy", **peers["a"].options()) as a,
        http_client(url, mode="legacy", **peers["b"].options()) as b,
        http_client(url, mode="legacy", **peers["c"].options()) as c,
    ):
        clients = {"a": a, "b": b, "c": c}

        async def served(name: str) -> bool:
            outcome = await _attempt(_read(clients[name], folders[name]))
            return not isinstance(outcome, MCPError) and _text(outcome) == f"{name}'s note"

        await eventually(lambda: served("a"), "a to be served")
        for name in ("b", "c", "b", "c"):
            assert await served(name), name  # at once: never "all sessions in use"
            others = [other for other in folders if other != name]
            assert all([(await _read(clients[name], folders[o])).is_error for o in others])
        assert await served("a")
        assert len(marked_pids(mark)) <= 2  # the shared session and one of a client's own


@pytest.mark.req("PDX-CARRY-03")
async def test_a_parked_round_never_blocks_other_clients_questions(tmp_path: Path, mark: str) -> None:
    # One anonymous 2026-07-28 call left parked in an input_required round used to make every other client's
    # question on that upstream unattributable ("2 clients have calls in flight") for 300 s. The upstream asks no
    # roots: it is bound to one client per session by the question itself.
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark, "--no-roots")})
    peers = {name: Peer(tmp_path) for name in ("x", "b")}
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="2026-07-28", elicitation_callback=peers["x"].elicitation) as x,
        http_client(url, mode="legacy", **peers["b"].options()) as b,
    ):
        parked = await x.session.call_tool("ask", {"question": "x's question"}, allow_input_required=True)
        assert isinstance(parked, types.InputRequiredResult), parked  # and never answered
        for _ in range(3):
            answered = await b.call_tool("ask", {"question": "b's question"})
            assert _text(answered) == 'accept: {"name": "Ada", "check": true, "integer": 7}', answered
        assert peers["b"].asked.count("elicitation") == 3 and not peers["x"].asked


@pytest.mark.req("PDX-CARRY-03")
async def test_parked_calls_are_bounded_per_client(tmp_path: Path, mark: str) -> None:
    # One client could park up to the gateway-wide cap (1000 calls, each holding an upstream call for 300 s).
    # Now each client parks at most 16: the 17th is refused with why, and another client parks as before.
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark)})
    tokens = ("--bearer-tokens", str(token_file(tmp_path)))
    peer = Peer(tmp_path)
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager", *tokens) as url,
        http_client(url, ALICE_TOKEN, elicitation_callback=peer.elicitation) as alice,
        http_client(url, BOB_TOKEN, elicitation_callback=peer.elicitation) as bob,
    ):
        for n in range(16):
            parked = await alice.session.call_tool("ask", {"question": f"q{n}"}, allow_input_required=True)
            assert isinstance(parked, types.InputRequiredResult), (n, parked)
        with pytest.raises(MCPError) as refused:
            await alice.session.call_tool("ask", {"question": "one more"}, allow_input_required=True)
        assert "16 calls of this client already wait for its input" in refused.value.message
        parked = await bob.session.call_tool("ask", {"question": "bob's"}, allow_input_required=True)
        assert isinstance(parked, types.InputRequiredResult)
        done = await bob.call_tool("ask", {"question": "bob's, answered"})
        assert json.loads(_text(done).removeprefix("accept: "))["name"] == "Ada"


@pytest.mark.req("PDX-CARRY-05")
async def test_a_resource_update_on_one_clients_session_reaches_that_client_only(tmp_path: Path, mark: str) -> None:
    # Both clients' folders are called "work", so both subscribe to folder://work; a's upstream session says it was
    # updated. It used to reach every subscriber of that URI, whichever session it came from.
    roots = {name: tmp_path / name / "work" for name in ("a", "b")}
    for folder in roots.values():
        folder.mkdir(parents=True)
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark)})
    heard: dict[str, list[str]] = {"a": [], "b": []}

    def handler(name: str) -> Any:
        async def handle(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                heard[name].append(str(message.params.uri))

        return handle

    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="legacy", message_handler=handler("a"), **Peer(roots["a"]).options()) as a,
        http_client(url, mode="legacy", message_handler=handler("b"), **Peer(roots["b"]).options()) as b,
    ):
        for client in (a, b):
            await client.call_tool("roots", {})  # each on a session holding its own roots
            await client.subscribe_resource("folder://work")
        await a.call_tool("touch", {"name": "work"})
        await eventually(lambda: _has(heard["a"]), "a to hear of its update")
        await b.call_tool("touch", {"name": "work"})
        await eventually(lambda: _has(heard["b"]), "b to hear of its update")
        await a.call_tool("roots", {})  # a round trip on each, so anything still on its way has arrived
        await b.call_tool("roots", {})
        assert heard == {"a": ["folder://work"], "b": ["folder://work"]}, heard


async def _has(items: list[str]) -> bool:
    return bool(items)


@pytest.mark.req("PDX-CARRY-05")
async def test_an_anonymous_request_never_gives_an_upstream_its_roots(tmp_path: Path, mark: str) -> None:
    # An upstream that first asks for roots inside a call (not at start-up) is not yet known to use them when an
    # anonymous 2026-07-28 request calls it. Had that request's roots been given, the session would hold the roots
    # of a client gone at once, and every later client would be refused as if it were still being served.
    folders = _folders(tmp_path, "anon", "b")
    config = write_config(tmp_path / "servers.json", {"asking": _asking(mark, "--no-roots")})
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        http_client(url, mode="2026-07-28", **Peer(folders["anon"]).options()) as anonymous,
    ):
        said = _text(await anonymous.call_tool("ask_roots", {}))
        assert said.startswith("error: ") and "no session or credential" in said, said
        async with http_client(url, mode="legacy", **Peer(folders["b"]).options()) as b:
            got = _text(await b.call_tool("ask_roots", {}))
            assert json.loads(got) == [folders["b"].as_uri()], got
        # Known now to work on roots, the upstream refuses the anonymous request up front, with why.
        with pytest.raises(MCPError) as refused:
            await anonymous.call_tool("ask_roots", {})
        assert "no session or credential" in refused.value.message


@pytest.mark.req("PDX-CARRY-04")
async def test_with_no_room_a_call_parked_on_a_roots_upstream_refuses_others_at_once(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # maxClientSessions 0 and a's first call parked while the upstream waits for its roots (up to 300 s): b used to
    # wait behind it for as long. It is refused at once, with why.
    folders = _folders(tmp_path, "a", "b")
    config = write_config(tmp_path / "servers.json", {"filesystem": _filesystem(npm, mark, maxClientSessions=0)})
    tokens = ("--bearer-tokens", str(token_file(tmp_path)))
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager", *tokens) as url,
        http_client(url, ALICE_TOKEN, **Peer(folders["a"]).options()) as a,
        http_client(url, BOB_TOKEN, mode="legacy", **Peer(folders["b"]).options()) as b,
    ):
        arguments = {"path": str(folders["a"] / "note.txt")}
        parked = await a.session.call_tool("read_text_file", arguments, allow_input_required=True)
        assert isinstance(parked, types.InputRequiredResult), parked  # asked for its roots; not answered
        with anyio.fail_after(60), pytest.raises(MCPError) as refused:  # not the 300 s a parked call may last
            await _read(b, folders["b"])
        assert "serving another client" in refused.value.message, refused.value.message
