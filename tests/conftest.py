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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.as_posix()
        if any(part in path for part in SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
