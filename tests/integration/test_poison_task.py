"""The poison-task guard on real workers: a query step that kills its own worker is delivered at most
`max_task_deliveries` times (3: it runs twice, the third delivery fails its job naming the step) — on Redis
and on RabbitMQ.

The workers are `tests.fixtures.poison_worker` (the real worker, its query step replaced by one that
SIGKILLs the process), started one after another, each after the last one died. `acks_late` makes the broker
hand the dead worker's message out again: RabbitMQ as soon as the connection drops; Redis once the message has
been unacked for the visibility timeout (5 s here), when the next worker's first poll restores it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.redis import keys
from tests.fixtures.broker import broker_env, on_rabbitmq
from tests.fixtures.servers import unavailable
from toolout.devstack import processes
from toolout.devstack.stack import Stack, launch, offline_env, private_redis

pytestmark = pytest.mark.integration

VISIBILITY_SECONDS = 5
POISON_ENV = {
    "TOOLOUT_MODEL_TIMEOUT_SECONDS": "1",
    "TOOLOUT_TASK_SOFT_TIME_LIMIT_SECONDS": "3",
    "TOOLOUT_TASK_TIME_LIMIT_SECONDS": "4",
    "TOOLOUT_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_SECONDS),
    "TOOLOUT_JOB_DEADLINE_SECONDS": "600",  # the watchdog stays out of it: the broker's redeliveries are the test
    "TOOLOUT_QUERY_PRELOAD": "false",  # the only task on the agent queue is the job's query step
    "TOOLOUT_WORKER_CONCURRENCY": "2",
}
MAX_WORKERS = 6
"""More than the guard needs (3 that die, the 4th refuses the message): a guard that did not hold fails the test."""


@pytest.fixture(scope="module")
def poison_stack(tmp_path_factory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("poison-stack")
    redis_port, model_port, api_port = processes.free_port(), processes.free_port(), processes.free_port()
    redis_url, logs = f"redis://127.0.0.1:{redis_port}/0", root / "logs"
    env = {
        **offline_env(root, redis_url, f"http://127.0.0.1:{model_port}/v1"),
        **POISON_ENV,
        **broker_env("poison"),
        "POISON_RUNS_FILE": str(root / "runs.txt"),
    }
    stack = Stack("poison", f"http://127.0.0.1:{api_port}", redis_url, env, logs)
    try:
        stack.redis_process = private_redis(redis_port, root)
        launch(stack, [processes.quiet_offline_model(model_port, {}, logs), processes.api(api_port, env, logs)])
    except RuntimeError as exc:
        unavailable(f"the poison stack did not start: {exc}")
    yield stack
    for service in stack.services:
        service.kill()
    stack.stop()


def poison_worker(stack: Stack, number: int) -> processes.Service:
    name = f"poison-worker-{number}"
    # One thread: on RabbitMQ the start step comes back too (its ack died with the worker); beside the killer in a
    # second thread it would die under it and be counted as well (docs/security.md), and the job could then fail
    # naming the start step instead. One at a time, the start step ends and the query step is the one named.
    argv = [processes.PYTHON, "-m", "tests.fixtures.poison_worker", "worker", "--concurrency", "1", "--name", name]
    return stack.add(processes.Service(name, argv, stack.env, stack.log_dir / f"{name}.log"))


def job_status(stack: Stack, job_id: str) -> str:
    with stack.client() as client:
        return str(client.job(job_id)["status"])


def run_workers_until_the_job_ends(stack: Stack, job_id: str) -> list[str]:
    """Start a poison worker; when it dies, another (on Redis once the visibility timeout has passed), until the
    job ends: what became of each worker."""
    fates: list[str] = []
    for number in range(1, MAX_WORKERS + 1):
        worker = poison_worker(stack, number)
        assert worker.process is not None
        deadline = time.monotonic() + 120
        while worker.process.poll() is None and job_status(stack, job_id) in ("queued", "running"):
            assert time.monotonic() < deadline, f"worker {number} neither died nor ended the job:\n{worker.tail()}"
            time.sleep(0.2)
        if worker.process.poll() is None:
            fates.append("ended the job")
            return fates
        fates.append("died")
        if not on_rabbitmq():
            time.sleep(VISIBILITY_SECONDS + 1)  # unacked that long: the next worker's first poll restores it
    return fates


def routed_to_query(stack: Stack, job_id: str) -> list[str]:
    """The workers' log lines of the start step routing `job_id` to the query step: one per query message sent."""
    logs = sorted(stack.log_dir.glob("poison-worker-*.log"))
    return [line for log in logs for line in log.read_text().splitlines() if f"job {job_id} routed to query" in line]


def test_a_query_step_that_kills_its_worker_is_delivered_three_times_then_fails_the_job(poison_stack: Stack) -> None:
    rows = json.dumps([{"id": i, "status": "ok", "note": "x" * 40} for i in range(20_000)]).encode()
    started = time.monotonic()
    with poison_stack.client() as client:
        session = client.create_session()
        stored = client.store(session, rows, tool_name="orders.list", content_type="application/json")
        job_id = client.submit(stored["handle"], "how many orders", "query")["id"]
        fates = run_workers_until_the_job_ends(poison_stack, job_id)
        job = client.wait(job_id, timeout=30)
    runs = [line.split() for line in Path(poison_stack.env["POISON_RUNS_FILE"]).read_text().splitlines()]
    deliveries = poison_stack.redis().hgetall(keys.job_deliveries(job_id))
    routes = routed_to_query(poison_stack, job_id)
    broker = "rabbitmq" if on_rabbitmq() else "redis"
    print(
        f"\npoison task on {broker}: {len(runs)} runs, deliveries {deliveries}, workers {fates}, "
        f"start step routed {len(routes)} time(s), {time.monotonic() - started:.1f}s"
    )
    # Each task message is delivered at most 3 times: its first redelivery may run (its count is 1), the second is
    # refused (its count is 2). Each run of the start step sends a query message of its own, with its own count:
    # on RabbitMQ the start step comes back when its ack died with the worker; on either broker it runs again if
    # it outlived the visibility timeout or met an outage (a Celery retry). Each such message may kill one more
    # worker before the first one's third delivery ends the job.
    counts = sorted(int(count) for count in deliveries.values())
    ran = Counter(task_id for _pid, _job, task_id in runs)
    refused = [delivery.split(":")[0] for delivery, count in deliveries.items() if count == "2"]
    assert len(refused) == 1 and counts[-1] == 2, deliveries  # exactly one message reached its limit, none past it
    assert ran[refused[0]] == 2 and max(ran.values()) == 2, (runs, deliveries)  # it ran twice; none more often
    assert 1 <= len(ran) <= len(routes), (routes, runs)  # every query message that ran was sent by a start step
    assert fates[-1] == "ended the job" and set(fates[:-1]) == {"died"}, fates
    assert {job for _pid, job, _task_id in runs} == {job_id}
    if len(routes) == 1:  # one query message (the usual case): exactly two runs, then refused
        assert len(runs) == 2 and counts == [2], (runs, deliveries)
    assert job["status"] == "failed", job
    assert job["error"] == (
        "the query step was started 2 times and each time its worker died before it ended; not retried"
    )
