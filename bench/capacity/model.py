"""From measured per-job and per-session costs to what 10,000 concurrent jobs and 1 M sessions a day need.

The measured side comes from `bench/capacity/run.py`; the other side is a handful of assumptions, each a
named constant here and printed with the answer, because the answer is only as good as they are.
docs/scaling.md carries a run's output and explains each line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.capacity.probe import Cost
from bench.report import print_table

# --- assumptions (printed with the projection) ---------------------------------------------------
CONCURRENT_JOBS = 10_000
SESSIONS_PER_DAY = 1_000_000
PEAK_FACTOR = 3.0
"""Peak hour over the day's average rate."""
MODEL_LATENCY_S = 4.0
"""One model call on a real chunk (hosted LLM, tens of thousands of prompt tokens)."""
JOB_OVERHEAD_S = 1.0
"""Queueing and orchestration on top of the model time (docs/performance.md: well under a second)."""
JOBS_PER_SESSION = 1
SESSION_ALIVE_S = 3600
"""How long a session's keys stay: an agent that deletes its session at the end of a one-hour conversation.
One that never does keeps them TOOLOUT_SESSION_TTL_SECONDS (24 h) after last use: 24x the memory."""
JOB_TTL_S = 3600
"""The finished job's record is kept this long (TOOLOUT_JOB_TTL_SECONDS; the default is 24 h: 24x the memory)."""
THREADS_PER_WORKER = 32
WORKER_CORE_BUDGET = 0.6
"""A worker process (threads pool, one GIL) is planned at 60 % of one core; the rest is headroom."""
API_CORE_BUDGET = 0.6
REDIS_CORE_BUDGET = 0.5
"""Redis executes commands on one thread: plan a primary at half a core of command CPU."""
REDIS_MEMORY_BUDGET = 16 << 30
"""Data per primary: half of a 32 GB node, the rest for fork copy-on-write (RDB/AOF rewrite) and fragmentation."""


@dataclass
class Measured:
    """What `units` jobs (or sessions, or uploads) cost together, and the per-unit views of it."""

    name: str
    units: int
    calls: int
    wall: float
    cost: Cost
    net_commands: float
    """Commands net of the idle stack's own traffic (broker polls, watchdog) over the same seconds."""

    def commands_per_unit(self) -> float:
        return self.net_commands / self.units

    def lua_per_unit(self) -> float:
        return sum(self.cost.commands.get(c, 0) for c in ("evalsha", "eval", "fcall")) / self.units

    def redis_ms_per_unit(self) -> float:
        return self.cost.redis_cpu * 1000 / self.units

    def net_kb_per_unit(self) -> float:
        return self.cost.net_bytes / 1000 / self.units

    def peak_per_unit(self) -> float:
        """Bytes of keys (MEMORY USAGE) at the moment they held the most: a job in flight, broker messages included."""
        return self.cost.key_bytes_peak / self.units

    def retained_per_unit(self) -> float:
        """Bytes of keys left once the work is over: a finished job's record and outputs, a live session."""
        return self.cost.key_bytes_after / self.units

    def used_memory_per_unit(self) -> tuple[float, float]:
        """INFO used_memory's growth at the peak and after, per unit: allocator and buffers included, noisier."""
        return self.cost.memory_peak / self.units, self.cost.memory_after / self.units

    def s3_per_unit(self) -> float:
        return sum(self.cost.s3.values()) / self.units

    def s3_kinds(self) -> str:
        return ", ".join(f"{k} {v / self.units:.1f}" for k, v in sorted(self.cost.s3.items())) or "none"

    def worker_ms_per_call(self) -> float:
        return self.cost.worker_cpu * 1000 / self.calls if self.calls else 0.0

    def worker_ms_per_unit(self) -> float:
        return self.cost.worker_cpu * 1000 / self.units

    def api_ms_per_request(self) -> float:
        return self.cost.api_cpu * 1000 / self.cost.requests if self.cost.requests else 0.0

    def api_ms_per_unit(self) -> float:
        return self.cost.api_cpu * 1000 / self.units

    def requests_per_unit(self) -> float:
        return self.cost.requests / self.units


HEADER = (
    "per unit", "units", "Redis cmds net/all (Lua)", "Redis CPU ms", "net KB", "keys peak / kept B", "S3 req",
    "API req", "API ms", "worker ms", "ms/call",
)  # fmt: skip


def measured_rows(results: dict[str, Measured]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [HEADER]
    for m in results.values():
        rows.append(
            (
                m.name,
                str(m.units),
                f"{m.commands_per_unit():.0f}/{m.cost.total_commands / m.units:.0f} ({m.lua_per_unit():.0f})",
                f"{m.redis_ms_per_unit():.2f}",
                f"{m.net_kb_per_unit():.1f}",
                f"{m.peak_per_unit():,.0f} / {m.retained_per_unit():,.0f}",
                f"{m.s3_per_unit():.1f}",
                f"{m.requests_per_unit():.1f}",
                f"{m.api_ms_per_unit():.1f}",
                f"{m.worker_ms_per_unit():.1f}",
                f"{m.worker_ms_per_call():.1f}" if m.calls else "-",
            )
        )
    return rows


def print_rows(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for number, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths))


def family_rows(m: Measured, *, top: int = 10) -> list[tuple[str, str, str, str]]:
    """The key families with the most bytes, at the peak and after the work, per unit."""
    rows = [(f"key family ({m.name})", "keys/unit", "peak B/unit", "kept B/unit")]
    names = set(m.cost.families_peak) | set(m.cost.families_after)
    biggest = sorted(
        names, key=lambda n: -max(m.cost.families_peak.get(n, (0, 0))[1], m.cost.families_after.get(n, (0, 0))[1])
    )
    for name in biggest[:top]:
        peak_keys, peak_bytes = m.cost.families_peak.get(name, (0, 0))
        kept_keys, kept_bytes = m.cost.families_after.get(name, (0, 0))
        keys_per = max(peak_keys, kept_keys) / m.units
        rows.append((name, f"{keys_per:.2f}", f"{peak_bytes / m.units:,.0f}", f"{kept_bytes / m.units:,.0f}"))
    return rows


# --- projection ----------------------------------------------------------------------------------
def jobs_need(job: Measured) -> dict[str, Any]:
    """10,000 jobs in flight at once, each taking a map wave and a reduce (Little's law for the rates)."""
    calls_per_job = job.calls / job.units
    duration = 2 * MODEL_LATENCY_S + JOB_OVERHEAD_S
    rate = CONCURRENT_JOBS / duration
    calls_per_s = rate * calls_per_job
    worker_cores = calls_per_s * job.worker_ms_per_call() / 1000
    threads = calls_per_s * MODEL_LATENCY_S
    redis_cores = rate * job.redis_ms_per_unit() / 1000
    memory = CONCURRENT_JOBS * job.peak_per_unit() + rate * JOB_TTL_S * job.retained_per_unit()
    return {
        "job duration s": duration,
        "jobs/s": rate,
        "model calls/s": calls_per_s,
        "model calls in flight (threads)": threads,
        "worker CPU cores": worker_cores,
        "worker processes": workers(threads, worker_cores),
        "API cores": rate * job.api_ms_per_unit() / 1000,
        "Redis commands/s": rate * job.commands_per_unit(),
        "Redis CPU cores": redis_cores,
        "Redis memory GB": memory / 1e9,
        "S3 requests/s": rate * job.s3_per_unit(),
        "concurrent jobs one primary carries": one_primary(job, duration),
    }


def workers(threads: float, cores: float) -> int:
    """Worker processes: enough threads for every model call in flight, and enough cores for their CPU."""
    return max(1, math.ceil(threads / THREADS_PER_WORKER), math.ceil(cores / WORKER_CORE_BUDGET))


def one_primary(job: Measured, duration: float) -> int:
    """Concurrent jobs one Redis primary holds within its CPU and memory budgets: the ceiling while the
    keyspace cannot be spread over a cluster (the cluster-ready keyspace, not built yet: docs/scaling.md)."""
    by_cpu = REDIS_CORE_BUDGET / (job.redis_ms_per_unit() / 1000) * duration
    by_memory = REDIS_MEMORY_BUDGET / (job.peak_per_unit() + JOB_TTL_S / duration * job.retained_per_unit())
    return int(min(by_cpu, by_memory))


def sessions_need(filled: Measured, deleted: Measured, job: Measured) -> dict[str, Any]:
    """1 M sessions a day at PEAK_FACTOR x the average rate, each with JOBS_PER_SESSION jobs."""
    rate = SESSIONS_PER_DAY / 86_400 * PEAK_FACTOR
    jobs = rate * JOBS_PER_SESSION

    def per(attr: str) -> float:
        return getattr(filled, attr)() + getattr(deleted, attr)()

    live = SESSIONS_PER_DAY / 86_400 * PEAK_FACTOR * SESSION_ALIVE_S
    threads = jobs * job.calls / job.units * MODEL_LATENCY_S
    cores = jobs * job.worker_ms_per_unit() / 1000
    return {
        "sessions/s (peak)": rate,
        "jobs/s": jobs,
        "API requests/s": rate * per("requests_per_unit") + jobs * job.requests_per_unit(),
        "API cores": (rate * per("api_ms_per_unit") + jobs * job.api_ms_per_unit()) / 1000,
        "model calls in flight (threads)": threads,
        "worker CPU cores": cores,
        "worker processes": workers(threads, cores),
        "Redis commands/s": rate * per("commands_per_unit") + jobs * job.commands_per_unit(),
        "Redis CPU cores": (rate * per("redis_ms_per_unit") + jobs * job.redis_ms_per_unit()) / 1000,
        "sessions alive": live,
        "Redis memory GB": (live * filled.retained_per_unit() + jobs * JOB_TTL_S * job.retained_per_unit()) / 1e9,
        "S3 requests/s": rate * per("s3_per_unit") + jobs * job.s3_per_unit(),
    }


def needs(load: dict[str, Any]) -> dict[str, int]:
    """Machines from the rates: Redis primaries by CPU and by memory, API replicas by CPU."""
    return {
        "Redis primaries": max(
            1,
            math.ceil(load["Redis CPU cores"] / REDIS_CORE_BUDGET),
            math.ceil(load["Redis memory GB"] * 1e9 / REDIS_MEMORY_BUDGET),
        ),
        "API replicas (1 core each)": max(1, math.ceil(load["API cores"] / API_CORE_BUDGET)),
    }


def print_model(results: dict[str, Measured], args: Any) -> None:
    print("\nMeasured, per unit (a job, a session, an upload); CPU is process time, not wall time")
    print_rows(measured_rows(results))
    for name in ("full", "session_fill"):
        print()
        print_table(family_rows(results[name]))
    job = results["full"]
    top = sorted(job.cost.commands.items(), key=lambda item: -item[1])[:12]
    print(f"\nRedis commands per job ({job.name}), the most frequent (inside Lua included):")
    print("  " + ", ".join(f"{name} {calls / job.units:.1f}" for name, calls in top))
    print("\nS3 requests per unit by kind:")
    for m in results.values():
        print(f"  {m.name}: {m.s3_kinds()}")
    print(
        f"\nProjection. Assumptions: {job.calls / job.units:.0f} model calls per job ({args.chunks} chunks + reduce), "
        f"model latency {MODEL_LATENCY_S:.0f} s, job = map wave + reduce + {JOB_OVERHEAD_S:.0f} s; "
        f"{THREADS_PER_WORKER} threads per worker; peak {PEAK_FACTOR:.0f}x the day's average; "
        f"session alive {SESSION_ALIVE_S} s, job record kept {JOB_TTL_S} s; Redis at {REDIS_CORE_BUDGET} core "
        f"and {REDIS_MEMORY_BUDGET >> 30} GB per primary; API at {API_CORE_BUDGET} core per replica."
    )
    for title, load in (
        (f"{CONCURRENT_JOBS:,} concurrent jobs", jobs_need(job)),
        (
            f"{SESSIONS_PER_DAY:,} sessions a day",
            sessions_need(results["session_fill"], results["session_delete"], job),
        ),
    ):
        print(f"\n{title}:")
        for key, value in {**load, **needs(load)}.items():
            print(f"  {key:<38} {value:,.1f}" if isinstance(value, float) else f"  {key:<38} {value:,}")
