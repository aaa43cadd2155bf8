"""The soak's `--snapshots`: what grew inside the API between the end of the warm-up and the end of the run."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from infra.process import snapshots as memory_snapshots
from toolout.stack import Stack


class Snapshots:
    """With `--snapshots`: the API traces its allocations (`PYTHONTRACEMALLOC=1`) and writes where its memory sits
    on SIGUSR2 (`infra.process.snapshots`); one is taken when the warm-up ends, one when the agents stop."""

    def __init__(self, stack: Stack, folder: Path, warm_at: float) -> None:
        self.pid, self.folder = stack.pids("api")[0], folder
        self.first = threading.Timer(max(0.0, warm_at - time.monotonic()), self.take)
        self.first.start()

    def take(self) -> None:
        taken = len(list(self.folder.glob("*.types.json")))
        os.kill(self.pid, memory_snapshots.SIGNAL)
        deadline = time.monotonic() + 120
        while len(list(self.folder.glob("*.types.json"))) == taken and time.monotonic() < deadline:
            time.sleep(0.5)  # `.types.json` is written last: once it is there, the snapshot is complete

    def grown(self) -> list[str]:
        """What grew in the API from the end of the warm-up to now (source lines by bytes, then object types)."""
        self.first.cancel()
        self.first.join()
        self.take()
        stems = sorted(
            (path.with_suffix("").with_suffix("") for path in self.folder.glob("*.types.json")),
            key=lambda stem: int(stem.name.rsplit("-", 1)[1]),  # <pid>-<n>: by n, so that 10 comes after 9
        )
        return memory_snapshots.compare(stems[0], stems[-1]) if len(stems) >= 2 else []
