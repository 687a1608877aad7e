"""All of MCP through the gateway, not only tool calls: roots, sampling, elicitation, logging, resources (with the
links upstream tools return), resource templates, prompts and completions, with the npm reference servers as
upstreams (the filesystem server started with no directory: it takes its folders from the client's roots)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import (
    ALICE_TOKEN,
    BOB_TOKEN,
    Peer,
    connect,
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
from mcp.shared.exceptions import MCPError
from pdtest_metrics import scrape, value

# Roots, sampling and logging are deprecated as of 2026-07-28 (SEP-2577); handshake-era clients still use them.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]


def _config(tmp_path: Path, npm: dict[str, Path], mark: str, *, twins: bool = False) -> Path:
    servers = {
        "filesystem": stdio("node", str(npm["filesystem"]), mark=mark),  # no directory: roots only
        "everything": stdio("node", str(npm["everything"]), mark=mark),
    }
    if twins:
        servers["everything-b"] = stdio("node", str(npm["everything"]), mark=mark)
    return write_config(tmp_path / "servers.json", servers)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _http_gateway(config: Path, tmp_path: Path, *extra: str) -> Any:
    return http_gateway(config, tmp_path / "gateway.log", "--mode", "eager", *extra)


ADMIN = "operator-token-0123456789abcdef"


def _tokens(tmp_path: Path) -> tuple[str, ...]:
    """Client tokens (`gwtest.TOKENS`) and the operator's (`ADMIN`, for GET /metrics)."""
    (tmp_path / "admin").write_text(ADMIN)
    return "--bearer-tokens", str(token_file(tmp_path)), "--admin-token-file", str(tmp_path / "admin")


async def _roots_sampling_elicitation(client: Client, peer: Peer, files: Path) -> None:
    # The filesystem server asks the gateway for roots, and the gateway asks this client.
    async def readable() -> bool:
        result = await client.call_tool("read_text_file", {"path": str(files / "note.txt")})
        return not result.is_error and _text(result) == "hello through roots"

    await eventually(readable, "the filesystem server to allow the client's root")
    denied = await client.call_tool("read_text_file", {"path": "/etc/hostname"})
    assert denied.is_error and "Access denied" in _text(denied)  # only the client's root, nothing else
    assert "roots" in peer.asked

    sampled = await client.call_tool("trigger-sampling-request", {"prompt": "a haiku", "maxTokens": 20})
    assert not sampled.is_error, sampled
    assert "sampled: " in _text(sampled) and "a haiku" in _text(sampled)
    elicited = await client.call_tool("trigger-elicitation-request", {})
    assert not elicited.is_error, elicited
    assert "Ada" in _text(elicited)
    assert {"sampling", "elicitation"} <= set(peer.asked)


async def _resources_and_prompts(client: Client) -> None:
    listed = {r.uri for r in (await client.list_resources()).resources}
    assert "resource:///tool_descriptions" in listed  # the gateway's own resource stays first
    static = "demo://resource/static/document/features.md"
    assert static in listed
    read = await client.read_resource(static)
    assert read.contents[0].uri == static and "text" in read.contents[0].model_dump()

    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    by_template = await client.read_resource("demo://resource/dynamic/text/3")  # never listed: its template routes
    assert by_template.contents[0].uri == "demo://resource/dynamic/text/3"

    # A link an upstream tool returned resolves through the gateway.
    links = await client.call_tool("get-resource-links", {"count": 2})
    uris = [b.uri for b in links.content if isinstance(b, types.ResourceLink)]
    assert len(uris) == 2
    for uri in uris:
        assert (await client.read_resource(uri)).contents[0].uri == uri

    prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert {"simple-prompt", "args-prompt", "completable-prompt"} <= prompts
    got = await client.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhône"})
    assert "Lyon" in json.dumps(got.model_dump(mode="json"))
    completion = await client.complete(
        types.PromptReference(name="completable-prompt"), {"name": "department", "value": "E"}
    )
    assert "Engineering" in completion.completion.values

    with pytest.raises(MCPError) as unknown:  # the only upstream with resources answers for an unknown URI
        await client.read_resource("nowhere://at/all")
    assert "nowhere://at/all" in unknown.value.message


@pytest.mark.req("PDX-CARRY-01", "PDX-CARRY-02")
async def test_everything_passes_through_the_gateway_over_stdio(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    files = tmp_path / "work"
    files.mkdir()
    (files / "note.txt").write_text("hello through roots")
    peer = Peer(files)
    params = gateway_params("--config", str(_config(tmp_path, npm, mark)), "--mode", "eager")
    async with connect(params, **peer.options()) as client:
        await _roots_sampling_elicitation(client, peer, files)
        await _resources_and_prompts(client)

        # Logging: the level goes to the upstreams, their messages come back named after the upstream.
        await client.set_logging_level("debug")
        await client.call_tool("toggle-simulated-logging", {})

        async def logged() -> bool:
            return any((p.logger or "").startswith("everything") for p in peer.logs)

        await eventually(logged, "an upstream log")

        # The client's roots change: the upstream is told, asks again, and the new root is the one allowed.
        other = tmp_path / "other"
        other.mkdir()
        (other / "moved.txt").write_text("after the change")
        peer.folders = [other]
        await client.session.send_roots_list_changed()

        async def moved() -> bool:
            result = await client.call_tool("read_text_file", {"path": str(other / "moved.txt")})
            return not result.is_error

        await eventually(moved, "the new root")
        old = await client.call_tool("read_text_file", {"path": str(files / "note.txt")})
        assert old.is_error and "Access denied" in _text(old)


@pytest.mark.req("PDX-CARRY-01")
async def test_everything_passes_through_the_gateway_over_http(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    files = tmp_path / "work"
    files.mkdir()
    (files / "note.txt").write_text("hello through roots")
    peer = Peer(files)
    async with (
        _http_gateway(_config(tmp_path, npm, mark), tmp_path) as url,
        Client(url, mode="legacy", cache=None, **peer.options()) as client,
    ):
        await _roots_sampling_elicitation(client, peer, files)
        await _resources_and_prompts(client)


@pytest.mark.req("PDX-CARRY-01")
async def test_a_client_without_the_capability_is_not_asked(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    # Control: with no roots, the filesystem server allows nothing, through the gateway as it does direct.
    params = gateway_params("--config", str(_config(tmp_path, npm, mark)), "--mode", "eager")
    async with connect(params) as client:
        denied = await client.call_tool("read_text_file", {"path": str(tmp_path / "servers.json")})
        assert denied.is_error and "Access denied" in _text(denied)
        names = {t.name for t in (await client.list_tools()).tools}
        # The gateway declares sampling to its upstreams, so the tool is listed; the client never declared it.
        assert "trigger-sampling-request" in names
        refused = await client.call_tool("trigger-sampling-request", {"prompt": "x", "maxTokens": 5})
        assert refused.is_error and "the client did not declare it" in _text(refused)


@pytest.mark.req("PDX-CARRY-03")
async def test_a_2026_client_is_asked_in_input_required_rounds(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    # A 2026-07-28 client has no back-channel: the gateway answers input_required with the upstream's request, the
    # SDK client answers it through the same callbacks and retries, and the parked upstream call goes on.
    files = tmp_path / "work"
    files.mkdir()
    (files / "note.txt").write_text("hello through roots")
    peer = Peer(files)
    config = _config(tmp_path, npm, mark)
    async with Client(
        gateway_params("--config", str(config), "--mode", "eager"), cache=None, **peer.options()
    ) as client:
        assert client.protocol_version == "2026-07-28"  # auto, against our server
        await _roots_sampling_elicitation(client, peer, files)
        await _resources_and_prompts(client)
    peer.asked.clear()
    # Over HTTP a 2026-07-28 client is told apart by its credential (anonymous requests are each a client of their
    # own, which an upstream on its clients' roots cannot serve: test_isolation.py).
    async with (
        _http_gateway(config, tmp_path, *_tokens(tmp_path)) as url,
        http_client(url, ALICE_TOKEN, **peer.options()) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        await _roots_sampling_elicitation(client, peer, files)


@pytest.mark.req("PDX-CARRY-03")
async def test_a_2026_round_resumes_only_with_its_own_state(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    # Driving the rounds by hand: the requestState is single-use and bound to its request; a client that never
    # comes back leaves nothing behind (the mark fixture checks every upstream process is gone at the end).
    peer = Peer(tmp_path)
    params = gateway_params("--config", str(_config(tmp_path, npm, mark)), "--mode", "eager")
    async with Client(params, cache=None, **peer.options()) as client:
        session = client.session
        arguments = {"prompt": "a haiku", "maxTokens": 20}
        first = await session.call_tool("trigger-sampling-request", arguments, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.request_state and first.input_requests
        ((key, asked),) = first.input_requests.items()
        assert isinstance(asked, types.CreateMessageRequest)
        answer = await peer.sampling(None, asked.params)

        with pytest.raises(MCPError) as other:  # the same state for another request: refused, the call stays parked
            await session.call_tool(
                "trigger-sampling-request",
                {"prompt": "something else", "maxTokens": 20},
                input_responses={key: answer},
                request_state=first.request_state,
                allow_input_required=True,
            )
        assert "requestState is unknown, already used or lapsed" in other.value.message

        done = await session.call_tool(
            "trigger-sampling-request",
            arguments,
            input_responses={key: answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        assert "sampled: " in _text(done) and "a haiku" in _text(done)

        with pytest.raises(MCPError) as again:  # single use
            await session.call_tool(
                "trigger-sampling-request",
                arguments,
                input_responses={key: answer},
                request_state=first.request_state,
                allow_input_required=True,
            )
        assert "already used" in again.value.message

        # A retry that leaves the request unanswered: the upstream is told so, and says it failed.
        second = await session.call_tool("trigger-sampling-request", arguments, allow_input_required=True)
        assert isinstance(second, types.InputRequiredResult) and second.request_state
        unanswered = await session.call_tool(
            "trigger-sampling-request",
            arguments,
            input_responses={},
            request_state=second.request_state,
            allow_input_required=True,
        )
        assert isinstance(unanswered, types.CallToolResult) and unanswered.is_error, unanswered
        assert "did not answer" in _text(unanswered)

        # Parked and never resumed: the client leaves, the gateway stops (the upstreams with it).
        third = await session.call_tool("trigger-elicitation-request", {}, allow_input_required=True)
        assert isinstance(third, types.InputRequiredResult)


@pytest.mark.req("PDX-CARRY-02")
async def test_twin_upstreams_resources_and_prompts_are_namespaced(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    params = gateway_params("--config", str(_config(tmp_path, npm, mark, twins=True)), "--mode", "eager")
    async with connect(params) as client:
        listed = {r.uri for r in (await client.list_resources()).resources}
        static = "demo://resource/static/document/features.md"
        assert static not in listed
        assert {f"everything+{static}", f"everything-b+{static}"} <= listed
        for uri in (f"everything+{static}", f"everything-b+{static}"):
            assert (await client.read_resource(uri)).contents[0].uri == uri
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"everything__simple-prompt", "everything-b__simple-prompt"} <= prompts
        assert "simple-prompt" not in prompts
        got = await client.get_prompt("everything-b__simple-prompt")
        assert got.messages
        with pytest.raises(MCPError) as unknown:  # two upstreams serve resources: nobody is guessed
            await client.read_resource("nowhere://at/all")
        assert "not served by any upstream" in unknown.value.message

        # A link returned by one twin is namespaced to it, and reads back from it.
        links = await client.call_tool("everything-b__get-resource-links", {"count": 1})
        uris = [b.uri for b in links.content if isinstance(b, types.ResourceLink)]
        assert uris, links
        assert all(u.startswith("everything-b+demo://") for u in uris), uris
        assert (await client.read_resource(uris[0])).contents[0].uri == uris[0]


@pytest.mark.req("PDX-CARRY-02")
async def test_upstream_list_changes_reach_clients_in_both_eras(tmp_path: Path, mark: str) -> None:
    notes = stdio(sys.executable, str(Path(__file__).with_name("content_server.py")), mark=mark)
    params = gateway_params(
        "--config", str(write_config(tmp_path / "servers.json", {"notes": notes})), "--mode", "eager"
    )
    heard: list[str] = []

    async def message(notice: Any) -> None:
        if isinstance(notice, (types.ResourceListChangedNotification, types.PromptListChangedNotification)):
            heard.append(notice.method)

    async with connect(params, message_handler=message) as client:
        assert client.server_capabilities is not None
        caps = client.server_capabilities
        assert caps.resources and caps.resources.list_changed and caps.prompts and caps.prompts.list_changed
        assert {r.uri for r in (await client.list_resources()).resources} >= {"note://first"}
        await client.call_tool("add_note", {"name": "second"})

        async def told() -> bool:
            return {"notifications/resources/list_changed", "notifications/prompts/list_changed"} <= set(heard)

        await eventually(told, "the upstream's list changes")
        assert "note://second" in {r.uri for r in (await client.list_resources()).resources}
        assert "note-second" in {p.name for p in (await client.list_prompts()).prompts}
        assert (await client.read_resource("note://second")).contents[0].uri == "note://second"

    async with Client(params, cache=None) as client:  # 2026-07-28: the same changes on the listen stream
        assert client.protocol_version == "2026-07-28"
        caps = client.server_capabilities
        assert caps is not None and caps.resources and caps.resources.list_changed
        events: list[str] = []
        async with client.listen(resources_list_changed=True, prompts_list_changed=True) as subscription:

            async def read() -> None:
                async for event in subscription:
                    events.append(type(event).__name__)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await client.call_tool("add_note", {"name": "third"})

                async def listened() -> bool:
                    return {"ResourcesListChanged", "PromptsListChanged"} <= set(events)

                await eventually(listened, "the list changes on the listen stream")
                tg.cancel_scope.cancel()
        assert "note://third" in {r.uri for r in (await client.list_resources()).resources}


@pytest.mark.req("PDX-CARRY-04")
async def test_each_client_of_a_roots_upstream_gets_its_own_session_over_http(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # Found: the upstream session is shared, and the filesystem server allows the folders of the last roots answer
    # it got, so over HTTP a second client's calls could run on the first client's folders. Now the first client
    # holds the shared session and every other client gets a process of its own, on its own roots only.
    folders = {}
    for name in ("a", "b", "c"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "note.txt").write_text(f"{name}'s note")
    peers = {name: Peer(folder) for name, folder in folders.items()}
    config = write_config(tmp_path / "servers.json", {"filesystem": stdio("node", str(npm["filesystem"]), mark=mark)})

    async def read(client: Client, owner: str) -> types.CallToolResult:
        return await client.call_tool("read_text_file", {"path": str(folders[owner] / "note.txt")})

    async def allowed(client: Client) -> str:
        return _text(await client.call_tool("list_allowed_directories", {}))

    async with _http_gateway(config, tmp_path, *_tokens(tmp_path)) as url, anyio.create_task_group() as tg:
        clients: dict[str, Client] = {}
        joined = {name: anyio.Event() for name in ("a", "b")}
        leave = {name: anyio.Event() for name in ("a", "b")}
        gone = {name: anyio.Event() for name in ("a", "b")}

        async def client(name: str) -> None:  # in a task of its own, so it can leave while the other stays
            async with http_client(url, ALICE_TOKEN, mode="legacy", **peers[name].options()) as c:
                clients[name] = c
                joined[name].set()
                await leave[name].wait()
            gone[name].set()

        tg.start_soon(client, "a")
        await joined["a"].wait()
        a = clients["a"]

        async def a_reads() -> bool:
            return _text(await read(a, "a")) == "a's note"

        await eventually(a_reads, "the filesystem server to allow a's root")
        (a_pid,) = marked_pids(mark)
        tg.start_soon(client, "b")
        await joined["b"].wait()
        b = clients["b"]
        # b's first call opens b's own session and gives it b's roots before it runs: never a's folders.
        assert _text(await read(b, "b")) == "b's note"
        assert (await read(b, "a")).is_error
        assert str(folders["a"]) not in await allowed(b) and str(folders["b"]) in await allowed(b)
        (b_pid,) = set(marked_pids(mark)) - {a_pid}
        assert value(scrape(url, ADMIN), "mcp_pd_upstream_client_sessions", upstream="filesystem") == 1
        # b's own process dies between calls: the gateway restarts it (its start-up roots request, outside any call,
        # reaches nobody), and b's next call gives it b's roots again before it runs (never none).
        os.kill(b_pid, signal.SIGKILL)

        async def restarted() -> bool:
            pids = set(marked_pids(mark))
            return len(pids) == 2 and b_pid not in pids

        await eventually(restarted, "b's own session to restart")
        await anyio.sleep(1)  # its start-up roots request has been refused by now
        assert _text(await read(b, "b")) == "b's note"
        assert (await read(b, "a")).is_error
        assert _text(await read(a, "a")) == "a's note"  # a goes on undisturbed, on its own folders only
        assert (await read(a, "b")).is_error
        assert str(folders["b"]) not in await allowed(a)

        # Both at once, many calls each: every call runs on its own client's roots.
        async def reads(c: Client, owner: str, other: str) -> None:
            for _ in range(5):
                assert _text(await read(c, owner)) == f"{owner}'s note"
                assert (await read(c, other)).is_error

        async with anyio.create_task_group() as both:
            both.start_soon(reads, a, "a", "b")
            both.start_soon(reads, b, "b", "a")

        async with http_client(url, ALICE_TOKEN, mode="legacy") as rootless:  # no roots: allowed nothing, as direct
            assert (await read(rootless, "a")).is_error
        # A client that has gone leaves no process behind (its own session is stopped within seconds).
        await eventually(lambda: _fewer(mark, 3), "the rootless client's own session to stop")
        leave["b"].set()
        await gone["b"].wait()
        await eventually(lambda: _fewer(mark, 2), "b's own session to stop")
        assert value(scrape(url, ADMIN), "mcp_pd_upstream_client_sessions", upstream="filesystem") == 0
        assert _text(await read(a, "a")) == "a's note"
        # A 2026-07-28 client (no connection: one client per principal) is asked in input_required rounds and gets
        # its own session too. (a, b and the rootless client share alice's token: each session is a client.)
        async with http_client(url, BOB_TOKEN, **peers["c"].options()) as c:
            assert c.protocol_version == "2026-07-28"
            assert _text(await read(c, "c")) == "c's note"
            assert (await read(c, "a")).is_error
        assert len(marked_pids(mark)) == 2
        leave["a"].set()


async def _fewer(mark: str, n: int) -> bool:
    return len(marked_pids(mark)) < n


@pytest.mark.req("PDX-CARRY-04")
async def test_a_call_parked_on_a_roots_upstream_does_not_hold_up_other_clients(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # A 2026-07-28 client's first call is parked while the upstream asks it for roots: the next client does not
    # wait for that call (until it is answered, or lapses after 300 s); it gets a session of its own at once, and the
    # parked call, answered afterwards, still runs on its own client's roots.
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "note.txt").write_text("p's note")
    config = write_config(tmp_path / "servers.json", {"filesystem": stdio("node", str(npm["filesystem"]), mark=mark)})
    peer = Peer(tmp_path / "p")
    async with (
        _http_gateway(config, tmp_path, *_tokens(tmp_path)) as url,
        http_client(url, ALICE_TOKEN, **peer.options()) as parked,
    ):
        arguments = {"path": str(tmp_path / "p" / "note.txt")}
        first = await parked.session.call_tool("read_text_file", arguments, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first  # asked for its roots: not answered yet
        ((_, asked),) = first.input_requests.items()
        assert isinstance(asked, types.ListRootsRequest)
        # A second client (with no roots, so it cannot answer the upstream's first request either) is not held up.
        async with http_client(url, BOB_TOKEN, mode="legacy") as other:
            denied = await other.call_tool("read_text_file", arguments)
            assert denied.is_error and "Access denied" in _text(denied)  # its own session: no folders at all
        done: Any = first
        for _ in range(4):  # the upstream may ask more than once (its start-up request ended unanswered meanwhile)
            if not isinstance(done, types.InputRequiredResult):
                break
            assert done.input_requests and all(
                isinstance(r, types.ListRootsRequest) for r in done.input_requests.values()
            )
            done = await parked.session.call_tool(
                "read_text_file",
                arguments,
                input_responses={key: await peer.roots(None) for key in done.input_requests},
                request_state=done.request_state,
                allow_input_required=True,
            )
        assert isinstance(done, types.CallToolResult) and _text(done) == "p's note", done


@pytest.mark.req("PDX-CARRY-04")
async def test_with_no_sessions_per_client_a_roots_upstream_serves_one_client_at_a_time(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # maxClientSessions 0: the shared session serves its client; other clients are refused (never run on its
    # folders) until it has gone, and then the next client gets a fresh session on its own roots.
    folders = {}
    for name in ("a", "b"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "note.txt").write_text(f"{name}'s note")
    peers = {name: Peer(folder) for name, folder in folders.items()}
    upstream = {**stdio("node", str(npm["filesystem"]), mark=mark), "maxClientSessions": 0}
    config = write_config(tmp_path / "servers.json", {"filesystem": upstream})

    async def read(client: Client, owner: str) -> types.CallToolResult:
        return await client.call_tool("read_text_file", {"path": str(folders[owner] / "note.txt")})

    async with _http_gateway(config, tmp_path) as url, anyio.create_task_group() as tg:
        clients: dict[str, Client] = {}
        joined, leave, gone = anyio.Event(), anyio.Event(), anyio.Event()

        async def client_a() -> None:
            async with Client(url, mode="legacy", cache=None, **peers["a"].options()) as a:
                clients["a"] = a
                joined.set()
                await leave.wait()
            gone.set()

        tg.start_soon(client_a)
        await joined.wait()
        a = clients["a"]

        async def a_reads() -> bool:
            return _text(await read(a, "a")) == "a's note"

        await eventually(a_reads, "the filesystem server to allow a's root")
        async with Client(url, mode="legacy", cache=None, **peers["b"].options()) as b:
            for owner in ("a", "b"):
                with pytest.raises(MCPError) as busy:
                    await read(b, owner)
                assert "is serving another client" in busy.value.message
                assert "maxClientSessions is 0" in busy.value.message
            assert _text(await read(a, "a")) == "a's note"
            assert len(marked_pids(mark)) == 1

            leave.set()  # a has gone: b's next call gets a new upstream session, on b's roots only
            await gone.wait()

            async def b_reads() -> bool:
                try:
                    return _text(await read(b, "b")) == "b's note"
                except MCPError:
                    return False

            await eventually(b_reads, "the upstream to take b's roots once a has gone")
            assert (await read(b, "a")).is_error
            allowed = _text(await b.call_tool("list_allowed_directories", {}))
            assert str(folders["b"]) in allowed and str(folders["a"]) not in allowed


@pytest.mark.req("PDX-CONTENT-01")
async def test_a_link_never_squats_another_upstreams_uri(tmp_path: Path, mark: str) -> None:
    content = str(Path(__file__).with_name("content_server.py"))
    servers = {
        "notes": stdio(sys.executable, content, mark=mark),
        "squat": stdio(sys.executable, content, mark=mark, env={"CONTENT_SQUATTER": "1"}),
    }
    config = write_config(tmp_path / "servers.json", servers)
    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        Client(url, mode="legacy", cache=None) as alice,
        Client(url, mode="legacy", cache=None) as bob,
    ):
        # The squatter links the notes server's resource before anyone listed resources.
        linked = await alice.call_tool("link", {"uri": "note://first"})
        links = [b.uri for b in linked.content if isinstance(b, types.ResourceLink)]
        # Another client's read of the bare URI reaches the upstream that serves it.
        read = await bob.read_resource("note://first")
        assert [c.text for c in read.contents if isinstance(c, types.TextResourceContents)] == ["the first note"]
        assert links == ["squat+note://first"], linked  # its own, namespaced: no claim on the bare URI
        # The link still reads back from the upstream that returned it.
        own = await alice.read_resource(links[0])
        texts = [c.text for c in own.contents if isinstance(c, types.TextResourceContents)]
        assert texts == ["squatted: note://first"] and own.contents[0].uri == links[0]
