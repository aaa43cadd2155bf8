"""What a long run watches on a real stack: its logs, its Redis keys, its processes' memory.

Shared by `bench/soak.py` and the integration tests of sessions that end mid-job, so both judge
"clean" the same way: no traceback and no ERROR line in any log since the run began, no Redis key
that was not there before it (the broker's and the watchdog's short-lived ones aside), and the
resident memory of each process (its children included: a Celery worker is a few processes).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from infra.redis import keys
from toolout import processes

PROBLEM = re.compile(r"Traceback \(most recent call last\)|(?:^|[\s\[:])(?:ERROR|CRITICAL)(?:[:/]| [\w.]+: )")
"""A traceback, or a line logged at ERROR or above: uvicorn's `ERROR:`, Celery's `[…: ERROR/Process]`,
`logging`'s `… ERROR name: …`."""
TRANSIENT_KEYS = (keys.WATCHDOG_LOCK, "unacked_mutex")
"""Keys with a lifetime of a second or two that come and go on an idle stack (the watchdog's tick lock,
kombu's restore lock): not state a run leaves behind."""
STORE_WIDE_COUNTERS = (keys.USAGE_TOTALS, keys.MODEL_USAGE_TOTALS, keys.CHUNKS_FAILED_TOTAL)
"""The `/metrics` counters: kept for the store's life (no TTL), one copy per slot jobs ran on (at most 256 with
toolout's ids, `infra.redis.slots.draw_id`). A run whose jobs land on slots the warm-up did not adds copies of them:
counters, not state a run leaves behind."""


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
    return {key for key in key_names(client) - baseline if key not in TRANSIENT_KEYS and not _counter(key)}


def _counter(key: str) -> bool:
    return any(keys.is_slot_copy(key, index) for index in STORE_WIDE_COUNTERS)


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


def _rss_kb(pid: int) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith("VmRSS:")), 0)


# --- a stack of its own ------------------------------------------------------------------------------
SOAK_ENV = {
    "TOOLOUT_AUTH_MODE": "dev",  # local child processes that exit with the run; no key to provision
    "TOOLOUT_MAX_CONCURRENT_JOBS_PER_TENANT": "200",
    "TOOLOUT_MODEL_CONTEXT_TOKENS": "4096",
    "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "256",
    "TOOLOUT_WATCHDOG_INTERVAL_SECONDS": "5",
    "TOOLOUT_WORKER_CONCURRENCY": "8",
}
"""A small model window: a few tens of KB make a multi-chunk job, so jobs are in flight for a while
without the run being about bulk bytes."""


@dataclass
class SoakStack:
    """Private redis-server (no persistence), offline model, API, two workers: each a process of its own."""

    root: Path
    redis_port: int
    api_url: str
    env: dict[str, str]
    services: list[processes.Service] = field(default_factory=list)
    redis_process: subprocess.Popen[bytes] | None = None

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True, socket_timeout=10)

    def pids(self, name_prefix: str) -> list[int]:
        return [s.process.pid for s in self.services if s.name.startswith(name_prefix) and s.process is not None]

    def logs(self) -> list[Path]:
        return [service.log_path for service in self.services]

    def stop(self) -> None:
        for service in reversed(self.services):
            service.stop()
        if self.redis_process is not None and self.redis_process.poll() is None:
            self.redis_process.terminate()
            self.redis_process.wait(15)


def start_stack(
    root: Path, *, workers: int = 2, model_latency_ms: int = 50, extra: dict[str, str] | None = None
) -> SoakStack:
    """Every process at once (a worker's imports take seconds), then wait for each; stopped again on failure."""
    redis_port, model_port, api_port = processes.free_port(), processes.free_port(), processes.free_port()
    logs = root / "logs"
    env = {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TOOLOUT_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "TOOLOUT_MODEL": "openai/toolout-offline",
        "TOOLOUT_MODEL_API_BASE": f"http://127.0.0.1:{model_port}/v1",
        "TOOLOUT_MODEL_API_KEY": "offline",
        "TOOLOUT_BLOB_STORE": f"file://{root / 'blobs'}",
        **SOAK_ENV,
        **(extra or {}),
    }
    stack = SoakStack(root, redis_port, f"http://127.0.0.1:{api_port}", env)
    try:
        stack.redis_process = _redis_server(redis_port, root)
        model_env = {"TOOLOUT_OFFLINE_LATENCY_MS": str(model_latency_ms)}
        stack.services.append(processes.quiet_offline_model(model_port, model_env, logs).start())
        stack.services.append(processes.api(api_port, env, logs).start())
        names = [f"soak-worker-{i + 1}" for i in range(workers)]
        stack.services += [processes.worker(name, env, logs).start() for name in names]
        for service in stack.services[:2]:
            service.wait_ready(90)
        if not processes.wait_for(processes.workers_answering(names, env), timeout=120, interval=0.5):
            raise RuntimeError(f"workers {names} did not answer within 120 s")
    except BaseException:
        stack.stop()
        raise
    return stack


def _redis_server(port: int, root: Path) -> subprocess.Popen[bytes]:
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    server = subprocess.Popen([*argv, "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    if not processes.wait_for(lambda: processes.redis_answers(f"redis://127.0.0.1:{port}/0"), timeout=10):
        server.terminate()
        raise RuntimeError(f"redis-server on port {port} did not answer")
    return server
