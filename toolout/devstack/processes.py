"""Start, watch and stop toolout's own processes (offline model, API, workers).

Shared by the demo, the integration tests and the benchmarks, so all three run the system the
same way an operator does: as separate processes talking over HTTP and Redis.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import redis

if TYPE_CHECKING:
    from infra.settings import Settings

PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(check: Callable[[], bool]) -> bool:
    """One try of a readiness check; an exception means "not up yet"."""
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - not up yet
        return False


def wait_for(check: Callable[[], bool], *, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe(check):
            return True
        time.sleep(interval)
    return False


def http_ok(url: str) -> Callable[[], bool]:
    """A probe of `url`; a plain-HTTP one builds no TLS context (loading certifi's CA file costs CPU on every try, which
    a launcher polling every 0.2 s spent while the processes it waits for needed the cores)."""
    verify = url.startswith("https://")
    return lambda: httpx.get(url, timeout=5.0, verify=verify).status_code == 200


@dataclass
class Service:
    """One child process; its output goes to a log file so a failure can be shown, not guessed."""

    name: str
    argv: list[str]
    env: Mapping[str, str]
    log_path: Path
    ready: Callable[[], bool] | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Service:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.argv, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the ready probe passes; a process that exits meanwhile fails at once, with its log."""
        deadline = time.monotonic() + timeout
        while self._alive() and not (self.ready is None or probe(self.ready)):
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"{self.name} did not become ready in {timeout:.0f}s; last log lines:\n{self.tail()}"
                )
            time.sleep(0.2)

    def _alive(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited early; last log lines:\n{self.tail()}")
        return True

    def tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a Celery worker has children)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 15.0) -> None:
        stop_all([self], timeout)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_or_kill(self, deadline: float) -> None:
        """Wait for the exit until `deadline` (monotonic), then SIGKILL the group."""
        assert self.process is not None
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.process.wait(5)


def stop_all(services: Sequence[Service], timeout: float = 15.0) -> None:
    """SIGTERM every service at once, then one shared deadline before SIGKILL. One after another, Ctrl-C waited
    for each in turn: a worker finishing its tasks, then the API draining, then the model, each up to `timeout`."""
    running = [service for service in services if service.running()]
    for service in running:
        service.kill(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for service in running:
        service.wait_or_kill(deadline)


def toolout_argv(*args: str) -> list[str]:
    return [PYTHON, "-m", "toolout.cli", *args]


def offline_model(port: int, env: Mapping[str, str], log_dir: Path) -> Service:
    return Service(
        "offline-model",
        toolout_argv("offline-model", "--port", str(port)),
        env,
        log_dir / "offline-model.log",
        ready=http_ok(f"http://127.0.0.1:{port}/healthz"),
    )


def quiet_offline_model(port: int, env: Mapping[str, str], log_dir: Path) -> Service:
    """The offline model at log level WARNING, for benchmarks: with no latency, formatting an access line and an
    INFO line per request is a good part of what it costs to serve, and that cost is the test double's."""
    code = f"from offline_model.server import serve; serve('127.0.0.1', {port}, log_level='warning')"
    return Service(
        "offline-model",
        [PYTHON, "-c", code],
        env,
        log_dir / "offline-model.log",
        ready=http_ok(f"http://127.0.0.1:{port}/healthz"),
    )


def api(port: int, env: Mapping[str, str], log_dir: Path) -> Service:
    return Service(
        "api",
        toolout_argv("api", "--port", str(port)),
        env,
        log_dir / "api.log",
        ready=http_ok(f"http://127.0.0.1:{port}/healthz"),
    )


def worker(name: str, env: Mapping[str, str], log_dir: Path, *, concurrency: int = 8) -> Service:
    argv = toolout_argv("worker", "--concurrency", str(concurrency), "--name", name)
    return Service(name, argv, env, log_dir / f"{name}.log")


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """The settings a child started with `env` sees (its `TOOLOUT_*` entries over this process's environment)."""
    from infra.settings import Settings

    fields: dict[str, Any] = {k.removeprefix("TOOLOUT_").lower(): v for k, v in env.items() if k.startswith("TOOLOUT_")}
    return Settings(**fields)


def workers_answering(names: list[str], env: Mapping[str, str]) -> Callable[[], bool]:
    """Ready when every named worker answers a Celery ping on the broker the workers were started with."""
    from workers.celery.app import create_celery

    celery = create_celery(settings_from_env(env))

    def check() -> bool:
        replies = celery.control.ping(timeout=0.5) or []
        seen = {name.split("@")[0] for reply in replies for name in reply}
        return all(n in seen for n in names)

    return check


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def ensure_redis(url: str) -> None:
    """Start a local redis-server when none answers (the README's commands promise this)."""
    if redis_answers(url):
        return
    if not shutil.which("redis-server"):
        raise RuntimeError(f"no Redis answers at {url} and redis-server is not installed")
    port = redis.Redis.from_url(url).connection_pool.connection_kwargs.get("port", 6379)
    subprocess.run(
        [
            "redis-server",
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        check=True,
    )
    if not wait_for(lambda: redis_answers(url), timeout=10):
        raise RuntimeError(f"started redis-server on port {port}, but {url} does not answer")


@contextmanager
def running(*services: Service, timeout: float = 90.0) -> Iterator[list[Service]]:
    """Start services in order (each ready before the next), stop them all in reverse on exit."""
    started: list[Service] = []
    try:
        for service in services:
            started.append(service.start())
            service.wait_ready(timeout)
        yield started
    finally:
        stop_all(started[::-1])
