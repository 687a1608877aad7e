"""The gateway's reaper, run as its own small process (`python -I -S _watchdog.py`): stdlib only.

The gateway writes `+PGID` when it starts an upstream process group and `-PGID` when it has reaped it. When
the pipe closes without a clean goodbye (the gateway was killed, even with SIGKILL), every group still
registered is sent SIGTERM, then SIGKILL: no upstream outlives its gateway.
"""

import contextlib
import os
import signal
import sys
import time

GRACE_SECONDS = 2.0


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def main() -> None:
    # Our own session already keeps terminal signals away; these make sure a stray one cannot stop the reaping.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if line[:1] in (b"+", b"-") and line[1:].isdigit():
            (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
    for pgid in groups:
        _signal(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if _alive(g)}
        time.sleep(0.05)
    for pgid in groups:
        _signal(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
