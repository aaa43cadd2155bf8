"""What a long run watches on a running stack (`toolout.devstack.stack`): its logs, Redis keys, processes' memory.

Shared by the soak and capacity benches and the integration tests of sessions that end mid-job, so all judge
"clean" the same way: no traceback and no ERROR line in any log since the run began, no Redis key
that was not there before it (the broker's and the watchdog's short-lived ones aside), and the
resident memory of each process (its children included: a Celery worker is a few processes).

For a run of an hour or more: the RSS *slope* of each process after warm-up (least squares, MB per minute),
which tells a slow leak from allocator settling at any length where a growth bound cannot, and the keys left
behind split the way an operator asks about them: never expiring, or expiring but still naming a session or
output the run deleted (state that should have gone with it and only waits for its TTL).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from infra.redis import keys

PROBLEM = re.compile(r"Traceback \(most recent call last\)|(?:^|[\s\[:])(?:ERROR|CRITICAL)(?:[:/]| [\w.]+: )")
"""A traceback, or a line logged at ERROR or above: uvicorn's `ERROR:`, Celery's `[…: ERROR/Process]`,
`logging`'s `… ERROR name: …`."""
TRANSIENT_KEYS = (keys.WATCHDOG_LOCK, "unacked_mutex")
"""Keys with a lifetime of a second or two that come and go on an idle stack (the watchdog's tick lock,
kombu's restore lock): not state a run leaves behind."""
STORE_WIDE_COUNTERS = (keys.USAGE_TOTALS, keys.MODEL_USAGE_TOTALS, keys.CHUNKS_FAILED_TOTAL, keys.HEDGES_TOTAL)
"""The `/metrics` counters: kept for the store's life (no TTL), one copy per slot jobs ran on (at most 256 with
toolout's ids, `infra.redis.slots.draw_id`). A run whose jobs land on slots the warm-up did not adds copies of them:
counters, not state a run leaves behind; so is the set naming a counter's slots (`toolout:slots:<counter>`), which
appears with its first copy (the hedges' with the run's first hedge)."""


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
        found = {path.name: _problem_lines(self.since(path).splitlines()) for path in self.paths}
        return {name: lines for name, lines in found.items() if lines}

    def count(self, pattern: str) -> int:
        return sum(len(re.findall(pattern, self.since(path))) for path in self.paths)


def _problem_lines(lines: list[str]) -> list[str]:
    """The problem lines, each traceback followed by the exception it ended in: a failed run's report names it."""
    picked = []
    for n, line in enumerate(lines):
        if PROBLEM.search(line):
            picked.append(line + _raised(lines[n + 1 :]) if line.startswith("Traceback") else line)
    return picked


def _raised(rest: list[str]) -> str:
    """The exception line that ends a traceback: its first line that is not indented."""
    ending = next((line for line in rest if line and not line[0].isspace()), "")
    return f" -> {ending}" if ending else ""


def key_names(client: redis.Redis) -> set[str]:
    return {key.decode() if isinstance(key, bytes) else key for key in client.scan_iter(count=1000)}


def left_behind(client: redis.Redis, baseline: set[str]) -> set[str]:
    return {key for key in key_names(client) - baseline if key not in TRANSIENT_KEYS and not _counter(key)}


def _counter(key: str) -> bool:
    return any(keys.is_slot_copy(key, index) or key == keys.slots_in_use(index) for index in STORE_WIDE_COUNTERS)


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


def own_rss_mb(pid: int) -> float:
    """Resident memory of the process alone, in MB (0 when gone): a worker without the DuckDB sandboxes it
    starts per load or question, which come and go with their jobs and would drown a slope in noise."""
    return _rss_kb(pid) / 1000


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU the processes and their descendants have used so far, in seconds, from /proc (Linux).

    The process's own CPU time, not wall time: on a machine shared with other work it is what the
    process itself cost, however long it waited for a core."""
    return sum(_cpu_ticks(pid) for root in pids for pid in _tree(root)) / os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat, counted from the pid)


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


def memory_parts(pid: int) -> dict[str, float]:
    """Where one process's memory sits, from /proc (Linux; {} when gone): its heap (`anon_mb`), mapped files and
    libraries (`file_mb`), `threads`, open `fds` and live `children`. A step in RSS reads differently in each: a
    late import or a new shared library moves `file_mb`, a thread pool that grew moves `threads` and `anon_mb`,
    a child started and kept moves `children`, a leak moves `anon_mb` alone."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return {}
    kb = {name: int(status.get(name, "0 kB").split()[0]) for name in ("RssAnon", "RssFile", "RssShmem")}
    return {
        "anon_mb": kb["RssAnon"] / 1000,
        "file_mb": (kb["RssFile"] + kb["RssShmem"]) / 1000,
        "threads": int(status.get("Threads", "0")),
        "fds": fds,
        "children": len(_tree(pid)) - 1,
    }


def _rss_kb(pid: int) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith("VmRSS:")), 0)


# --- judging a long run: RSS slopes, and whose keys are left -------------------------------------
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def slope_mb_per_minute(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute (0 with fewer than two points)."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_mb = sum(mb for _, mb in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return 0.0
    return 60 * sum((t - mean_t) * (mb - mean_mb) for t, mb in points) / spread


def slopes(samples: Sequence[Any], since: float, until: float) -> dict[str, float]:
    """MB per minute of the API and of each worker process over the samples taken from `since` to `until` seconds
    (after warm-up, while the agents ran: the drain's quiet tail would flatter the slope). A worker is judged
    alone (`Sample.workers_own_mb`); with its children (`+children`, shown, not judged) it swings by hundreds of
    MB with the DuckDB sandboxes alive at the moment of the sample."""
    window = [s for s in samples if since <= s.at <= until]
    found = {"api": slope_mb_per_minute([(s.at, s.api_mb) for s in window])}
    workers = len(window[0].workers_mb) if window else 0
    for i in range(workers):
        found[f"worker-{i + 1}"] = slope_mb_per_minute([(s.at, s.workers_own_mb[i]) for s in window])
        found[f"worker-{i + 1}+children"] = slope_mb_per_minute([(s.at, s.workers_mb[i]) for s in window])
    return {name: round(mb, 3) for name, mb in found.items()}


def rss_growth(warm: Any, end: Any) -> dict[str, float]:
    """MB gained from the sample `warm` to the sample `end`, named as `slopes` names them: a worker alone, and with
    its children (`+children`, which says more about the sandboxes alive at each instant than about growth)."""
    found = {"api": end.api_mb - warm.api_mb}
    for i, (before, after) in enumerate(zip(warm.workers_mb, end.workers_mb, strict=True)):
        if warm.workers_own_mb and end.workers_own_mb:
            found[f"worker-{i + 1}"] = end.workers_own_mb[i] - warm.workers_own_mb[i]
        found[f"worker-{i + 1}+children"] = after - before
    return found


def leftovers(client: redis.Redis, left: Iterable[str], owners: set[str]) -> dict[str, list[str]]:
    """The keys left behind, split: never expiring, expiring but of a deleted session or output, the rest."""
    names = sorted(left)
    forever = without_ttl(client, names)
    deleted = of_deleted(client, names, owners)
    other = [name for name in names if name not in forever and name not in deleted]
    return {"without_ttl": forever, "ttl_of_deleted": deleted, "ttl_other": other}


def without_ttl(client: redis.Redis, names: Iterable[str]) -> list[str]:
    """The keys of `names` that never expire (TTL -1; a key gone meanwhile, -2, is left out)."""
    return sorted(name for name in names if client.ttl(name) == -1)


def of_deleted(client: redis.Redis, names: Iterable[str], owners: set[str]) -> list[str]:
    """The keys of `names` with a TTL whose name or string value names one of `owners` (the run's session ids
    and output handles): a pointer such as `toolout:query:<tenant>:<sha256>:loaded` names its output's blob
    prefix only in its value."""
    found = []
    for name in names:
        if client.ttl(name) < 0:
            continue
        value = client.get(name) if client.type(name) in ("string", b"string") else None
        text = f"{name} {value.decode(errors='replace') if isinstance(value, bytes) else value or ''}"
        if _ids(text) & owners:
            found.append(name)
    return sorted(found)


def _ids(text: str) -> set[str]:
    """The uuid-shaped words of `text` (session ids and handles are uuids)."""
    return set(UUID.findall(text))
