"""The package version, from one source: pyproject.toml, as installed (`importlib.metadata`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["VERSION"]


def _version() -> str:
    try:
        return version("mcp-progressive-disclosure")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


VERSION = _version()
