"""The service benches' stacks: the shared `toolout.devstack.stack.Stack`, started the way these benches need it.

Every part starts its own stack (offline model, API and Celery worker as separate processes, the
Redis database of --redis-url flushed first, a local blob store under var/bench) and stops it when done,
so one part's leftovers never weigh on the next. Tests start the same class (`tests/fixtures/stack.py`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from bench import BENCH_ROOT, REPO_ROOT
from toolout.devstack import processes
from toolout.devstack.stack import Stack, answering_worker, launch, offline_env

SMALL_WINDOW = {"TOOLOUT_MODEL_CONTEXT_TOKENS": "4096", "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "96"}
"""A small model window: 16 or 32 chunks from a few hundred KB, so the bench measures orchestration, not bulk.
The reduce is planned from the answers' real sizes: the offline model's ~200-byte answers (~60 tokens with
their labels) put 32 in one final reduce and 128 in a level of 3 group reduces and a final one."""
SHORT_ANSWERS = {"TOOLOUT_OFFLINE_ANSWER_BYTES": "200"}
"""Map answers this short keep 32 outputs inside one reduce call (no regrouping level)."""
QUEUES = "extract,map,reduce,agent,webhooks"
CLIENT_TIMEOUT = 300.0
"""A bench's client waits out the biggest job it times (a 128-chunk job at 500 ms per call)."""


def stack_env(redis_url: str, model_port: int, extra: dict[str, str]) -> dict[str, str]:
    """What every process of a stack sees; PYTHONPATH lets a worker import `bench.service.celery_noop`."""
    return {
        **offline_env(BENCH_ROOT, redis_url, f"http://127.0.0.1:{model_port}/v1"),
        "PYTHONPATH": str(REPO_ROOT),
        **extra,
    }


def worker_service(
    name: str, env: dict[str, str], logs: Path, *, concurrency: int, app: str | None = None
) -> processes.Service:
    """`toolout worker` itself; with `app`, a worker on that Celery module with exactly its flags
    (P1 needs `bench.service.celery_noop`, and `toolout worker` cannot load extra task modules)."""
    if app is None:
        return answering_worker(name, env, logs, concurrency=concurrency)
    service = processes.Service(name, celery_worker_argv(app, name, concurrency), env, logs / f"{name}.log")
    service.ready = processes.workers_answering([name], env)
    return service


def celery_worker_argv(app: str, name: str, concurrency: int) -> list[str]:
    """The flags `toolout worker` gives Celery, on another app module."""
    return [
        *(processes.PYTHON, "-m", "celery", "-A", app, "worker", "--pool", "threads"),
        *("--concurrency", str(concurrency), "--queues", QUEUES, "--hostname", f"{name}@%h"),
        *("--loglevel", "info", "--without-gossip", "--without-mingle"),
    ]


def start_worker(stack: Stack, name: str, *, concurrency: int) -> processes.Service:
    service = stack.add(worker_service(name, stack.env, stack.log_dir, concurrency=concurrency))
    service.wait_ready(120)
    return service


def worker_names(stack: Stack) -> list[str]:
    """The stack's workers, whatever they were named when started (P2 replaces them one concurrency at a time)."""
    return [s.name for s in stack.services if s.name not in ("api", "offline-model")]


@contextmanager
def running_stack(
    redis_url: str,
    *,
    model: dict[str, str] | None,
    worker: dict[str, Any] | None,
    extra: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """Start model, API and worker together (each waits only for itself), stop them all on exit.

    `model` is None (no model) or the offline model's env; `worker` is None (API only) or keyword
    arguments of `worker_service` (concurrency, app).
    """
    redis.Redis.from_url(redis_url).flushdb()
    shutil.rmtree(BENCH_ROOT / "blobs", ignore_errors=True)
    model_port, api_port = processes.free_port(), processes.free_port()
    env, logs = stack_env(redis_url, model_port, extra or {}), BENCH_ROOT / "logs"
    stack = Stack("bench", f"http://127.0.0.1:{api_port}", redis_url, env, logs, client_timeout=CLIENT_TIMEOUT)
    services = [processes.api(api_port, env, logs)]
    if model is not None:
        services.insert(0, processes.quiet_offline_model(model_port, {**env, **model}, logs))
    if worker is not None:
        services.append(worker_service("bench-worker", env, logs, **worker))
    try:
        yield launch(stack, services)
    finally:
        stack.stop()
        redis.Redis.from_url(redis_url).flushdb()
        shutil.rmtree(BENCH_ROOT / "blobs", ignore_errors=True)


def proc_status_kb(pid: int, name: str) -> int:
    """One field of /proc/<pid>/status in kB (VmRSS, VmHWM): what a bench reads a process's memory from."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {name}")
