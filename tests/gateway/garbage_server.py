"""A raw stdio JSON-RPC upstream (stdlib only) that answers the handshake and then misbehaves on request.

Tools: `garbage` answers with a result that is not a tools/call result; `noise` prints a line that is not
JSON-RPC before a correct answer; `both` answers with an error and a result in one message; `ok` answers
correctly.
"""

import json
import sys

TOOLS = [
    {"name": n, "description": d, "inputSchema": {"type": "object"}}
    for n, d in (
        ("garbage", "Answer with garbage."),
        ("noise", "Print noise, then answer."),
        ("both", "Answer with an error and a result at once."),
        ("ok", "Answer."),
    )
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        rid, method = request["id"], request.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbage", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and request["params"]["name"] == "garbage":
            result = {"content": "this should be a list", "isError": "maybe"}
        elif method == "tools/call" and request["params"]["name"] == "noise":
            sys.stdout.write("this line is not JSON-RPC\n")
            result = {"content": [{"type": "text", "text": "fine"}]}
        elif method == "tools/call" and request["params"]["name"] == "both":
            error = {"code": -32000, "message": "both an error and a result"}
            send({"jsonrpc": "2.0", "id": rid, "error": error, "result": {"content": []}})
            continue
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
