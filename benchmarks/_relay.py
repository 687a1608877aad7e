"""A bare line relay in front of one stdio server: the floor of any hop through a Python asyncio process.

    python benchmarks/_relay.py COMMAND [ARG ...]

Each line from the client is written to the server and each line back to the client, unparsed and unchecked:
what no gateway can beat by more than its parsing, checking and routing. The gateway benchmark measures it beside
the gateway so the gateway's ratio can be read against that floor.
"""

from __future__ import annotations

import asyncio
import os
import sys


async def main(argv: list[str]) -> None:
    loop = asyncio.get_running_loop()
    server = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None
    assert stdout is not None
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(0), "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def up() -> None:
        while line := await reader.readline():
            stdin.write(line)
        stdin.close()

    async def down() -> None:
        while line := await stdout.readline():
            writer.write(line)

    await asyncio.gather(up(), down())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
