"""An upstream that answers every call with text holding a lone surrogate (JSON's "\\ud800" alone: valid JSON, no
Unicode), as a raw JSON-RPC line server would. tests/gateway/test_surrogates.py."""

import json
import sys

INFO = {"name": "surrogates", "version": "1"}
TOOL = {"name": "lone", "description": "Returns text.", "inputSchema": {"type": "object"}}
RESULT = {"content": [{"type": "text", "text": "a\ud800b", "_meta": {"k\udc00": ["\udbff"]}}], "isError": False}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        answer = {"result": {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}}}
        answer["result"]["serverInfo"] = INFO
    elif method == "tools/list":
        answer = {"result": {"tools": [TOOL]}}
    elif method == "tools/call":
        answer = {"result": RESULT}
    else:
        answer = {"error": {"code": -32601, "message": f"no method {method}"}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}), flush=True)
