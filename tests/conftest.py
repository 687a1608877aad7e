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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
