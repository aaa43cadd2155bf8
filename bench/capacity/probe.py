"""What one stretch of work cost the stack: Redis commands, memory and CPU, S3 requests, API and worker CPU.

Used by `bench/capacity/run.py`. Every figure is a delta between two readings taken around the work, of
counters kept by the thing itself, so other load on a shared machine does not inflate it:
- Redis: `INFO commandstats` (every command, those run inside Lua scripts included), `INFO stats`
  (network bytes), `INFO memory` (used_memory) and `MEMORY USAGE` of every key, grouped into families
  (`toolout:{*}:chunks`, …); the redis-server's own CPU time from /proc.
- S3: moto's server (a process of its own, spoken to over HTTP as in production) logs one line per
  request; the lines written since the reading began are counted by method and kind.
- API and workers: user + system CPU of each process tree from /proc, and the HTTP requests the
  bench's own clients sent (an httpx event hook).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import httpx
import redis

from toolout.devstack import processes
from toolout.devstack.stack_watch import LogWatch, cpu_seconds

S3_LINE = re.compile(r'"(GET|PUT|POST|DELETE|HEAD) (/[^ "]*) HTTP/1\.[01]" (\d{3})')
"""werkzeug's access line, the one moto's server writes per request."""
ID = re.compile(r"(?<=[:{])(?:[0-9a-f]{8,}|[0-9a-f-]{36}|[A-Za-z0-9_-]{16,})(?=[:}]|$)")
"""An id inside a key (job, session, handle, task), bare or as a hash tag: replaced by `*` to name the key's family."""
SLOT_TAG = re.compile(r"\{[0-9a-f]{1,5}\}")
"""The tag of a per-slot index copy (`infra.redis.slots`): every copy of one index is one family."""


def s3_kind(method: str, path: str) -> str:
    """`PUT object`, `POST multipart`, `GET range`, … : what an S3 bill counts separately."""
    if "uploads" in path or "uploadId" in path:
        return f"{method} multipart"
    if "list-type" in path or path.count("/") <= 1:
        return f"{method} list"
    return f"{method} object"


def moto_service(port: int, logs: Path) -> processes.Service:
    """moto's S3 server at its default log level: one werkzeug access line per request, which is what is counted."""
    argv = [processes.PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    return processes.Service(
        "moto-s3", argv, {}, logs / "moto-s3.log", ready=lambda: _answers(f"http://127.0.0.1:{port}/moto-api/")
    )


def _answers(url: str) -> bool:
    httpx.get(url, timeout=2.0)
    return True


def create_bucket(endpoint: str, bucket: str) -> None:
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket=bucket)


def redis_cpu_seconds(client: redis.Redis) -> float:
    """The redis-server's own CPU (getrusage, microseconds), finer than /proc's 10 ms ticks."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def family_delta(now: dict[str, tuple[int, int]], then: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    delta = {}
    for name in set(now) | set(then):
        keys_now, bytes_now = now.get(name, (0, 0))
        keys_then, bytes_then = then.get(name, (0, 0))
        delta[name] = (keys_now - keys_then, bytes_now - bytes_then)
    return delta


def family(key: str) -> str:
    return SLOT_TAG.sub("{slot}", ID.sub("*", key))


def families(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """Key family → (keys, bytes by MEMORY USAGE, every nested value counted: SAMPLES 0)."""
    names = [k for k in client.scan_iter(count=1000)]
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.memory_usage(name, samples=0)
    out: dict[str, tuple[int, int]] = {}
    for name, size in zip(names, pipe.execute(), strict=True):
        count, total = out.get(family(name), (0, 0))
        out[family(name)] = (count + 1, total + (size or 0))
    return out


class RequestCounter:
    """HTTP requests the bench's clients sent, by method and route shape (an httpx event hook)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def hook(self, request: httpx.Request) -> None:
        route = re.sub(r"/[0-9a-f]{32}|/[0-9a-f-]{36}|/[A-Za-z0-9_-]{20,}", "/{id}", request.url.path)
        with self.lock:
            self.counts[f"{request.method} {route}"] += 1

    def client(self, base_url: str) -> httpx.Client:
        return httpx.Client(base_url=base_url, timeout=300, event_hooks={"request": [self.hook]})

    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())


@dataclass
class Reading:
    """The counters at one moment."""

    at: float
    commands: Counter[str]
    net_in: int
    net_out: int
    used_memory: int
    redis_cpu: float
    api_cpu: float
    worker_cpu: float
    requests: int
    families: dict[str, tuple[int, int]]


@dataclass
class Cost:
    """What the stack spent between two readings (plus the peak of used_memory and the key families then)."""

    seconds: float
    commands: dict[str, int]
    net_bytes: int
    memory_after: int
    memory_peak: int
    redis_cpu: float
    api_cpu: float
    worker_cpu: float
    requests: int
    s3: dict[str, int] = field(default_factory=dict)
    families_peak: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Key family → (keys, bytes) added since the first reading, when the keys held the most bytes."""
    families_after: dict[str, tuple[int, int]] = field(default_factory=dict)
    """The same at the last reading: what the work left behind (finished job records, live sessions)."""

    @property
    def total_commands(self) -> int:
        return sum(self.commands.values())

    @property
    def key_bytes_peak(self) -> int:
        return sum(size for _, size in self.families_peak.values())

    @property
    def key_bytes_after(self) -> int:
        return sum(size for _, size in self.families_after.values())


@dataclass
class Meter:
    """Readings of one running stack: its Redis, its moto log, its API and worker processes."""

    redis: redis.Redis
    api_pids: list[int]
    worker_pids: list[int]
    moto_log: Path
    requests: RequestCounter
    idle_commands_per_s: float = 0.0

    def read(self) -> Reading:
        stats = self.redis.info("commandstats")
        commands = Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})
        info = self.redis.info("stats")
        return Reading(
            time.monotonic(),
            commands,
            int(info["total_net_input_bytes"]),
            int(info["total_net_output_bytes"]),
            int(self.redis.info("memory")["used_memory"]),
            redis_cpu_seconds(self.redis),
            cpu_seconds(self.api_pids),
            cpu_seconds(self.worker_pids),
            self.requests.total(),
            families(self.redis),
        )

    def learn_idle(self, seconds: float) -> None:
        """Commands per second an idle stack sends (broker polls, watchdog ticks, heartbeats): subtracted later."""
        before = self.read()
        time.sleep(seconds)
        after = self.read()
        self.idle_commands_per_s = (sum(after.commands.values()) - sum(before.commands.values())) / seconds

    @contextmanager
    def measuring(self, settle: Callable[[], None] | None = None) -> Iterator[list[Cost]]:
        """Yield a list that holds, after the block (and `settle()`), the Cost of what ran inside it."""
        out: list[Cost] = []
        watch = LogWatch([self.moto_log])
        sampler = PeakSampler(self.redis)
        before = self.read()
        sampler.start()
        try:
            yield out
        finally:
            if settle is not None:
                settle()
            sampler.stop()
            after = self.read()
            out.append(self._cost(before, after, watch, sampler))

    def _cost(self, before: Reading, after: Reading, watch: LogWatch, sampler: PeakSampler) -> Cost:
        s3 = Counter(s3_kind(m, p) for m, p, _ in S3_LINE.findall(watch.since(self.moto_log)))
        return Cost(
            seconds=after.at - before.at,
            commands=dict(after.commands - before.commands),
            net_bytes=(after.net_in - before.net_in) + (after.net_out - before.net_out),
            memory_after=after.used_memory - before.used_memory,
            memory_peak=max(sampler.peak, after.used_memory) - before.used_memory,
            redis_cpu=after.redis_cpu - before.redis_cpu,
            api_cpu=after.api_cpu - before.api_cpu,
            worker_cpu=after.worker_cpu - before.worker_cpu,
            requests=after.requests - before.requests,
            s3=dict(s3),
            families_peak=family_delta(sampler.families or after.families, before.families),
            families_after=family_delta(after.families, before.families),
        )


class PeakSampler:
    """A thread that reads used_memory and the key families every `interval` s; keeps the highest of each
    (the families at the reading where the keys held the most bytes)."""

    def __init__(self, client: redis.Redis, interval: float = 0.25) -> None:
        self.client, self.interval = client, interval
        self.peak, self.families, self._most = 0, {}, 0  # type: tuple[int, dict[str, tuple[int, int]], int]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, int(self.client.info("memory")["used_memory"]))
            now = families(self.client)
            if (total := sum(size for _, size in now.values())) > self._most:
                self.families, self._most = now, total
