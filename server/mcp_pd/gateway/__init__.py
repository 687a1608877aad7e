"""The gateway: progressive disclosure in front of MCP servers you do not control.

`mcp-pd proxy --config servers.json` serves every upstream's tools through one low-level server with
`ProgressiveDisclosure` installed; `mcp-pd export` writes their definitions to enrich by hand.
"""

from ._cli import main
from ._config import ConfigError, UpstreamConfig, load_config, one_off_stdio, one_off_url
from ._export import MANIFEST, ExportReport, load_cache, write_export
from ._names import Route, assign_names
from ._pool import Upstream, UpstreamPool, UpstreamUnavailable
from ._server import UPSTREAM_UNAVAILABLE, CachedServer, Gateway, build_gateway

__all__ = [
    "MANIFEST",
    "UPSTREAM_UNAVAILABLE",
    "CachedServer",
    "ConfigError",
    "ExportReport",
    "Gateway",
    "Route",
    "Upstream",
    "UpstreamConfig",
    "UpstreamPool",
    "UpstreamUnavailable",
    "assign_names",
    "build_gateway",
    "load_cache",
    "load_config",
    "main",
    "one_off_stdio",
    "one_off_url",
    "write_export",
]
