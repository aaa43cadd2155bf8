"""A model per stage, fallbacks and provider limits (docs/models.md), on the real stack: three offline models as
processes (see toolout/devstack/stack_models.py), the API and three Celery workers of 32 threads each.

The full-size run of the limits (120 rpm, 10 jobs × 32 chunks) is `bench/service/provider_limits.py`; here
the map model allows 600 rpm and the jobs are smaller, so the same promise takes seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures.servers import unavailable
from tests.fixtures.stack import STACK_DB
from toolout.devstack import datasets
from toolout.devstack.stack import Stack
from toolout.devstack.stack_models import BROKEN, CHEAP, STRONG, start_models_stack

pytestmark = pytest.mark.integration

RPM = 600
JOBS = 8
REQUEST = "every database pool exhaustion error, with its service and time"


@pytest.fixture(scope="module")
def models_stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("models-stack")
    try:
        stack = start_models_stack(redis_url.rsplit("/", 1)[0] + f"/{STACK_DB['models']}", root, rpm=RPM)
    except RuntimeError as exc:
        unavailable(f"the models stack did not start: {exc}")
    try:
        yield stack
    finally:
        stack.stop()


def document(seed: int) -> bytes:
    """A ~40 kB service log: about ten chunks at the stack's 3000-token window."""
    return b"".join(datasets.service_log(40_000, seed=seed))


def submit_jobs(stack: Stack, count: int, **body: object) -> list[str]:
    with stack.client() as client:
        session = client.create_session()
        handles = [client.store(session, document(seed), tool_name="logs.fetch")["handle"] for seed in range(count)]
        return [
            client.submit(handle, REQUEST, mode="full-chunked", **body)["id"]
            for handle in handles  # type: ignore[arg-type]
        ]


def wait_all(stack: Stack, job_ids: list[str], timeout: float = 240) -> tuple[list[dict], int]:
    """The finished jobs, and the most calls seen waiting for their turn at one poll."""
    deadline, most_waiting = time.monotonic() + timeout, 0
    with stack.client() as client:
        while time.monotonic() < deadline:
            jobs = [client.job(job_id) for job_id in job_ids]
            most_waiting = max(most_waiting, sum(job["calls_waiting"] for job in jobs))
            if all(job["status"] in ("succeeded", "failed", "canceled") for job in jobs):
                return jobs, most_waiting
            time.sleep(0.2)
    raise AssertionError(f"jobs not finished in {timeout} s: {[j['status'] for j in jobs]}")


def test_jobs_at_once_stay_under_the_models_rpm_at_its_pace_and_all_succeed(models_stack: Stack) -> None:
    """Measured on warm workers: a worker thread's first model call takes seconds to leave after its slot (litellm's
    client set-up), so a cold start sends its first calls late and together, within the provider's burst."""
    wait_all(models_stack, submit_jobs(models_stack, 2))  # warm-up
    models_stack.reset_model_stats()
    jobs, most_waiting = wait_all(models_stack, submit_jobs(models_stack, JOBS))
    assert [job["status"] for job in jobs] == ["succeeded"] * JOBS
    assert all(job["chunks_failed"] == 0 and job["calls_waiting"] == 0 for job in jobs)
    cheap, strong = models_stack.model_stats(CHEAP), models_stack.model_stats(STRONG)
    assert cheap["rate_limited"] == 0 and strong["rate_limited"] == 0, (cheap, strong)
    maps = sum(job["chunks_total"] for job in jobs)
    assert cheap["admitted"] == maps > 60
    rate = (cheap["admitted"] - 1) / (cheap["last_at"] - cheap["first_at"]) * 60
    print(f"\n{cheap['admitted']} map calls at {rate:.0f} a minute (limit {RPM}), most waiting at once {most_waiting}")
    assert 0.9 * RPM <= rate <= 1.5 * RPM, f"{rate:.0f} calls a minute against a limit of {RPM} (and a 1 s burst)"
    assert most_waiting > 0, "calls waiting for their turn show on their jobs"
    assert sum(job["rate_limit_wait_seconds"] for job in jobs) > 0


def test_map_and_reduce_models_are_counted_and_priced_each_on_the_job_the_estimate_and_metrics(
    models_stack: Stack,
) -> None:
    [job_id] = submit_jobs(models_stack, 1)
    [job], _ = wait_all(models_stack, [job_id])
    assert (
        job["status"] == "succeeded" and job["stage_models"]["map"] == CHEAP and job["stage_models"]["reduce"] == STRONG
    )
    cheap, strong = job["model_usage"][CHEAP], job["model_usage"][STRONG]
    assert cheap["calls"] == job["chunks_total"] and strong["calls"] >= 1
    assert cheap["cost_usd"] > 0 and strong["cost_usd"] > 0 and cheap["input_tokens"] > strong["input_tokens"]
    with models_stack.client() as client:
        found = client.estimate(job["handle"], REQUEST, mode="full-chunked")
    maps, reduces = found["stages"]
    assert (maps["model"], reduces["model"]) == (CHEAP, STRONG) and maps["cost_usd"] > 0 and reduces["cost_usd"] > 0
    metrics = httpx.get(f"{models_stack.api_url}/metrics", timeout=10).text
    for model, stage in ((CHEAP, "map"), (STRONG, "reduce")):
        for family in ("calls", "input_tokens", "output_tokens", "cost_usd"):
            pattern = rf'toolout_model_{family}_total{{[^}}]*model="{model}"[^}}]*stage="{stage}"[^}}]*}} ([0-9.e+-]+)'
            values = [float(v) for v in re.findall(pattern, metrics)]
            assert values and values[0] > 0, (family, model, stage)


def test_a_model_that_always_fails_is_replaced_by_its_fallback_and_the_job_says_so(models_stack: Stack) -> None:
    [job_id] = submit_jobs(models_stack, 1, model=BROKEN)
    [job], _ = wait_all(models_stack, [job_id])
    assert job["status"] == "succeeded" and job["chunks_failed"] == 0, job.get("error")
    assert job["stage_models"] == {"map": BROKEN, "reduce": BROKEN, "agent": BROKEN}
    assert BROKEN not in job["model_usage"]
    taken = {(f["stage"], f["model"], f["answered_by"]) for f in job["model_fallbacks"]}
    assert taken == {("map", BROKEN, STRONG), ("reduce", BROKEN, CHEAP)}
    assert all(f["attempts"] >= 2 for f in job["model_fallbacks"])
    assert models_stack.model_stats(BROKEN)["admitted"] >= 2 * job["chunks_total"]


def test_a_model_not_allowed_is_refused(models_stack: Stack) -> None:
    with models_stack.client() as client:
        session = client.create_session()
        handle = client.store(session, document(0), tool_name="logs.fetch")["handle"]
        response = httpx.post(
            f"{models_stack.api_url}/v1/extractions",
            json={"handle": handle, "extract": REQUEST, "model": STRONG},
            timeout=10,
        )
    assert response.status_code == 422 and response.json()["error"]["code"] == "model_not_allowed"
