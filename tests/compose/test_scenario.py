"""docker-compose.yml run for real with three worker containers: jobs spread over them, a worker killed mid-map
costs no job (RabbitMQ hands its unacknowledged tasks to the others), a Redis restart loses nothing (AOF), and
`down -v` leaves nothing behind.

The stack is the user's compose file plus CI's override (infra/compose/ci.override.yml), built from this tree,
driven only through the API port it publishes and the `docker compose` commands a user types. The offline
model waits a second per call, as a real one would, and believes its context holds 8,000 tokens, so the log is
cut into about twenty chunks; two tasks at a time per worker keep a job mapping long enough for a test to act.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compose.agent import Agent
from tests.compose.project import SLOW_MODEL, Project, new_project, run, timed, torn_down
from toolout.devstack.datasets import corpus_dir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
WORKERS = 3
REDELIVERY_SECONDS = 60
LOG_QUESTIONS = ("every distinct error message", "which clients were denied", "the first and last timestamps")
JSON_QUESTIONS = ("how many features there are", "the name of the country", "the geometry type")
_timings: dict[str, float] = {}


@pytest.fixture(scope="module")
def compose_stack() -> Iterator[Project]:
    """The stack up with three workers, every health check passed."""
    project = new_project(**SLOW_MODEL)
    with torn_down(project):
        up = ("up", "-d", "--build", "--wait", "--wait-timeout", "300", "--scale", f"worker={WORKERS}")
        _timings["up"] = timed(lambda: project.compose(*up, timeout=1200))
        project.wait_for_api()
        yield project


@pytest.fixture(scope="module")
def agent(compose_stack: Project) -> Agent:
    """An agent holding a key made the way the deploy guide says: `docker compose exec api toolout keys create`."""
    key = compose_stack.compose("exec", "-T", "api", "toolout", "keys", "create", "--tenant", "ci").strip()
    assert key and "\n" not in key, f"keys create printed more than the key: {key!r}"
    return Agent.connect(compose_stack.api_url, key)


@pytest.fixture(scope="module")
def handles(agent: Agent) -> dict[str, str]:
    """A log and a JSON document from the corpus, stored as an agent stores its tool outputs."""
    corpus = corpus_dir(REPO)
    if corpus is None:
        pytest.skip("the corpus is not beside this checkout")
    return {
        "log": agent.store(corpus / "Apache_2k.log", "read_log", "text/plain"),
        "json": agent.store(corpus / "canada.json", "fetch_geojson", "application/json"),
    }


def mixed_jobs(agent: Agent, handles: dict[str, str], tag: str) -> list[str]:
    """Thirteen extractions over both documents and every strategy; `tag` keeps each batch's questions apart."""
    log, doc = handles["log"], handles["json"]
    plan = [(log, q, "full-chunked") for q in LOG_QUESTIONS] + [(log, q, "read-grep") for q in LOG_QUESTIONS[:2]]
    plan += [(doc, q, "query") for q in JSON_QUESTIONS] + [(doc, JSON_QUESTIONS[1], "read-grep")]
    plan += [(log, LOG_QUESTIONS[0], "truncate"), (doc, JSON_QUESTIONS[0], "truncate"), (log, LOG_QUESTIONS[2], "auto")]
    plan += [(doc, JSON_QUESTIONS[2], "auto")]
    return [agent.extract(handle, f"{question} ({tag})", mode) for handle, question, mode in plan]


def map_jobs(agent: Agent, handles: dict[str, str], tag: str, count: int = 4) -> list[str]:
    return [agent.extract(handles["log"], f"{LOG_QUESTIONS[i % 3]} ({tag} {i})", "full-chunked") for i in range(count)]


def failures(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        j: (r.get("status"), r.get("mode_used"), r.get("error"))
        for j, r in records.items()
        if r.get("status") != "succeeded"
    }


def test_jobs_spread_over_the_worker_containers(
    compose_stack: Project, agent: Agent, handles: dict[str, str], measurements: Callable[[str], None]
) -> None:
    jobs = mixed_jobs(agent, handles, "spread")
    seconds = timed(lambda: _finished.update(agent.finish(jobs, timeout=300)))
    assert not failures(_finished), failures(_finished)
    modes = {r["mode_used"] for r in _finished.values()}
    assert {"full-chunked", "read-grep", "query", "truncate"} <= modes, modes
    containers = compose_stack.hostnames("worker")
    assert len(containers) == WORKERS, containers
    workers = set().union(*map(agent.workers_of, jobs))
    assert workers <= set(containers), f"traces name {workers}, the worker containers are {sorted(containers)}"
    assert len(workers) >= 2, f"only {workers} of {sorted(containers)} did work"
    measurements(
        f"up --build --wait with {WORKERS} workers {_timings['up']:.0f} s; {len(jobs)} jobs in {seconds:.0f} s"
    )
    measurements(f"workers that made model calls: {len(workers)} of {WORKERS}")


_finished: dict[str, dict[str, Any]] = {}


def test_a_worker_killed_mid_map_costs_no_job(
    compose_stack: Project, agent: Agent, handles: dict[str, str], measurements: Callable[[str], None]
) -> None:
    jobs = map_jobs(agent, handles, "kill")
    victim, job = mid_map_worker(agent, jobs)
    run(["docker", "kill", compose_stack.hostnames("worker")[victim]])
    seconds = timed(lambda: _finished.update(agent.finish(jobs, timeout=REDELIVERY_SECONDS)))
    records = {j: _finished[j] for j in jobs}
    assert not failures(records), f"after killing {victim} (mid-map on {job}): {failures(records)}"
    assert all(r["chunks_done"] == r["chunks_total"] and not r["chunks_failed"] for r in records.values()), records
    survivors = agent.workers_of(job) - {victim}
    assert survivors, f"no other worker made any of {job}'s calls after {victim} was killed"
    measurements(f"killed {victim} mid-map: {len(jobs)} jobs succeeded {seconds:.0f} s later")


def mid_map_worker(agent: Agent, jobs: list[str], timeout: float = 120) -> tuple[str, str]:
    """A worker container that has made map calls for a job that is still mapping, and that job."""
    for _ in range(int(timeout / 0.5)):
        for job in jobs:
            record = agent.job(job)
            workers = agent.workers_of(job)
            if record["status"] == "running" and 0 < record["chunks_done"] < record["chunks_total"] - 1 and workers:
                return sorted(workers)[0], job
        run(["sleep", "0.5"])
    raise AssertionError(f"no job was caught mid-map within {timeout} s: {[agent.job(j) for j in jobs]}")


def test_a_redis_restart_mid_run_loses_nothing(
    compose_stack: Project, agent: Agent, handles: dict[str, str], measurements: Callable[[str], None]
) -> None:
    appendonly = compose_stack.compose("exec", "-T", "redis", "redis-cli", "config", "get", "appendonly").split()
    assert appendonly == ["appendonly", "yes"], appendonly
    before = {j: r["result"] for j, r in _finished.items()}
    assert before, "run after the tests above: their finished jobs are what must survive"
    jobs = map_jobs(agent, handles, "restart")
    seconds = timed(lambda: compose_stack.compose("restart", "redis", timeout=120))
    records = agent.finish(jobs, timeout=240)
    assert not failures(records), f"after restarting redis: {failures(records)}"
    after = {j: agent.job(j) for j in before}
    assert {j: r["result"] for j, r in after.items()} == before, "a finished job's record changed or vanished"
    measurements(f"redis restarted in {seconds:.0f} s mid-run: {len(jobs)} jobs succeeded, {len(before)} kept")


def test_down_leaves_nothing(compose_stack: Project) -> None:
    mounted = compose_stack.mounted_volumes()
    assert len(mounted) >= 3, mounted  # redis-data, rabbitmq-data, minio-data at least
    compose_stack.down()
    assert compose_stack.leftovers() == {"containers": [], "volumes": [], "networks": []}
    remaining = set(run(["docker", "volume", "ls", "-q"]).split())
    assert not remaining & set(mounted), f"down -v left volumes the stack mounted: {sorted(remaining & set(mounted))}"
