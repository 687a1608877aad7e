"""A raw stdio JSON-RPC upstream (stdlib only) that answers the handshake and then misbehaves on request.

Tools: `garbage` answers with a result that is not a tools/call result; `noise` prints a line that is not
JSON-RPC before a correct answer; `both` answers with an error and a result in one message; `latin1` answers with a
line that is not valid UTF-8 (its text encoded as Latin-1); `flood` sends `n` notifications/tools/list_changed at
once, and its listing changes each time it is listed (`counted`'s description counts the listings); `lists`
answers how many tools/list requests it has answered; `ok` answers correctly.
"""

import json
import sys

TOOLS = [
    {"name": n, "description": d, "inputSchema": {"type": "object"}}
    for n, d in (
        ("garbage", "Answer with garbage."),
        ("noise", "Print noise, then answer."),
        ("both", "Answer with an error and a result at once."),
        ("latin1", "Answer with a line that is not UTF-8."),
        ("flood", "Announce changed tools n times at once."),
        ("lists", "How many listings were asked for."),
        ("ok", "Answer."),
        ("counted", "Changes with each listing."),
    )
]
LISTED = [0]


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
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "garbage", "version": "1"},
            }
        elif method == "tools/list":
            LISTED[0] += 1
            result = {"tools": [*TOOLS[:-1], {**TOOLS[-1], "description": f"Listing {LISTED[0]}."}]}
        elif method == "tools/call" and request["params"]["name"] == "garbage":
            result = {"content": "this should be a list", "isError": "maybe"}
        elif method == "tools/call" and request["params"]["name"] == "noise":
            sys.stdout.write("this line is not JSON-RPC\n")
            result = {"content": [{"type": "text", "text": "fine"}]}
        elif method == "tools/call" and request["params"]["name"] == "both":
            error = {"code": -32000, "message": "both an error and a result"}
            send({"jsonrpc": "2.0", "id": rid, "error": error, "result": {"content": []}})
            continue
        elif method == "tools/call" and request["params"]["name"] == "latin1":
            answer = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "café"}]}}
            sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("latin-1") + b"\n")
            sys.stdout.flush()
            continue
        elif method == "tools/call" and request["params"]["name"] == "flood":
            changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            sys.stdout.write((json.dumps(changed) + "\n") * int(request["params"]["arguments"]["n"]))
            result = {"content": [{"type": "text", "text": "flooded"}]}
        elif method == "tools/call" and request["params"]["name"] == "lists":
            result = {"content": [{"type": "text", "text": str(LISTED[0])}]}
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
