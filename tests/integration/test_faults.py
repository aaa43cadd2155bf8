"""A job, once accepted, ends — succeeded, failed with a reason, or canceled — whatever dies underneath.

Each test breaks something real on the faults stack (`tests/fixtures/faults.py`: a private AOF
Redis, an offline model with fault knobs, the API and two Celery workers as processes, a 20 s job
deadline and a 1 s watchdog) and then checks every job it submitted reached a terminal state.
The numbers each test measured are printed (run with `-s` to see them).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import pytest

from infra.redis import keys
from tests.fixtures.broker import on_rabbitmq
from tests.fixtures.faults import DEADLINE_SECONDS, WATCHDOG_INTERVAL_SECONDS, FaultStack
from toolout.client import ToolOutAPIError, ToolOutClient, UnavailableError
from toolout.devstack import processes

pytestmark = pytest.mark.integration

FACT = "2026-11-01T11:11:11Z ERROR payments[9] settlement file rejected by bank: checksum mismatch in batch 4471"
REQUEST = "the settlement file rejected by the bank (checksum mismatch)"
TERMINAL = {"succeeded", "failed", "canceled"}


def log_document(lines: int = 1080) -> bytes:
    """~27k tokens of filler with one planted fact: six chunks at the stack's 8k context, counting the line numbers
    chunks are shown with (six from about 990 to 1180 lines)."""
    filler = [
        f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z INFO inventory[3] synced batch {i} of catalog"
        for i in range(lines)
    ]
    filler.insert(lines * 2 // 3, FACT)
    return ("\n".join(filler) + "\n").encode()


def stored_handle(client: ToolOutClient) -> str:
    session = client.create_session()
    return client.store(session, log_document(), tool_name="logs.fetch", tool_args='{"service": "payments"}')["handle"]


def submit_jobs(client: ToolOutClient, handle: str, count: int, mode: str = "full-chunked") -> list[str]:
    """Jobs that all run: the same requests recur across tests on one document, so the result cache is off."""
    return [client.submit(handle, f"{REQUEST} #{i}", mode, cache=False)["id"] for i in range(count)]


def poll_until(check: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


def jobs_of(client: ToolOutClient, ids: list[str]) -> dict[str, dict[str, Any]]:
    return {job_id: client.job(job_id) for job_id in ids}


def wait_terminal(
    client: ToolOutClient, ids: list[str], timeout: float, unavailable: list[float] | None = None
) -> dict[str, dict[str, Any]]:
    """Every job once all are terminal; fails listing the ones still live after `timeout`.

    With `unavailable`, a poll the API answers 503 (its Redis mid-failover) is tried again at the next interval, and
    the time of each such answer is appended there for the caller to bound; without it, a 503 fails the wait."""
    seen: dict[str, dict[str, Any]] = {}

    def all_done() -> bool:
        try:
            seen.update(jobs_of(client, [i for i in ids if seen.get(i, {}).get("status") not in TERMINAL]))
        except UnavailableError:
            if unavailable is None:
                raise
            unavailable.append(time.monotonic())
            return False
        return all(seen[i]["status"] in TERMINAL for i in ids)

    if not poll_until(all_done, timeout, interval=0.5):
        live = {
            i: (seen[i]["status"], seen[i]["attempts"], seen[i]["chunks_done"], seen[i]["chunks_total"])
            if i in seen
            else "never read"
            for i in ids
            if seen.get(i, {}).get("status") not in TERMINAL
        }
        pytest.fail(f"{len(live)} job(s) still live after {timeout:.0f}s: {live}")
    return seen


def chunk_progress(client: ToolOutClient, ids: list[str]) -> tuple[int, int]:
    jobs = jobs_of(client, ids).values()
    return sum(j["chunks_done"] for j in jobs), sum(j["chunks_total"] for j in jobs)


def model_events(stack: FaultStack, offset: int) -> Counter:
    """What the offline model did since `offset` in its log: answers served and faults injected, by kind."""
    text = stack.model_log_since(offset)
    events = Counter(f"injected {kind}" for kind in re.findall(r"injecting (\w+)", text))
    events["answers"] = len(re.findall(r" answer in \d+ ms", text))
    return events


def assert_error_shape(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"} and error["message"], error
    return error


# --- R1: a worker SIGKILLed mid-flight -----------------------------------------------------------
R1_RABBITMQ_DEADLINE_SECONDS = 90
"""R1's job deadline on RabbitMQ, where the broker, not the watchdog, recovers the killed worker's tasks: they
run elsewhere ~1 s after the kill, and a map killed while running its job's reduce stage runs it again when
redelivered (`JobFanIn.settle_level`). Every job then finishes on the work alone: 20 jobs x 7 model calls at
300 ms is 5 s for the 8 threads of the surviving worker, measured at 8-14 s from submission to the last job's end,
and up to ~25 s with both cores kept busy by other processes (the restarted worker's imports compete too). 90 s is
over three times the slowest measured, so only a job nobody works on (a lost task) reaches it, and the watchdog's
re-submission (`attempts` 2) then fails the test. The stack's own 20 s deadline is short so that Redis's R1 (and
the other fault tests) see the watchdog act within a test; under load it could be passed by a job that was only
slow, which is no broken promise on RabbitMQ."""


def r1_deadline(stack: FaultStack) -> contextlib.AbstractContextManager[None]:
    """R1's API: on RabbitMQ with the longer deadline above; on Redis the stack's, for the watchdog has work to do."""
    if on_rabbitmq():
        return stack.api_with(TOOLOUT_JOB_DEADLINE_SECONDS=str(R1_RABBITMQ_DEADLINE_SECONDS))
    return contextlib.nullcontext()


def redeliveries_after(stack: FaultStack, since: float) -> list[float]:
    """Seconds after `since` (wall clock) at which any worker ran a task the broker handed out again."""
    stamp = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/\S+\] redelivered ", re.M)
    found = []
    for log in stack.log_dir.glob("*worker*.log"):
        for match in stamp.finditer(log.read_text(errors="replace")):
            at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if at >= since - 1:
                found.append(at - since)
    return sorted(found)


def test_r1_a_worker_killed_mid_flight_loses_no_job_and_applies_no_chunk_twice(
    faults_stack: FaultStack, measurements: Callable[[str], None]
) -> None:
    """20 six-chunk jobs at 300 ms per model call; worker 2 is SIGKILLed (its whole process group) with a
    quarter of the chunks done, and started again. Every job must succeed with the planted fact.

    Why nothing is applied twice: a map output is stored by one Lua script that does HSETNX on the
    job's chunk hash and, only if that field was new, increments `chunks_done` and adds the call's
    usage — atomically, in Redis. A map task that runs twice (the watchdog's re-submission racing a
    late task, a redelivery) therefore changes nothing the second time, and a task that finds its
    output already stored skips the model call. The final reduce is stored the same way (group 0 one
    level up), so twin reduces count one call. Hence, per job: chunks_done == chunks_total == number
    of stored map outputs, and usage.calls == stored map outputs + the stored final reduce — even
    though the model served more calls than that (those lost with the killed worker, and twins).

    Who runs the killed worker's tasks: on RabbitMQ the broker hands them to a live worker the moment the
    dead one's connection drops (measured: the first redelivered task's start after the kill), so no job
    waits for the watchdog (each ends in its first attempt); on Redis they stay in the unacked set until the
    visibility timeout (an hour), so the watchdog re-submits.
    """
    stack = faults_stack
    stack.restart_model(latency_ms=300)
    offset = stack.model_log_offset()
    deadline = R1_RABBITMQ_DEADLINE_SECONDS if on_rabbitmq() else DEADLINE_SECONDS
    with r1_deadline(stack), stack.client() as client:
        handle = stored_handle(client)
        started = time.monotonic()
        ids = submit_jobs(client, handle, 20)
        assert poll_until(lambda: (p := chunk_progress(client, ids))[1] > 0 and p[0] >= p[1] // 4, timeout=60)
        kill_at, killed_wall = time.monotonic() - started, time.time()
        stack.workers["faults-worker-2"].kill()
        stack.workers["faults-worker-2"].process.wait(10)
        done_at_kill = chunk_progress(client, ids)
        stack.start_worker("faults-worker-2")
        stack.wait_workers()
        back_at = time.monotonic() - started
        jobs = wait_terminal(client, ids, timeout=deadline + 30 if on_rabbitmq() else 3 * deadline + 30)
        finished_at = time.monotonic() - started
    r = stack.redis_server.client()
    stored = {i: (r.hlen(keys.job_chunks(i)), r.hlen(keys.job_reduce(i, 1))) for i in ids}
    events = model_events(stack, offset)
    retried = sum(1 for j in jobs.values() if j["attempts"] > 1)
    slowest = max(j["finished_at"] - j["created_at"] for j in jobs.values())
    calls = sum(j["usage"]["calls"] for j in jobs.values())
    print(
        f"\nR1: 20 jobs x {jobs[ids[0]]['chunks_total']} chunks; worker-2 SIGKILLed at {kill_at:.1f}s with "
        f"{done_at_kill[0]}/{done_at_kill[1]} chunks done, back at {back_at:.1f}s; all terminal at {finished_at:.1f}s "
        f"({finished_at - kill_at:.1f}s after the kill); slowest job {slowest:.1f}s from submission (deadline "
        f"{deadline}s); {retried} job(s) re-submitted by the watchdog; "
        f"usage.calls {calls} vs model answers served {events['answers']} ({events['answers'] - calls} not applied)"
    )
    for job_id, job in jobs.items():
        assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked", job
        assert FACT in job["result"] and job["fallback_reason"] is None
        maps, final = stored[job_id]
        assert job["chunks_total"] > 1 and job["chunks_done"] == job["chunks_total"] == maps, (job, stored[job_id])
        reduces = sum(answers > 1 for level in job["reduce_tree"] for answers in level)  # 0: one answer found FACT
        assert job["reduce_level"] == 0 and final == reduces <= 1
        assert job["usage"]["calls"] == maps + final == job["chunks_total"] + reduces, (job["usage"], stored[job_id])
        assert job["llm_calls_reserved"] >= job["usage"]["calls"]
    redelivered = redeliveries_after(stack, killed_wall)
    broker = "RabbitMQ" if on_rabbitmq() else "Redis"
    moved = (
        f"ran elsewhere {redelivered[0]:.1f}s after the kill ({len(redelivered)} redelivered)"
        if redelivered
        else "were not redelivered (they wait out the visibility timeout)"
    )
    measurements(
        f"R1 on {broker}: the killed worker's tasks {moved}; {retried} of 20 job(s) waited for the watchdog; "
        f"all terminal {finished_at - kill_at:.1f}s after the kill, the slowest job {slowest:.1f}s after submission"
    )
    if on_rabbitmq():
        assert redelivered and redelivered[0] <= 5, redelivered
        assert retried == 0, "RabbitMQ redelivers at once: no job should wait for the watchdog"
    else:
        assert retried >= 1, "the killed worker held tasks: some job can only have finished through the watchdog"
    assert events["answers"] >= calls


# --- R2: Redis stops mid-run -----------------------------------------------------------------------
def test_r2_redis_down_mid_run_gives_bounded_503s_and_no_job_is_left_behind(faults_stack: FaultStack) -> None:
    stack = faults_stack
    stack.restart_model(latency_ms=300)
    api = stack.api_url
    with stack.client() as client:
        handle = stored_handle(client)
        earlier = submit_jobs(client, handle, 6)
        assert poll_until(lambda: chunk_progress(client, earlier)[0] > 0, timeout=60)
    stack.redis_server.stop()
    down_at = time.monotonic()
    outage = {
        "create-session": lambda: httpx.post(f"{api}/v1/sessions", timeout=30),
        "submit": lambda: httpx.post(
            f"{api}/v1/extractions", json={"handle": handle, "extract": REQUEST, "cache": False}, timeout=30
        ),
        "get-job": lambda: httpx.get(f"{api}/v1/extractions/{earlier[0]}", timeout=30),
    }
    answered = {}
    for name, call in outage.items():
        began = time.monotonic()
        response = call()
        answered[name] = (response.status_code, round(time.monotonic() - began, 2))
        assert assert_error_shape(response, 503)["code"] == "backend_unavailable"
        assert response.headers.get("retry-after")
        assert time.monotonic() - began < 10, f"{name} took {time.monotonic() - began:.1f}s to answer"
    time.sleep(2)
    stack.redis_server.start()
    up_at = time.monotonic()
    with stack.client() as client:
        fresh, refused = submit_until_accepted(client, handle)
        fresh_job = client.wait(fresh, timeout=60)
        fresh_done = time.monotonic() - up_at
        jobs = wait_terminal(client, earlier, timeout=2 * DEADLINE_SECONDS + 20)
        settled = time.monotonic() - up_at
    workers_back = processes.wait_for(stack.workers_answering, timeout=20, interval=0.5)
    statuses = Counter(j["status"] for j in jobs.values())
    attempts = Counter(j["attempts"] for j in jobs.values())
    print(
        f"\nR2: Redis down {up_at - down_at:.1f}s; during the outage {answered}; after restart: {refused} "
        "503(s) before "
        f"a new job was accepted, which succeeded {fresh_done:.1f}s after Redis returned; the 6 earlier jobs were all "
        f"terminal {settled:.1f}s after it returned: {dict(statuses)}, attempts {dict(attempts)}"
    )
    assert fresh_job["status"] == "succeeded" and FACT in fresh_job["result"], fresh_job
    assert settled <= 2 * DEADLINE_SECONDS + 10 * WATCHDOG_INTERVAL_SECONDS
    assert workers_back, "a worker did not survive the broker restart (see workers/celery/broker_guard.py)"


def submit_until_accepted(client: ToolOutClient, handle: str, timeout: float = 30) -> tuple[str, int]:
    """A client retrying on 503 as told (Retry-After): connections to the restarted Redis come back on use."""
    refused, deadline = 0, time.monotonic() + timeout
    while True:
        try:
            return client.submit(handle, REQUEST, "full-chunked", cache=False)["id"], refused
        except ToolOutAPIError as exc:
            if exc.status != 503 or time.monotonic() > deadline:
                raise
            refused += 1
            time.sleep(0.5)


# --- cancel: queued tasks are revoked, running ones stop at their next model call --------------
def test_cancel_revokes_the_queued_tasks_on_the_workers_and_stops_model_calls(faults_stack: FaultStack) -> None:
    stack = faults_stack
    stack.restart_model(latency_ms=1000)
    with stack.client() as client:
        handle = stored_handle(client)
        ids = submit_jobs(client, handle, 4)  # 24 map tasks for 16 threads: the last job's maps wait in the queue
        assert poll_until(lambda: client.job(ids[-1])["chunks_total"] > 0, timeout=30)
        canceled = client.cancel(ids[-1])
        reserved_at_cancel = canceled["llm_calls_reserved"]
        task_ids = set(stack.redis_server.client().smembers(keys.job_tasks(ids[-1])))
        revoked = revoked_on_workers(stack)
        wait_terminal(client, ids, timeout=DEADLINE_SECONDS + 30)
        after = client.job(ids[-1])
    print(
        f"\ncancel: {len(task_ids)} task ids recorded, revoked on {len(revoked)} worker(s); "
        f"LLM calls reserved {reserved_at_cancel} at cancel, {after['llm_calls_reserved']} after the other "
        "jobs finished"
    )
    assert canceled["status"] == after["status"] == "canceled"
    assert len(task_ids) == after["chunks_total"] + 1
    assert len(revoked) == 2 and all(task_ids <= ids_ for ids_ in revoked.values()), revoked
    assert after["llm_calls_reserved"] == reserved_at_cancel, "no model call was made for the job after its cancel"


def revoked_on_workers(stack: FaultStack) -> dict[str, set[str]]:
    """Each worker's revoked task ids, once every worker has received the broadcast."""
    from celery import Celery

    app = Celery("faults-inspect", broker=stack.broker_url)
    found: dict[str, set[str]] = {}

    def every_worker_knows() -> bool:
        found.update({name: set(ids) for name, ids in (app.control.inspect(timeout=1.0).revoked() or {}).items()})
        return len(found) == 2 and all(found.values())

    try:  # wait_for: a pooled connection from before R2's Redis restart fails once, then reconnects
        processes.wait_for(every_worker_knows, timeout=10, interval=0.2)
    finally:
        app.close()
    return found


# --- R3: a flaky model, then a dead one ----------------------------------------------------------
def test_r3_model_faults_are_retried_by_litellm_and_a_dead_model_ends_every_job(faults_stack: FaultStack) -> None:
    stack = faults_stack
    # max_faults=2 under the stack's 4 retries: at 30 %, one call in ~400 would otherwise fail all 5 attempts by chance
    stack.restart_model(latency_ms=20, error_rate=0.3, error_kinds="429,500,timeout", max_faults=2)
    offset = stack.model_log_offset()
    started = time.monotonic()
    with stack.client() as client:
        handle = stored_handle(client)
        ids = submit_jobs(client, handle, 6) + submit_jobs(client, handle, 2, mode="read-grep")
        flaky = wait_terminal(client, ids, timeout=DEADLINE_SECONDS * 2 + 20)
    flaky_seconds, flaky_events = time.monotonic() - started, model_events(stack, offset)
    calls = sum(j["usage"]["calls"] for j in flaky.values())
    print(
        f"\nR3 at 30%: {len(ids)} jobs ({calls} LLM calls) all terminal in {flaky_seconds:.1f}s; the model answered "
        f"{flaky_events['answers']} times and injected "
        f"{dict((k, v) for k, v in flaky_events.items() if k != 'answers')}"
    )
    for job in flaky.values():
        assert job["status"] == "succeeded" and job["fallback_reason"] is None, job
        assert job["mode_used"] in ("full-chunked", "read-grep") and FACT in job["result"]
    assert sum(v for k, v in flaky_events.items() if k != "answers") > 0, "faults were injected and retried"

    stack.restart_model(error_rate=1.0, error_kinds="429,500,timeout")
    offset = stack.model_log_offset()
    started = time.monotonic()
    with stack.client() as client:
        ids = submit_jobs(client, handle, 3) + submit_jobs(client, handle, 1, mode="read-grep")
        dead = wait_terminal(client, ids, timeout=DEADLINE_SECONDS * 2 + 30)
    dead_seconds, dead_events = time.monotonic() - started, model_events(stack, offset)
    print(
        f"R3 at 100%: {len(ids)} jobs all terminal in {dead_seconds:.1f}s: "
        f"{dict(Counter((j['status'], j['mode_used']) for j in dead.values()))}; model injected "
        f"{dict((k, v) for k, v in dead_events.items() if k != 'answers')}, answered {dead_events['answers']}"
    )
    for job in dead.values():
        fell_back = (
            job["status"] == "succeeded"
            and job["mode_used"] == "truncate"
            and "WARNING: tool_output fallback to truncate" in job["result"]
        )
        assert fell_back or job["status"] == "failed", job
    assert dead_events["answers"] == 0
