"""Issue 12 parts 4 and 5 on the real stack: API, Celery worker, Redis and the offline model as processes.

An estimate is compared with the job it describes (the worker's own counted calls and tokens), the
same request then comes back from the result cache, budgets refuse before anything runs, and
/metrics counts what the jobs spent per tenant and model.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.fixtures.stack import Stack
from toolout.client import ToolOutAPIError, ToolOutClient
from toolout.devstack import datasets

pytestmark = pytest.mark.integration

ORDERS = b"orders=" + b"".join(datasets.json_orders(3 << 20))
"""~3 MB of minified JSON behind a label (text, not data: bare JSON routes to query): auto routes it to
full-chunked, several chunks at the offline model's 128k window."""


def upload(client: ToolOutClient, data: bytes) -> tuple[str, str]:
    session = client.create_session()
    return session, client.store(session, data, tool_name="orders.search", tool_args='{"q": "*"}')["handle"]


def metric(stack: Stack, name: str) -> float:
    text = httpx.get(f"{stack.api_url}/metrics", timeout=10).text
    found = re.search(rf'^{name}\{{model="openai/toolout-offline",tenant="dev"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_full_chunked_estimate_matches_its_job_then_the_cache_answers_it(local_stack: Stack) -> None:
    request = datasets.ORDER_NEEDLE.request
    with local_stack.client() as client:
        session, handle = upload(client, ORDERS)
        found = client.estimate(handle, request)
        tokens_before = metric(local_stack, "toolout_llm_input_tokens_total")
        job = client.wait(client.submit(handle, request, cache=False)["id"], timeout=300)
        hit = client.submit(handle, request)
        client.delete_session(session)
    error = (found["input_tokens"] - job["usage"]["input_tokens"]) / job["usage"]["input_tokens"]
    print(
        f"\nestimate vs job: {found['chunks']} chunks, calls {found['calls']} / {job['usage']['calls']}, "
        f"input tokens {found['input_tokens']} / {job['usage']['input_tokens']} ({error:+.2%}), "
        f"output tokens {found['output_tokens']} / {job['usage']['output_tokens']}"
    )
    assert job["status"] == "succeeded" and job["mode_used"] == found["mode"] == "full-chunked"
    assert datasets.ORDER_NEEDLE.needle in job["result"]
    assert found["chunks"] == job["chunks_total"] > 2
    assert job["usage"]["calls"] <= found["calls_max"] and job["reduce_level"] <= found["reduce_levels_max"]
    assert job["usage"]["calls"] == job["chunks_total"] + sum(n > 1 for level in job["reduce_tree"] for n in level)
    assert abs(error) <= 0.05
    assert found["cost_usd"] is None and job["usage"]["cost_usd"] is None, "litellm has no price for the offline model"
    assert (hit["status"], hit["cached"], hit["cached_from"]) == ("succeeded", True, job["id"])
    assert hit["result"] == job["result"] and hit["usage"]["calls"] == 0
    assert metric(local_stack, "toolout_llm_input_tokens_total") - tokens_before >= job["usage"]["input_tokens"]


def test_read_grep_stays_within_its_estimated_bounds(local_stack: Stack) -> None:
    incident = datasets.POOL_INCIDENT
    with local_stack.client() as client:
        session = client.create_session()
        handle = client.store(session, b"".join(datasets.service_log(5 << 20)), tool_name="logs.fetch")["handle"]
        found = client.estimate(handle, incident.request)
        job = client.wait(client.submit(handle, incident.request, cache=False)["id"], timeout=300)
        client.delete_session(session)
    assert (found["mode"], found["basis"]) == (job["mode_used"], "bounds") == ("read-grep", "bounds")
    assert job["usage"]["calls"] <= found["calls_max"] and job["usage"]["input_tokens"] <= found["input_tokens_max"]


def test_budgets_refuse_before_anything_runs_and_deleting_the_output_ends_its_cached_answers(
    local_stack: Stack,
) -> None:
    request = "every order shipped to Lisbon"
    with local_stack.client() as client:
        session, handle = upload(client, ORDERS)
        found = client.estimate(handle, request)
        with pytest.raises(ToolOutAPIError) as refused:
            client.submit(handle, request, max_input_tokens=found["input_tokens"] // 2)
        assert client.session_jobs(session) == []
        job = client.wait(client.submit(handle, request, max_input_tokens=found["input_tokens"])["id"], timeout=300)
        assert client.submit(handle, request)["cached_from"] == job["id"]
        httpx.delete(f"{local_stack.api_url}/v1/outputs/{handle}", timeout=10).raise_for_status()
        _, again = upload(client, ORDERS)
        rerun = client.submit(again, request)
        client.delete_session(session)
    assert (refused.value.status, refused.value.code) == (422, "budget_exceeded")
    assert refused.value.details["estimate"]["input_tokens"] == found["input_tokens"]
    assert job["status"] == "succeeded" and rerun["cached"] is False and rerun["status"] in ("queued", "running")
