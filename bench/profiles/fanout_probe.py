"""toolout's own Celery app with timestamps: the worker side of `bench/profiles/fanout.py`.

    FANOUT_PROBE_LOG=/path/events.jsonl [FANOUT_PROBE_REDIS=1] \
        python -m celery -A bench.profiles.fanout_probe worker ...

The worker serves `workers.celery.tasks` unchanged; this module only observes, inside its own process:
one JSON line per event (wall time `t`, thread `th`) appended to $FANOUT_PROBE_LOG —

  prerun / postrun    every task (name, job id, its second argument: chunk index or reduce level)
  publish             every task this worker sends (name, job), before kombu sends it
  step                a timed step: `load` (in the start step and the full-chunked one), the start
                      step's parts (`workers.job.context`: chunk_budget_for, decide, plan_job_chunks),
                      `tasks.remember`, `tasks.send`,
                      and every model call (`llm`: the litellm client's `complete`)
  redis               with FANOUT_PROBE_REDIS=1: every Redis round trip made through redis-py (one
                      command, or one pipeline), its command and first key, and the task the thread
                      was running or had just run ("after": the ack and result-backend work that
                      follow postrun in the same pool thread); kombu's BRPOP loop bypasses
                      redis-py's execute_command and is not seen here (`redis-cli monitor` is)

Nothing here changes what a task does; the wrappers add a few microseconds per call.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import redis.client
from celery.signals import before_task_publish, task_postrun, task_prerun

import infra.llm.client
import workers.celery.tasks
import workers.job.context
import workers.job.pipeline
from infra.settings import get_settings
from workers.celery.main import build_worker

app, _ = build_worker(get_settings())  # an entry point for `celery -A`: building the app here is its job

__all__ = ["app"]

_out = open(os.environ.get("FANOUT_PROBE_LOG", os.devnull), "a", buffering=1)  # noqa: SIM115 - open for the process's life
_lock = threading.Lock()
_local = threading.local()


def emit(event: str, **fields: Any) -> None:
    line = json.dumps({"t": time.time(), "ev": event, "th": threading.get_ident(), **fields})
    with _lock:
        _out.write(line + "\n")


def _task_fields(task: Any, args: Any) -> dict[str, Any]:
    args = list(args or [])
    return {
        "task": task.name.rsplit(".", 1)[-1],
        "job": args[0] if args else None,
        "arg": args[1] if len(args) > 1 else None,
    }


@task_prerun.connect
def _prerun(task: Any = None, args: Any = None, **_: Any) -> None:
    _local.task, _local.phase = _task_fields(task, args), "task"
    emit("prerun", **_local.task)


@task_postrun.connect
def _postrun(task: Any = None, args: Any = None, **_: Any) -> None:
    emit("postrun", **_task_fields(task, args))
    _local.phase = "after"


@before_task_publish.connect  # celery's signals are untyped: bench/ may use untyped decorators
def _publish(sender: str | None = None, body: Any = None, **_: Any) -> None:
    args = body[0] if isinstance(body, (list, tuple)) and body else []
    emit("publish", task=(sender or "").rsplit(".", 1)[-1], job=args[0] if args else None)


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            emit("step", step=name, start=started, **getattr(_local, "task", {}))

    return wrapper


for _module, _names in (
    (workers.job.context, ("load", "chunk_budget_for", "decide", "plan_job_chunks")),
    (
        workers.job.pipeline,
        ("load", "level_outputs", "plan_reduce_groups", "job_llm", "reduce_chunk_outputs", "_finish_single"),
    ),
):
    for _name in _names:
        setattr(_module, _name, _timed(_name, getattr(_module, _name)))
for _name in ("remember", "dispatch"):
    _executor = workers.celery.tasks.CeleryExecutor
    setattr(_executor, _name, _timed(_name, getattr(_executor, _name)))
infra.llm.client.LiteLLMClient.complete = _timed("llm", infra.llm.client.LiteLLMClient.complete)  # type: ignore[method-assign]  # observe only


def _round_trip(kind: str, command: str, key: str) -> None:
    task = getattr(_local, "task", None) or {}
    emit("redis", kind=kind, cmd=command, key=key, phase=getattr(_local, "phase", "none"), **task)


def _trace_redis() -> None:
    """Count every redis-py round trip: a command sent on its own, or a whole pipeline."""
    command: Callable[..., Any] = redis.client.Redis.execute_command
    execute: Callable[..., Any] = redis.client.Pipeline.execute

    def counted_command(self: Any, *args: Any, **options: Any) -> Any:
        _round_trip("command", str(args[0]), str(args[1]) if len(args) > 1 else "")
        return command(self, *args, **options)

    def counted_pipeline(self: Any, *args: Any, **kwargs: Any) -> Any:
        queued = [c[0] for c in self.command_stack]
        names = ",".join(str(c[0]) for c in queued)
        _round_trip("pipeline", names, str(queued[0][1]) if queued and len(queued[0]) > 1 else "")
        return execute(self, *args, **kwargs)

    redis.client.Redis.execute_command = counted_command  # type: ignore[method-assign]  # observe only
    redis.client.Pipeline.execute = counted_pipeline  # type: ignore[method-assign]  # observe only


if os.environ.get("FANOUT_PROBE_REDIS") == "1":
    _trace_redis()
