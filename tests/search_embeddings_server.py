"""An OpenAI-compatible `/v1/embeddings` server for the search tests: the bundled model over starlette + uvicorn.

    python tests/search_embeddings_server.py PORT [MODE [GOOD]]

MODE `ok` (default) answers with the shipped all-MiniLM-L6-v2's vectors, so rankings through it match the
in-process ones; `fail` answers HTTP 500; `hang` never answers; `wrong-size` answers vectors of 7 floats; `drip`
sends its reply's headers and then a space every 0.2 s, for ever; `huge` streams a reply of 400 MB (no length
declared); `picky` answers HTTP 400, quoting the input, for an input with the word "forbidden" (the rest as `ok`,
and not counted against GOOD). With
GOOD, the first GOOD requests are answered as `ok` first (a server that breaks after serving). Every request's
batch size is printed to stdout as `batch N` (the tests read it to see batching).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import uvicorn
from mcp_pd._search.embeddings import default_embedder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route


def app(mode: str, good: int = 0) -> Starlette:
    model = default_embedder()
    served = [0]

    async def drip() -> Any:
        yield b'{"object": "list", "data": ['
        while True:
            await asyncio.sleep(0.2)
            yield b" "

    async def huge() -> Any:
        blanks = b" " * (1 << 20)
        yield b'{"object": "list", "data": ['
        for _ in range(400):
            yield blanks
        yield b"]}"

    async def embeddings(request: Request) -> Any:
        body: Any = await request.json()
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": {"message": "input must be a string or a list of strings"}}, 400)
        print(f"batch {len(texts)}", flush=True)
        if mode == "picky" and any("forbidden" in t for t in texts):
            return JSONResponse({"error": {"message": f"input not allowed: {texts!r}"}}, 400)
        served[0] += 1
        broken = mode if served[0] > good else "ok"
        if broken == "fail":
            return JSONResponse({"error": {"message": "model crashed"}}, 500)
        if broken == "hang":
            await asyncio.sleep(3600)
        if broken in ("drip", "huge"):
            return StreamingResponse(drip() if broken == "drip" else huge(), media_type="application/json")
        if broken == "wrong-size":
            rows = [[0.5] * 7 for _ in texts]
        else:
            assert model is not None
            rows = model.embed(texts).tolist()
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        return JSONResponse({"object": "list", "model": body.get("model"), "data": data})

    return Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])


if __name__ == "__main__":
    port = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "ok"
    good = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    uvicorn.run(app(mode, good), host="127.0.0.1", port=port, log_level="warning")
