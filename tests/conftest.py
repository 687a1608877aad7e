import os
import tempfile

import pytest
from pdtest import CATALOGS

_CACHE = tempfile.TemporaryDirectory(prefix="mcp-pd-test-cache-")  # cleaned up when the process exits


def pytest_sessionstart(session: pytest.Session) -> None:
    # Catalog-mode servers keep search vectors in the user's cache directory by default: the tests use their own,
    # removed at the end of the run.
    if "MCP_PD_CACHE_DIR" not in os.environ:
        os.environ["MCP_PD_CACHE_DIR"] = _CACHE.name
    # Said once, up front, instead of as a dozen unrelated failures (the catalogs are not vendored).
    if not (CATALOGS / "github-mcp-server").is_dir():
        raise pytest.UsageError(
            f"the tests need the shared tool catalogs at {CATALOGS}: put shared/catalogs beside the checkout "
            "or set MCP_PD_CATALOGS=/path/to/catalogs"
        )


# The slow half: wheel builds and fresh venvs, npm upstream servers behind the gateway, real Redis servers, the
# conformance suite against its negative controls, fuzzing, and the agent's task runs. `./dev check` runs
# the rest (`-m "not slow"`; with the static checks about 90 s on 2 cores); `./dev test` runs everything.
SLOW = (
    "test_packaging.py",
    "gateway/",  # npm upstreams, the browser
    "oauth/",  # a real OpenID provider (npm oidc-provider), servers and gateways behind it
    "test_redis_",
    "conformance/",
    "test_fuzz.py",
    "agent/test_agent_ledger.py",
    "agent/test_agent_planner.py",
    "agent/test_agent_catalog.py",
    "test_vector_cache.py",
    "test_doc_commands.py",  # every shell command of the docs, run as written
)


# The slow modules that take longest, longest first (measured: docs/testing.md, "Where the time goes"). `./dev test`
# hands them to the workers first, so the run never ends waiting on one of them while the others sit idle; the
# fast tests come last and fill the gaps. A module missing here just runs after these.
LONGEST_FIRST = (
    "conformance/",  # the shared reports (below): about 50 servers checked, most of them in several sessions
    "test_doc_commands.py",
    "agent/test_agent_planner.py",
    "test_packaging.py",
    "oauth/",
    "agent/test_agent_catalog.py",
    "gateway/",
)
# Session fixtures that cost nothing to make again on each worker (a folder, a check that npm already installed).
CHEAP_SESSION_FIXTURES = frozenset({"call_logs", "npm"})
# Slow modules whose tests are spread over the workers one by one: each test costs minutes and the module's own
# fixtures seconds (a copy of the checkout), so on one worker the module alone outlasted the rest of the run.
SPREAD = ("test_doc_commands.py",)
# Fixtures holding a fixed resource (the docs' port 8000): the tests using one run on the same worker, one at a time.
FIXED_RESOURCES = ("port_8000",)


def _shared_session_groups(items: list[pytest.Item]) -> dict[str, str]:
    """{module: group}: modules that use the same costly session fixture (e.g. the conformance suite's reports of
    every control) share a group, so one worker makes that fixture once instead of each worker that runs one."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for item in items:
        module = item.nodeid.split("::")[0]
        find(module)
        info = getattr(item, "_fixtureinfo", None)
        for name in info.names_closure if info else ():
            defs = info.name2fixturedefs.get(name) if info else None
            if defs and defs[-1].scope == "session" and defs[-1].baseid and name not in CHEAP_SESSION_FIXTURES:
                parent[find(module)] = find(f"fixture:{name}")
    return {module: find(module) for module in {item.nodeid.split("::")[0] for item in items}}


def _rank(item: pytest.Item) -> int:
    path = item.path.as_posix()
    ranks = [i for i, part in enumerate(LONGEST_FIRST) if part in path]
    if ranks:
        return ranks[0]
    return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 1)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.as_posix()
        if any(part in path for part in SLOW):
            item.add_marker(pytest.mark.slow)
    if config.getoption("dist", "no") != "loadgroup":
        return
    # `./dev test` (--dist loadgroup): each slow module stays on one worker (its module fixtures, a built wheel or
    # npm servers, are made once) and so does each set of modules sharing a costly session fixture; a fast test is a
    # unit of its own. Longest first (with --no-loadscope-reorder, xdist keeps this order).
    slow = [item for item in items if item.get_closest_marker("slow")]
    groups = _shared_session_groups(slow)
    for item in slow:  # a module's fast tests (where only some are slow) stay units of their own
        held = [name for name in FIXED_RESOURCES if name in getattr(item, "fixturenames", ())]
        if held:
            item.add_marker(pytest.mark.xdist_group(held[0]))
        elif not any(part in item.path.as_posix() for part in SPREAD):
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid.split("::")[0]]))
    items.sort(key=_rank)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
