"""Keeping a long-running process's resident memory flat on glibc: fewer malloc arenas, free pages handed back.

A soak can show the API's RSS climbing steadily for as long as it runs while everything it
holds stays level: the same number of Python objects, the same pymalloc blocks, the same bytes in use by
malloc. What grows is the free space inside glibc's heaps. Each thread that allocates gets an arena (up
to 8 per core), the thread pool that runs sync routes starts and ends threads all day, and an arena only
gives memory back from its top, so freed chunks between live ones stay resident. Three knobs:

* `M_ARENA_MAX` — at most `malloc_arena_max` arenas (2 by default; glibc's own default is 8 per core), set at
  start-up with `mallopt`, the same as `MALLOC_ARENA_MAX=2` in the environment;
* `malloc_trim(0)` every `malloc_trim_interval_seconds` (60) from a daemon thread: it returns every whole
  free page of every arena to the kernel (`madvise`), not only the top of the heap;
* `M_MMAP_THRESHOLD` — blocks of `malloc_mmap_threshold_bytes` (128 KiB) or more get pages of their own, handed
  back whole when freed. glibc starts there too, but raises the threshold to the size of each big block freed (up
  to 32 MiB), so after the first big upload body every later one is carved from a heap. Fixed, a burst of
  uploads peaks lower (`python -m bench.soak.bursts` measures it).

All are glibc's; elsewhere (musl, macOS) nothing is done. 0 turns any of them off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable
from functools import cache

log = logging.getLogger("toolout.memory")

M_ARENA_MAX = -8
"""`mallopt`'s parameter number for the arena cap (glibc's malloc.h)."""
M_MMAP_THRESHOLD = -3
"""`mallopt`'s parameter number for the size from which a block is mapped on its own (glibc's malloc.h)."""


@cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has `malloc_trim`), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def limit_arenas(arenas: int) -> bool:
    """Cap glibc's malloc arenas (threads share them); True when applied."""
    libc = _glibc()
    return arenas > 0 and libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1


def fix_mmap_threshold(size: int) -> bool:
    """Map every block of `size` bytes or more on its own, and stop glibc raising that bound; True when applied."""
    libc = _glibc()
    return size > 0 and libc is not None and libc.mallopt(M_MMAP_THRESHOLD, size) == 1


def trim() -> bool:
    """Hand every whole free page of the heaps back to the kernel; True when some memory was released."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1


def start_trimming(interval_seconds: float) -> Callable[[], None]:
    """`trim` every `interval_seconds` from a daemon thread; returns the function that stops it."""
    stop = threading.Event()
    if interval_seconds <= 0 or _glibc() is None:
        return stop.set

    def run() -> None:
        while not stop.wait(interval_seconds):
            trim()

    threading.Thread(target=run, name="toolout-malloc-trim", daemon=True).start()
    return stop.set


def settle(arenas: int, trim_interval_seconds: float, mmap_threshold: int = 0) -> Callable[[], None]:
    """What an entry point calls first (the API, a worker): cap the arenas, fix the mmap threshold, then trim now
    and then. 0 leaves any of them to glibc."""
    if limit_arenas(arenas):
        log.debug("malloc arenas capped at %d", arenas)
    if fix_mmap_threshold(mmap_threshold):
        log.debug("blocks of %d bytes or more are mapped on their own", mmap_threshold)
    return start_trimming(trim_interval_seconds)
