"""FastMCP's `create_proxy` in front of one stdio server, served over stdio (the gateway benchmark's rival).

    python -m benchmarks._fastmcp_proxy COMMAND [ARG ...]   (from the checkout: run as a file, benchmarks/fastmcp.py
                                                            would shadow the fastmcp package)

The backend client is connected before the proxy serves, so every call reuses one upstream session: FastMCP's
documented way to share a session (a disconnected client would start a fresh session per request, which no one
would measure a hop with).
"""

from __future__ import annotations

import sys

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


async def main(command: str, args: list[str]) -> None:
    async with Client(StdioTransport(command, args)) as backend:
        await create_proxy(backend, name="fastmcp-proxy").run_async(show_banner=False)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
