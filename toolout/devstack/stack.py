"""One running system — offline model(s), API, Celery workers, Redis, a blob store — as a value.

The integration tests and the benchmarks both start the system this way (`toolout.devstack.processes` starts
each process; this module holds them together), so a test and a bench of the same behaviour run the
same stack: one class, one environment, one way to start and stop it. It lives beside `processes`,
not in `tests/` or `bench/`, so neither of those imports the other. Like `processes`, it needs only
`redis` and `httpx` at import time; server packages are imported where they are used.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import redis

from toolout.client import ToolOutClient
from toolout.devstack import processes

if TYPE_CHECKING:
    from infra.blobstore import BlobStore
    from infra.settings import Settings


@dataclass
class Stack:
    """The processes of one system and how to reach them; `services` in start order, stopped in reverse."""

    name: str
    api_url: str
    redis_url: str
    env: dict[str, str]
    log_dir: Path
    services: list[processes.Service] = field(default_factory=list)
    model_urls: dict[str, str] = field(default_factory=dict)
    """Root URL (no /v1) of each offline model of a stack that runs several, by litellm model name."""
    redis_process: subprocess.Popen[bytes] | None = None
    """A private redis-server the stack started and stops (None when it uses a shared one)."""
    client_timeout: float = 120.0

    def client(self) -> ToolOutClient:
        return ToolOutClient(self.api_url, timeout=self.client_timeout)

    @property
    def broker_url(self) -> str:
        """Where the stack's Celery messages go: its RabbitMQ vhost, or its Redis."""
        return self.env.get("TOOLOUT_BROKER_URL", self.redis_url)

    @property
    def model_url(self) -> str:
        """The OpenAI-style base URL (…/v1) the stack's processes call the model at."""
        return self.env["TOOLOUT_MODEL_API_BASE"]

    def settings(self) -> Settings:
        """The settings the stack's processes run with (read from the env they were given)."""
        return processes.settings_from_env(self.env)

    def blobs(self) -> BlobStore:
        from infra.blobstore import open_blob_store_from_settings

        return open_blob_store_from_settings(self.settings())

    def redis(self) -> redis.Redis:
        """A client on the stack's Redis that answers str, with a timeout a hung server cannot outlast."""
        return redis.Redis.from_url(self.redis_url, decode_responses=True, socket_timeout=10)

    def service(self, name: str) -> processes.Service:
        return next(service for service in self.services if service.name == name)

    def pid(self, name: str) -> int:
        return _pid(self.service(name))

    def pids(self, name_prefix: str) -> list[int]:
        """The pids of the running services whose name starts with `name_prefix` (every worker: "…-worker")."""
        return [_pid(s) for s in self.services if s.name.startswith(name_prefix) and s.process is not None]

    def logs(self) -> list[Path]:
        return [service.log_path for service in self.services]

    def start_worker(self, name: str, **kwargs: Any) -> processes.Service:
        """`toolout worker` named `name` on the stack's env (kwargs: `processes.worker`'s), started, not waited for."""
        return self.add(processes.worker(name, self.env, self.log_dir, **kwargs))

    def add(self, service: processes.Service) -> processes.Service:
        """Start `service` as part of the stack (so `stop` stops it), not waiting for it."""
        self.services.append(service.start())
        return service

    def stop_worker(self, name: str) -> None:
        service = self.service(name)
        self.services.remove(service)
        service.stop()

    def model_stats(self, model: str) -> dict[str, Any]:
        """What the offline model serving `model` counted (requests admitted, refused, …)."""
        stats: dict[str, Any] = httpx.get(f"{self.model_urls[model]}/stats", timeout=5).json()
        return stats

    def reset_model_stats(self) -> None:
        for url in self.model_urls.values():
            httpx.delete(f"{url}/stats", timeout=5)

    def stop(self) -> None:
        processes.stop_all(self.services[::-1])
        if self.redis_process is not None and self.redis_process.poll() is None:
            self.redis_process.terminate()
            self.redis_process.wait(15)


def _pid(service: processes.Service) -> int:
    if service.process is None:
        raise RuntimeError(f"{service.name} was never started")
    return service.process.pid


def offline_env(root: Path, redis_url: str, model_url: str) -> dict[str, str]:
    """What every process of a stack on the offline model sees: its Redis, the model, blobs under `root`.

    Dev auth: the processes are local children that exit with the test or bench, with no key to provision."""
    return {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TOOLOUT_REDIS_URL": redis_url,
        "TOOLOUT_AUTH_MODE": "dev",
        "TOOLOUT_MODEL": "openai/toolout-offline",
        "TOOLOUT_MODEL_API_BASE": model_url,
        "TOOLOUT_MODEL_API_KEY": "offline",
        "TOOLOUT_BLOB_STORE": f"file://{root / 'blobs'}",
    }


def launch(stack: Stack, services: Iterable[processes.Service], *, timeout: float = 120.0) -> Stack:
    """Start every service at once (a worker's imports take seconds), then wait for each in turn.

    On any failure the whole stack is stopped before the error goes up: no process outlives a failed start."""
    try:
        started = [stack.add(service) for service in services]
        for service in started:
            service.wait_ready(timeout)
    except BaseException:
        stack.stop()
        raise
    return stack


def answering_worker(name: str, env: dict[str, str], log_dir: Path, **kwargs: Any) -> processes.Service:
    """`toolout worker`, ready when it answers a Celery ping (not merely when its process runs)."""
    service = processes.worker(name, env, log_dir, **kwargs)
    service.ready = processes.workers_answering([name], env)
    return service


def private_redis(port: int, root: Path) -> subprocess.Popen[bytes]:
    """A redis-server of the stack's own (no persistence, its files under `root`), answering before this returns."""
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    server = subprocess.Popen([*argv, "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    if not processes.wait_for(lambda: processes.redis_answers(f"redis://127.0.0.1:{port}/0"), timeout=10):
        server.terminate()
        raise RuntimeError(f"redis-server on port {port} did not answer")
    return server


SMALL_WINDOW_ENV = {
    "TOOLOUT_AUTH_MODE": "dev",
    "TOOLOUT_MAX_CONCURRENT_JOBS_PER_TENANT": "200",
    "TOOLOUT_MODEL_CONTEXT_TOKENS": "4096",
    "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "256",
    "TOOLOUT_WATCHDOG_INTERVAL_SECONDS": "5",
    "TOOLOUT_WORKER_CONCURRENCY": "8",
}
"""A small model window: a few tens of KB make a multi-chunk job, so jobs are in flight for a while
without a long run (the soak, the capacity bench) being about bulk bytes."""


def start_private(
    root: Path,
    *,
    workers: int = 2,
    model_latency_ms: int = 50,
    extra: dict[str, str] | None = None,
    api_extra: dict[str, str] | None = None,
) -> Stack:
    """A private redis-server, the quiet offline model, the API and `workers` workers, each a process of its own.

    Private, so a long run's keys and memory are its own to judge; workers are named `soak-worker-N`. `extra` goes
    to the API and the workers, `api_extra` to the API alone (a diagnostic that would slow the workers for nothing)."""
    redis_port, model_port, api_port = processes.free_port(), processes.free_port(), processes.free_port()
    redis_url, logs = f"redis://127.0.0.1:{redis_port}/0", root / "logs"
    env = {**offline_env(root, redis_url, f"http://127.0.0.1:{model_port}/v1"), **SMALL_WINDOW_ENV, **(extra or {})}
    stack = Stack("private", f"http://127.0.0.1:{api_port}", redis_url, env, logs)
    stack.redis_process = private_redis(redis_port, root)
    model_env = {"TOOLOUT_OFFLINE_LATENCY_MS": str(model_latency_ms)}
    names = [f"soak-worker-{i + 1}" for i in range(workers)]
    api = processes.api(api_port, {**env, **(api_extra or {})}, logs)
    services = [processes.quiet_offline_model(model_port, model_env, logs), api]
    return launch(stack, [*services, *(answering_worker(name, env, logs) for name in names)])
