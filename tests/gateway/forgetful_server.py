"""A progressive-disclosure upstream that forgets a session's grants after one second without a call: the gateway's
next call there comes back refused, and the gateway must read the definition again and retry.

python forgetful_server.py        serve over stdio
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_pd import ProgressiveDisclosure

app = MCPServer("forgetful")


@app.tool()
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


ProgressiveDisclosure(session_idle_timeout=1.0).install(app)

if __name__ == "__main__":
    app.run()
