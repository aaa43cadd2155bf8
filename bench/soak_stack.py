"""What a long run watches on a real stack: its logs, its Redis keys, its processes' memory.

Shared by `bench/soak.py` and the integration tests of sessions that end mid-job, so both judge
"clean" the same way: no traceback and no ERROR line in any log since the run began, no Redis key
that was not there before it (the broker's and the watchdog's short-lived ones aside), and the
resident memory of each process (its children included: a Celery worker is a few processes).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from infra import keys

PROBLEM = re.compile(r"Traceback \(most recent call last\)|(?:^|[\s\[:])(?:ERROR|CRITICAL)[:/]")
"""A traceback, or a line logged at ERROR or above: uvicorn's `ERROR:`, Celery's `[…: ERROR/Process]`."""
TRANSIENT_KEYS = (keys.WATCHDOG_LOCK, "unacked_mutex")
"""Keys with a lifetime of a second or two that come and go on an idle stack (the watchdog's tick lock,
kombu's restore lock): not state a run leaves behind."""


@dataclass
class LogWatch:
    """The log files of a stack, read from where they stood when the watch began."""

    paths: list[Path]
    offsets: dict[Path, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.offsets = {path: path.stat().st_size if path.exists() else 0 for path in self.paths}

    def since(self, path: Path) -> str:
        if not path.exists():
            return ""
        with path.open("rb") as log:
            log.seek(self.offsets.get(path, 0))
            return log.read().decode(errors="replace")

    def problems(self) -> dict[str, list[str]]:
        """Per log file, its traceback and ERROR lines written since the watch began."""
        found = {
            path.name: [line for line in self.since(path).splitlines() if PROBLEM.search(line)] for path in self.paths
        }
        return {name: lines for name, lines in found.items() if lines}

    def count(self, pattern: str) -> int:
        return sum(len(re.findall(pattern, self.since(path))) for path in self.paths)


def key_names(client: redis.Redis) -> set[str]:
    return {key.decode() if isinstance(key, bytes) else key for key in client.scan_iter(count=1000)}


def left_behind(client: redis.Redis, baseline: set[str]) -> set[str]:
    return {key for key in key_names(client) - baseline if key not in TRANSIENT_KEYS}


def wait_for_baseline(client: redis.Redis, baseline: set[str], timeout: float) -> tuple[set[str], float]:
    """The keys still left behind after at most `timeout` seconds, and how long it took to be clean."""
    started = time.monotonic()
    while (left := left_behind(client, baseline)) and time.monotonic() - started < timeout:
        time.sleep(0.25)
    return left, time.monotonic() - started


def rss_mb(pids: Iterable[int]) -> float:
    """Resident memory of the processes and all their descendants, in MB, from /proc (Linux); a process
    that is gone counts 0."""
    return sum(_rss_kb(pid) for root in pids for pid in _tree(root)) / 1000


def _tree(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(status.parent.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def _rss_kb(pid: int) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith("VmRSS:")), 0)
