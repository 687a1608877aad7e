"""Name squatting (issue 31.6): an upstream that lists a tool named like another upstream's namespaced name never
takes that name. Every upstream tool is served under exactly one name, each name runs exactly one tool, the same
whatever order the upstreams list in or come up in, and the gateway says which tools it renamed and why.

The rule itself (`_names.name_tools`) with worked cases and a property test over adversarial names; then real
upstreams (stdio and Streamable HTTP) behind a real `mcp-pd proxy` (stdio and HTTP), both protocol eras."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest
from gateway.gwtest import describe, eventually, gateway_params, stdio, write_config
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_pd.gateway._names import Route, name_tools, server_key
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]
SQUAT = Path(__file__).parent / "squat_server.py"
RESERVED = ("describe_tools", "search_tools", "browse_tools", "call_tool")


def _claims(listings: Mapping[str, list[str]]) -> set[tuple[str, str]]:
    return {(s, t) for s, names in listings.items() for t in names}


def _check_total_and_injective(listings: Mapping[str, list[str]], routes: Mapping[str, Route]) -> None:
    served = [(r.server, r.tool) for r in routes.values()]
    assert sorted(served) == sorted(_claims(listings))  # every tool once: none dropped, none twice
    assert not set(routes) & set(RESERVED)


# -- the rule ------------------------------------------------------------------------------------------------


@pytest.mark.req("PDX-NAMES-01")
def test_a_squatter_never_takes_another_upstreams_namespaced_name() -> None:
    listings = {"a": ["search"], "b": ["search"], "z": ["a__search", "z__a__search", "z__z__a__search", "x"]}
    naming = name_tools(listings, {}, RESERVED)
    assert naming.routes == {
        "a__search": Route("a", "search"),  # a's own, not z's
        "b__search": Route("b", "search"),
        "x": Route("z", "x"),
        "z__a__search": Route("z", "a__search"),
        "z__z__a__search": Route("z", "z__a__search"),
        "z__z__z__a__search": Route("z", "z__z__a__search"),  # the chain moves up, one level per link
    }
    _check_total_and_injective(listings, naming.routes)
    assert "tool 'a__search' of upstream 'z' is served as 'z__a__search'" in naming.notes[0]
    assert "reads as upstream 'a''s namespaced name" in naming.notes[0]
    assert len(naming.notes) == 3  # each renamed link of the chain is said; a, b and z's 'x' are as usual


@pytest.mark.req("PDX-NAMES-01")
def test_the_squatted_name_stays_its_owners_while_the_owner_is_down() -> None:
    # a has not listed yet (starting, crashed, lazy): a__search must not run z's tool meanwhile.
    early = name_tools({"a": [], "b": ["search"], "z": ["a__search"]}, {}, RESERVED).routes
    assert early == {"search": Route("b", "search"), "z__a__search": Route("z", "a__search")}
    # Not listed at all (another caller's view): a configured upstream's name is still protected.
    assert "a__search" not in name_tools({"z": ["a__search"]}, {}, servers=["a"]).routes
    later = name_tools({"a": ["search"], "b": ["search"], "z": ["a__search"]}, {}, RESERVED).routes
    assert later["z__a__search"] == early["z__a__search"]  # z's tool keeps its name as the others come up


@pytest.mark.req("PDX-NAMES-01")
def test_configured_prefixes_cannot_impersonate() -> None:
    # z is configured with a's prefix, c's prefix makes names that read as a's; a's own names win both times.
    listings = {"a": ["search", "read"], "b": ["search", "read"], "z": ["search"], "c": ["read"]}
    naming = name_tools(listings, {"z": "a__", "c": "a__r"}, RESERVED)
    _check_total_and_injective(listings, naming.routes)
    assert naming.routes["a__search"] == Route("a", "search")
    assert naming.routes["a__read"] == Route("a", "read")
    assert naming.routes["z__search"] == Route("z", "search")  # the canonical name: its key, which is its own
    assert naming.routes["c__read"] == Route("c", "read")
    assert any("'z'" in n and "'z__search'" in n for n in naming.notes)


@pytest.mark.req("PDX-NAMES-01")
def test_the_gateway_names_and_keys_are_checked() -> None:
    assert server_key("my server__x_") == "my_server_x"
    with pytest.raises(ValueError, match="same tool-name prefix"):
        name_tools({"a b": ["x"], "a__b": ["y"]}, {})
    with pytest.raises(ValueError, match="may not contain '__'"):
        name_tools({"a": ["x"]}, {}, reserved=["my__tool"])


@pytest.mark.req("PDX-NAMES-01")
def test_order_of_servers_and_tools_does_not_matter() -> None:
    listings = {"a": ["search", "a__x", "x"], "b": ["x", "search"], "z": ["b__x", "a__search", "describe_tools"]}
    prefixes = {"b": "bee_"}
    first = name_tools(listings, prefixes, RESERVED)
    _check_total_and_injective(listings, first.routes)
    for order in itertools.permutations(listings):
        shuffled = {s: list(reversed(listings[s])) for s in order}
        again = name_tools(shuffled, prefixes, RESERVED)
        assert again == first


_PIECES = st.sampled_from(["a", "b", "z", "a_b", "_", "__", "x", "search", "describe_tools", "-", ".", "bee_"])
_NAMES = st.lists(_PIECES, min_size=1, max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    listings=st.dictionaries(st.sampled_from(["a", "b", "z", "a_b", "a-b"]), st.lists(_NAMES, max_size=6)),
    configured=st.dictionaries(st.sampled_from(["a", "b", "z"]), st.sampled_from(["bee_", "a__", "z_", "a_b__"])),
)
@pytest.mark.req("PDX-NAMES-01")
def test_every_tool_has_one_name_and_every_name_one_tool(
    listings: dict[str, list[str]], configured: dict[str, str]
) -> None:
    prefixes = {s: p for s, p in configured.items() if s in listings}
    naming = name_tools(listings, prefixes, RESERVED)
    _check_total_and_injective(listings, naming.routes)
    assert name_tools(dict(reversed(listings.items())), prefixes, RESERVED) == naming
    if not prefixes:
        # With default prefixes no tool is served under a name that reads as another upstream's namespaced one.
        for served, route in naming.routes.items():
            others = [server_key(s) + "__" for s in listings if s != route.server]
            assert not served.startswith(tuple(others)), (served, route)


# -- through the gateway -------------------------------------------------------------------------------------


def _text(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


EXPECTED = {
    "a__search": "a:search",
    "b__search": "b:search",
    "z__a__search": "z:a__search",
    "z__z__a__search": "z:z__a__search",
}
WARNING = "tool 'a__search' of upstream 'z' is served as 'z__a__search'"


async def _served_as_expected(client: Client, *, progressive: bool) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert set(EXPECTED) <= names and "search" not in names, names
    if progressive:
        await describe(client, *EXPECTED)
    for name, ran in EXPECTED.items():
        assert _text(await client.call_tool(name, {})) == ran


@pytest.mark.req("PDX-NAMES-01")
async def test_squatting_through_a_stdio_gateway_in_both_eras(tmp_path: Path, mark: str) -> None:
    port = free_port()
    b = subprocess.Popen([sys.executable, str(SQUAT), "--http", str(port), "b", "search"], stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, b)
        config = write_config(
            tmp_path / "servers.json",
            {
                "z": stdio(sys.executable, str(SQUAT), "z", "a__search", "z__a__search", mark=mark),
                "a": stdio(sys.executable, str(SQUAT), "a", "search", mark=mark),
                "b": {"url": f"http://127.0.0.1:{port}/mcp"},
            },
        )
        params = gateway_params("--config", str(config))
        log = tmp_path / "gateway.log"
        for mode in ("legacy", "auto"):  # the handshake era, then 2026-07-28
            with log.open("w") as errlog:
                async with Client(stdio_client(params, errlog=errlog), mode=mode, cache=None) as client:  # type: ignore[arg-type]
                    assert (client.protocol_version == "2026-07-28") == (mode == "auto")
                    await _served_as_expected(client, progressive=True)
            assert WARNING in log.read_text()
    finally:
        stop_process(b)


@pytest.mark.req("PDX-NAMES-01")
async def test_squatting_through_an_http_gateway_whatever_order_upstreams_come_up(tmp_path: Path, mark: str) -> None:
    # a is an HTTP upstream that is not up when the gateway starts: z's tool must not take a's name meanwhile.
    a_port, port = free_port(), free_port()
    config = write_config(
        tmp_path / "servers.json",
        {
            "a": {"url": f"http://127.0.0.1:{a_port}/mcp"},
            "b": stdio(sys.executable, str(SQUAT), "b", "search", mark=mark),
            "z": stdio(sys.executable, str(SQUAT), "z", "a__search", "z__a__search", mark=mark),
        },
    )
    params = gateway_params("--config", str(config), "--transport", "http", "--port", str(port), "--mode", "eager")
    log = tmp_path / "gateway.log"
    url = f"http://127.0.0.1:{port}/mcp"
    a: subprocess.Popen[bytes] | None = None
    with log.open("wb") as err:
        proc = subprocess.Popen([params.command, *params.args], stdout=subprocess.DEVNULL, stderr=err, env=params.env)
        try:
            _wait_for_port(port, proc)
            async with Client(url, mode="legacy", cache=None) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {"search", "z__a__search", "z__z__a__search"}, names  # a is down: b's is 'search'
                assert _text(await client.call_tool("z__a__search", {})) == "z:a__search"
                assert (await client.call_tool("a__search", {})).is_error  # a's name, and a is not up: not z's tool
            assert WARNING in log.read_text()
            page = httpx2.get(f"http://127.0.0.1:{port}/admin", timeout=10).text
            assert "served as &#x27;z__a__search&#x27;" in page or "served as 'z__a__search'" in page

            a = subprocess.Popen([sys.executable, str(SQUAT), "--http", str(a_port), "a", "search"])
            _wait_for_port(a_port, a)

            async def a_is_up() -> bool:
                async with Client(url, mode="legacy", cache=None) as client:
                    return "a__search" in {t.name for t in (await client.list_tools()).tools}

            await eventually(a_is_up, "a's tools in the listing (the gateway retries a with backoff)", timeout=60)
            for mode in ("legacy", "auto"):
                async with Client(url, mode=mode, cache=None) as client:
                    assert (client.protocol_version == "2026-07-28") == (mode == "auto")
                    await _served_as_expected(client, progressive=False)
        finally:
            stop_process(proc, close_stderr=False)
            if a is not None:
                stop_process(a)
