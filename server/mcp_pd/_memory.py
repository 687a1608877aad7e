"""Big buffers handed back to the operating system when they are freed, so a server's memory comes back down.

A large result passes through a server as a few buffers of its size (the upstream's line, the decoded string, the
encoded response). glibc's malloc serves requests of at least `M_MMAP_THRESHOLD` bytes with their own mappings,
returned to the system on `free`; but each time such a mapping is freed it *raises* that threshold to the freed
size (up to 32 MiB), so that later buffers of a few MiB come from the heap instead, and a heap keeps what it has
once freed (its pages stay the process's unless they happen to be at its very top). A server that has passed one
20 MiB answer then keeps most of the next ones for good: eight clients that hung up before their 20 MiB answers
left 180 MiB behind. Setting the threshold explicitly turns that adjustment off (glibc documents it so): buffers
of `THRESHOLD` bytes or more are always mappings of their own and always given back. Elsewhere (musl, macOS,
Windows) nothing is changed.

The threshold is 4 MiB, not lower: a fresh mapping is zeroed memory the process faults in page by page and unmaps
again, so every buffer at or over it costs that much more. The buffers a big answer passes through a piece at a
time (the HTTP lane's slices, 256 KiB; the decoder's windows, 1 MiB of characters) stay under it and come from the
heap, reused piece after piece; at 1 MiB they were mappings each, and 60 MiB through the lane cost 0.3-0.5 s more
CPU (benchmarks/streams.py, the gateway's CPU per answer). The buffers that hold a whole answer (the upstream's
line, the decoded string) are over it and go back to the system once freed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Final

__all__ = ["THRESHOLD", "return_big_frees"]

THRESHOLD: Final = 4 << 20  # bytes: over every piece a big answer is handled in, under the answers themselves
_M_MMAP_THRESHOLD: Final = -3  # glibc's malloc.h

logger = logging.getLogger(__name__)


def return_big_frees(threshold: int = THRESHOLD) -> bool:
    """Make glibc hand every freed buffer of `threshold` bytes or more back to the system at once. True when set
    (glibc), False where there is nothing to set."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, threshold) != 1:
        logger.debug("mallopt(M_MMAP_THRESHOLD, %d) refused", threshold)
        return False
    return True
