"""Warm-ups that run a few seconds after a process has started, not while it starts.

The API and a worker each import litellm (seconds of CPU) and load a tokenizer ahead of their first
request, so that request does not pay for them. Run the moment the process was up, those warm-ups took
the CPU the other processes of a stack needed to start: on a small box `toolout dev` printed its banner
late, two litellm imports being most of the CPU spent until then (docs/performance.md). Delayed, they run once the
stack answers; a request that comes earlier pays only for what it needs itself.

Not niced: a thread's priority is inherited by the threads and processes it starts (a DuckDB spare, a
tokenizer's pool), which would then serve requests at that lower priority for the process's life.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

WARM_UP_DELAY_SECONDS = 5.0
"""How long a warm-up waits: enough for `toolout dev`'s four processes on 2 cores to pass their readiness checks."""

log = logging.getLogger("toolout.warm_up")


def later(name: str, *steps: Callable[[], object], delay: float = WARM_UP_DELAY_SECONDS) -> threading.Thread:
    """Run `steps` in order in a daemon thread named `name`, `delay` seconds from now."""
    thread = threading.Thread(target=_run, args=(steps, delay), name=name, daemon=True)
    thread.start()
    return thread


def _run(steps: tuple[Callable[[], object], ...], delay: float) -> None:
    time.sleep(delay)
    for step in steps:
        try:
            step()
        except Exception:  # a warm-up that fails only leaves its cost to the first request
            log.warning("warm-up step %s failed", getattr(step, "__name__", step), exc_info=True)
