"""The gateway's reaper, run as its own small process (`python -I -S _watchdog.py`): stdlib only.

The gateway writes `+PGID` when it starts an upstream process group and `-PGID` when it has reaped it. When
the pipe closes without a clean goodbye (the gateway was killed, even with SIGKILL), every group still
registered is sent SIGTERM, then SIGKILL: no upstream outlives its gateway. `_process.py` signals groups with
the same two functions.
"""

import contextlib
import os
import signal
import sys
import time

GRACE_SECONDS = 2.0


def group_alive(pgid: int) -> bool:
    """Whether any process of the group `pgid` is still there (one we may not signal counts as alive)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to the group `pgid`, if it still exists."""
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
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if group_alive(g)}
        time.sleep(0.05)
    for pgid in groups:
        signal_group(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
