import os
import tempfile

import pytest
from pdtest import CATALOGS


def pytest_sessionstart(session: pytest.Session) -> None:
    # Catalog-mode servers keep search vectors in the user's cache directory by default: the tests use their own.
    os.environ.setdefault("MCP_PD_CACHE_DIR", tempfile.mkdtemp(prefix="mcp-pd-test-cache-"))
    # Said once, up front, instead of as a dozen unrelated failures (the catalogs are not vendored).
    if not (CATALOGS / "github-mcp-server").is_dir():
        raise pytest.UsageError(
            f"the tests need the shared tool catalogs at {CATALOGS}: put shared/catalogs beside the checkout "
            "or set MCP_PD_CATALOGS=/path/to/catalogs"
        )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
