"""The soak's `--snapshots`: what grew inside the API (and, with `--snapshot-workers`, each worker) between the end of
the warm-up and the end of the run."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from infra.process import snapshots as memory_snapshots


class Snapshots:
    """Each traced process (`PYTHONTRACEMALLOC=1`) writes where its memory sits on SIGUSR2
    (`infra.process.snapshots`); one snapshot is taken when the warm-up ends, one when the agents stop."""

    def __init__(self, processes: dict[str, int], folder: Path, warm_at: float) -> None:
        self.processes, self.folder = processes, folder
        self.first = threading.Timer(max(0.0, warm_at - time.monotonic()), self.take)
        self.first.start()

    def take(self) -> None:
        for pid in self.processes.values():
            self._take(pid)

    def _take(self, pid: int) -> None:
        taken = len(self._stems(pid))
        os.kill(pid, memory_snapshots.SIGNAL)
        deadline = time.monotonic() + 120
        while len(self._stems(pid)) == taken and time.monotonic() < deadline:
            time.sleep(0.5)  # `.types.json` is written last: once it is there, the snapshot is complete

    def _stems(self, pid: int) -> list[Path]:
        """The process's complete snapshots, in order (`<pid>-<n>`: by n, so that 10 comes after 9)."""
        stems = (path.with_suffix("").with_suffix("") for path in self.folder.glob(f"{pid}-*.types.json"))
        return sorted(stems, key=lambda stem: int(stem.name.rsplit("-", 1)[1]))

    def grown(self) -> dict[str, list[str]]:
        """Per process, what grew from the end of the warm-up to now (source lines by bytes, then object types)."""
        self.first.cancel()
        self.first.join()
        self.take()
        found = {name: self._stems(pid) for name, pid in self.processes.items()}
        return {name: memory_snapshots.compare(s[0], s[-1]) if len(s) >= 2 else [] for name, s in found.items()}
