"""Where a running process's Python memory sits, written on a signal: the diagnostic for a slope a soak finds.

RSS says that an API grew, not what grew. tracemalloc can say which lines hold the memory, but only from
inside the process, and it slows every allocation, so it is off unless asked for: start the process with
`PYTHONTRACEMALLOC=<frames>` (tracing from the first allocation) and `TOOLOUT_MEMORY_SNAPSHOT_DIR=<dir>`,
then each `SIGUSR2` writes `<dir>/<pid>-<n>.tracemalloc` (a `tracemalloc.Snapshot`) and `<dir>/<pid>-<n>.types.json`
(gc's live objects counted by type). `python -m bench.soak.run --snapshots` takes one after its warm-up and one at
its end and prints what grew between them (`compare`); two files of any run compare the same way.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import tracemalloc
from collections import Counter
from itertools import count
from pathlib import Path
from types import FrameType

log = logging.getLogger("toolout.memory")

SIGNAL = signal.SIGUSR2


def install(directory: str) -> bool:
    """Write a snapshot into `directory` on each `SIGUSR2`; True when installed (a directory was given).

    Call it from the main thread (Python's rule for signal handlers), before the server's loop starts."""
    if not directory:
        return False
    folder, numbers = Path(directory), count(1)
    folder.mkdir(parents=True, exist_ok=True)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        write(folder / f"{os.getpid()}-{next(numbers)}")

    signal.signal(SIGNAL, on_signal)
    if not tracemalloc.is_tracing():
        log.warning("memory snapshots asked for, but tracemalloc is off: set PYTHONTRACEMALLOC=1 to see lines")
    return True


def write(stem: Path) -> None:
    """`<stem>.tracemalloc` when tracemalloc traces, then `<stem>.types.json` always, last: its presence means
    the snapshot is complete (a reader waits for it, not for a time)."""
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(str(stem.with_suffix(".tracemalloc")))
    types = Counter(type(thing).__qualname__ for thing in gc.get_objects())
    stem.with_suffix(".types.json").write_text(json.dumps(dict(types.most_common())))


def compare(before: Path, after: Path, top: int = 15) -> list[str]:
    """What grew from one snapshot to the next: the `top` source lines by bytes gained, then the object types by
    count gained. `before` and `after` are stems (`<dir>/<pid>-<n>`)."""
    lines = []
    if before.with_suffix(".tracemalloc").exists() and after.with_suffix(".tracemalloc").exists():
        old = tracemalloc.Snapshot.load(str(before.with_suffix(".tracemalloc")))
        new = tracemalloc.Snapshot.load(str(after.with_suffix(".tracemalloc")))
        lines += [str(stat) for stat in new.compare_to(old, "lineno")[:top]]
    old_types = Counter(json.loads(before.with_suffix(".types.json").read_text()))
    new_types = Counter(json.loads(after.with_suffix(".types.json").read_text()))
    grown = (new_types - old_types).most_common(top)
    return lines + [f"{name}: +{gained} objects" for name, gained in grown]
