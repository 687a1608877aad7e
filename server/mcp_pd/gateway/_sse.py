"""Whether a `url` that failed the Streamable HTTP handshake is really an SSE endpoint (the 2024-11-05 HTTP+SSE
transport, which the gateway does not speak).

Asked only after the handshake's POST failed: one GET asking for an event stream, bounded in time and bytes. An SSE
endpoint answers it with `text/event-stream` and opens with an `endpoint` event; a Streamable HTTP endpoint refuses
a GET without a session. Knows nothing about sessions or supervision; uses the SDK's HTTP client factory, so the
entry's headers (its credentials) go only where the handshake already sent them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import anyio
import httpx2
from mcp.shared._httpx_utils import create_mcp_http_client

__all__ = ["SSE_HINT", "sse_endpoint", "sse_failure"]

# Enough for an `endpoint` event; a stream that says nothing within this long is no better known.
_PROBE_SECONDS: Final = 5.0
_PROBE_BYTES: Final = 4096
SSE_HINT: Final = (
    "the gateway speaks Streamable HTTP, not the older HTTP+SSE transport: give the server's Streamable HTTP "
    'endpoint as "url" (often the same host with /mcp instead of /sse), or its stdio command; not retried until '
    "the config changes"
)


async def sse_endpoint(url: str, headers: Mapping[str, str]) -> str | None:
    """What shows `url` to be an SSE endpoint, or None (not one, or nothing could be told)."""
    timeout = httpx2.Timeout(_PROBE_SECONDS)
    try:
        with anyio.fail_after(_PROBE_SECONDS * 2):
            async with (
                create_mcp_http_client(headers=dict(headers), timeout=timeout) as http,
                http.stream("GET", url, headers={"Accept": "text/event-stream"}) as response,
            ):
                kind = response.headers.get("content-type", "")
                if response.status_code != 200 or not kind.startswith("text/event-stream"):
                    return None
                seen = b""
                with anyio.move_on_after(_PROBE_SECONDS):
                    async for chunk in response.aiter_bytes():
                        seen += chunk
                        if b"event: endpoint" in seen or len(seen) >= _PROBE_BYTES:
                            break
    except Exception:  # unreachable, timed out, refused: nothing to tell beyond the handshake's own failure
        return None
    if b"event: endpoint" in seen:
        return "a GET opens an event stream whose first event is 'endpoint'"
    return "a GET answers text/event-stream"


async def sse_failure(url: str | None, headers: Mapping[str, str]) -> str | None:
    """The reason an upstream at `url` (None: a stdio one) failed to start, when `url` is an SSE endpoint."""
    if url is None or (sse := await sse_endpoint(url, headers)) is None:
        return None
    return f"failed to start: {url} looks like an SSE endpoint ({sse}); {SSE_HINT}"
