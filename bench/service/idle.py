"""Wait until processes are idle, so one measurement's leftovers never land in the next one's."""

from __future__ import annotations

import os
import time
from pathlib import Path

from toolout.devstack.stack import Stack


def settle(pids: list[int], *, window: float = 0.2, timeout: float = 10.0) -> float:
    """Wait until these processes are idle (at most one clock tick of CPU in `window`); the seconds waited.

    litellm finishes each call's logging in background threads after the call returned: run back
    to back, one side's leftover work would land in the other side's measurement (measured: the
    bench process used 200-280 ms of CPU during a 128-chunk job right after a baseline run, ~100 ms
    when settled first, and the job's wall grew by a third).
    """
    started = time.perf_counter()
    before = cpu_ticks(pids)
    while time.perf_counter() - started < timeout:
        time.sleep(window)
        now = cpu_ticks(pids)
        if now - before <= 1:
            break
        before = now
    return time.perf_counter() - started


def cpu_ticks(pids: list[int]) -> int:
    """User + system clock ticks used so far by the processes (all their threads)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total


def stack_pids(stack: Stack) -> list[int]:
    """This process and every process of the stack (model, API, worker)."""
    return [os.getpid(), *(s.process.pid for s in stack.services if s.process is not None)]
