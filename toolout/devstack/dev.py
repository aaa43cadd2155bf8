"""`toolout dev`: a development service in the foreground, from one command, on embedded defaults.

The README's quickstarts run against it from another shell with only the `export` lines it prints. It is put
together from what the demo, the tests and the benchmarks already start the system with — `toolout.devstack.stack`
holds the processes, `toolout.devstack.processes` starts each, `toolout.local.serve` is the in-process API — so a
developer's service is the tested one, not a launcher of its own:

* Redis if one answers (`--redis URL`, else 127.0.0.1:6379): the API and `--workers` Celery workers as
  processes; with none, the API on in-memory stores with jobs on a thread pool, in this process;
* blobs in a directory of this run, or SeaweedFS's S3 gateway (`--s3`);
* the offline model (no LLM inside) unless `--model` or `TOOLOUT_MODEL` names a real one;
* an API key made for this run (only its hash is given to the API), printed once.

Ctrl-C (or SIGTERM) stops every process it started; their files go with the run's directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.settings import OFFLINE_MODEL
from toolout.devstack import processes, seaweedfs
from toolout.devstack.stack import Stack, launch

DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
DEV_TENANT = "dev"
DEV_BUCKET = "toolout-dev"


class DevError(RuntimeError):
    """A part of the development service cannot start or stopped: one line for the developer, no traceback."""


@dataclass(frozen=True)
class DevOptions:
    """What `toolout dev` runs: None picks the embedded default (see the module's docstring)."""

    port: int = 8000
    redis_url: str | None = None
    s3: bool = False
    workers: int = 1
    model: str | None = None


@dataclass
class Plan:
    """The settings every part shares, the processes to start, and what to tell the developer."""

    settings: dict[str, Any]
    services: list[processes.Service] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    exports: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The settings as the `TOOLOUT_*` environment of a child process (dicts as JSON)."""
        return {f"TOOLOUT_{name.upper()}": _env_value(value) for name, value in self.settings.items()}


def _env_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


@dataclass
class DevService:
    """A running development service: where it answers, its key, and what stops it."""

    api_url: str
    api_key: str
    plan: Plan
    stack: Stack
    closing: contextlib.ExitStack
    started_in: float = 0.0

    def check(self) -> None:
        """Raise DevError when one of the processes has exited (with its last log lines)."""
        for service in self.stack.services:
            if service.process is not None and service.process.poll() is not None:
                raise DevError(f"{service.name} exited; last log lines:\n{service.tail()}")

    def stop(self) -> None:
        self.closing.close()


def plan(options: DevOptions, root: Path, api_key: str) -> Plan:
    """Auth, model and blob store for this run: the settings and the processes, nothing started yet."""
    from infra.stores.apikeys.base import hash_key

    built = Plan({"auth_mode": "keys", "api_keys": {hash_key(api_key): DEV_TENANT}})
    _add_model(built, options, root / "logs")
    _add_blobs(built, options, root)
    return built


def _add_model(built: Plan, options: DevOptions, logs: Path) -> None:
    """A real model when one is named; else the offline model, which the quickstarts' own model calls reach too."""
    named = options.model or os.environ.get("TOOLOUT_MODEL")
    if named and named != OFFLINE_MODEL:
        built.settings["model"] = named
        built.parts.append(_real_model_line(named))
        return
    port = processes.free_port()
    base = f"http://127.0.0.1:{port}/v1"
    built.services.append(processes.offline_model(port, {}, logs))
    built.settings.update(model=OFFLINE_MODEL, model_api_base=base, model_api_key="offline")
    built.parts.append(f"model: the offline model at {base} (deterministic, no LLM inside; --model for a real one)")
    built.exports.update(OPENAI_BASE_URL=base, OPENAI_API_KEY="offline")


def _real_model_line(model: str) -> str:
    """Where a named model's calls go (the settings' endpoint, else the provider's variables), or DevError when
    no key is set for it anywhere: every call would be refused, better said now than as a job's error."""
    from infra.llm.provider import destination
    from infra.settings import Settings

    going = destination(Settings(model=model), model)
    if going.missing_keys:
        raise DevError(f"{going.describe()}; nothing started")
    return f"model calls: {going.describe()}"


def _add_blobs(built: Plan, options: DevOptions, root: Path) -> None:
    if not options.s3:
        built.settings["blob_store"] = f"file://{root / 'blobs'}"
        built.parts.append(f"blobs: {root / 'blobs'}")
        return
    try:
        server = seaweedfs.server(root / "seaweedfs", root / "logs", buckets=(DEV_BUCKET,))
    except seaweedfs.SeaweedFSNotInstalled as exc:
        raise DevError(str(exc)) from None
    built.services.insert(0, server.service)  # first: the workers' readiness reads the bucket
    built.settings.update({k.removeprefix("TOOLOUT_").lower(): v for k, v in server.blob_env(DEV_BUCKET).items()})
    built.parts.append(f"blobs: SeaweedFS's S3 at {server.endpoint_url}, bucket {DEV_BUCKET}")


def redis_to_use(options: DevOptions) -> str | None:
    """The Redis to run on: the one named (which must answer), else 6379 when it answers, else None (in-process)."""
    if options.redis_url is not None:
        if not processes.redis_answers(options.redis_url):
            raise DevError(f"no Redis answers at {options.redis_url}")
        return options.redis_url
    return DEFAULT_REDIS if processes.redis_answers(DEFAULT_REDIS) else None


def start(options: DevOptions, root: Path) -> DevService:
    """Every part started and ready (or all of them stopped again and the error raised)."""
    from infra.stores.apikeys.base import new_key

    began, api_key = time.monotonic() - process_age(), new_key()
    built = plan(options, root, api_key)
    redis_url = redis_to_use(options)
    closing = contextlib.ExitStack()
    api_url = f"http://127.0.0.1:{options.port}"
    stack = Stack("dev", api_url, redis_url or "memory://", built.env(), root / "logs")
    closing.callback(stack.stop)
    try:
        if redis_url is None:
            _start_in_process(built, stack, closing, options.port)
        else:
            _start_processes(built, stack, redis_url, options)
    except BaseException:
        closing.close()
        raise
    built.exports = {"TOOLOUT_API_URL": api_url, "TOOLOUT_API_KEY": api_key, **built.exports}
    return DevService(api_url, api_key, built, stack, closing, time.monotonic() - began)


def process_age() -> float:
    """Seconds since this process started (Linux's /proc; 0 elsewhere): "ready in" counts the interpreter's start
    and the command's imports too, not only what came after them."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _start_processes(built: Plan, stack: Stack, redis_url: str, options: DevOptions) -> None:
    """The API and the workers as processes on `redis_url`, started with the model and S3 at once."""
    built.settings["redis_url"] = redis_url
    stack.env = built.env()
    api = processes.api(options.port, stack.env, stack.log_dir)
    names = [f"dev-worker-{n + 1}" for n in range(options.workers)]
    workers = [processes.worker(name, stack.env, stack.log_dir) for name in names]
    for worker in workers:
        worker.ready = processes.http_ok(f"{stack.api_url}/readyz")  # the API sees a worker: jobs can run
    built.parts.insert(0, f"state: Redis at {redis_url}; {options.workers} Celery worker(s), each a process")
    launch(stack, [*built.services, api, *workers], timeout=90)


def _start_in_process(built: Plan, stack: Stack, closing: contextlib.ExitStack, port: int) -> None:
    """No Redis: the model and S3 as processes, the API in this process on in-memory stores and a thread pool."""
    from extraction.tokenizer_files import ensure_offline_encodings
    from toolout.local import serve

    ensure_offline_encodings()
    launch(stack, built.services, timeout=90)
    closing.enter_context(serve(port=port, **built.settings))
    built.parts.insert(0, "state: in this process (no Redis answers on 127.0.0.1:6379; --redis URL to name one)")


def banner(dev: DevService) -> str:
    """What the developer reads: where it answers, the key, the lines to export, the docs, how to stop."""
    url = dev.api_url
    lines = [f"toolout dev: ready in {dev.started_in:.1f} s at {url}", *(f"  {part}" for part in dev.plan.parts)]
    lines += [f"  API key (made for this run, tenant {DEV_TENANT!r}): {dev.api_key}", ""]
    lines += ["In another shell:", *(f"export {name}={value}" for name, value in dev.plan.exports.items())]
    if "OPENAI_BASE_URL" in dev.plan.exports:
        lines.append("(the OPENAI_* lines point your agent's own model calls at the offline model too)")
    lines += [
        "",
        f"Console: {url}/console/ (paste the key above)",
        f"API docs: {url}/docs   OpenAPI: {url}/openapi.json   Ctrl-C stops everything.",
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def run_directory() -> Iterator[Path]:
    """A directory of this run (blobs, logs, SeaweedFS's data), removed when the service stops."""
    root = Path(tempfile.mkdtemp(prefix="toolout-dev-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(options: DevOptions, say: Callable[[str], None], poll_seconds: float = 0.5) -> None:
    """Start, print the banner, wait for Ctrl-C or SIGTERM, stop everything; DevError if a part fails.

    Both handlers are set here: a process started with SIGINT ignored (from a pytest-xdist worker, or a shell's
    background job) inherits that, and Python then installs no KeyboardInterrupt of its own, so Ctrl-C did nothing.
    """
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with run_directory() as root:
            dev = start(options, root)
            try:
                say(banner(dev))
                while True:
                    dev.check()
                    time.sleep(poll_seconds)
            except KeyboardInterrupt:
                say("toolout dev: stopping")
            finally:
                dev.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
