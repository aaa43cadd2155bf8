"""/metrics exports what jobs spent per tenant and model (read from the job store), and cache hits per tenant."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from extraction.protocols import Usage
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStatus
from tests.api.conftest import InProcess

pytestmark = pytest.mark.twin("usage counters in the job store, not stored content")


def samples(client: TestClient, name: str) -> dict[tuple[str, str], float]:
    text = client.get("/metrics").text
    found = re.findall(rf'^{name}\{{model="([^"]*)",tenant="([^"]*)"\}} (\S+)$', text, re.M)
    return {(tenant, model): float(value) for model, tenant, value in found}


def stored_job(inproc: InProcess) -> str:
    session = inproc.client.post("/v1/sessions").json()["id"]
    handle = inproc.client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR x\n" * 500).json()["handle"]
    return str(inproc.client.post("/v1/extractions", json={"handle": handle, "extract": "errors"}).json()["id"])


def test_tokens_and_cost_are_counted_per_tenant_and_model(inproc: InProcess) -> None:
    jobs = inproc.app.state.services.jobs
    job_id = stored_job(inproc)
    assert jobs.records.get(job_id).model == "openai/toolout-offline", "a job carries the model it was created for"
    jobs.fanin.record_chunk(job_id, 0, "answer", Usage(calls=1, input_tokens=1200, output_tokens=80))
    jobs.fanin.record_chunk(job_id, 0, "answer", Usage(calls=1, input_tokens=1200, output_tokens=80))  # redelivered
    jobs.accounting.add_usage(job_id, Usage(calls=1, input_tokens=300, output_tokens=20, cost_usd=0.002))
    owner = ("dev", "openai/toolout-offline")
    assert samples(inproc.client, "toolout_llm_calls_total") == {owner: 2.0}
    assert samples(inproc.client, "toolout_llm_input_tokens_total") == {owner: 1500.0}
    assert samples(inproc.client, "toolout_llm_output_tokens_total") == {owner: 100.0}
    assert samples(inproc.client, "toolout_llm_cost_usd_total") == {owner: 0.002}


def test_cache_hits_are_counted_per_tenant(inproc: InProcess) -> None:
    jobs = inproc.app.state.services.jobs
    session = inproc.client.post("/v1/sessions").json()["id"]
    handle = inproc.client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR x\n" * 500).json()["handle"]
    first = inproc.client.post("/v1/extractions", json={"handle": handle, "extract": "errors"}).json()
    jobs.records.finish(first["id"], JobStatus.SUCCEEDED, result="ABSTRACT", report={"content": "x", "found": True})
    for _ in range(2):
        assert inproc.client.post("/v1/extractions", json={"handle": handle, "extract": "errors"}).status_code == 201
    assert 'toolout_result_cache_hits_total{tenant="dev"} 2.0' in inproc.client.get("/metrics").text


def test_a_scrape_without_the_job_store_still_answers(inproc: InProcess, monkeypatch) -> None:
    jobs = inproc.app.state.services.jobs

    def down() -> None:
        raise BackendUnavailable("redis is down")

    monkeypatch.setattr(jobs.accounting, "usage_totals", down)
    response = inproc.client.get("/metrics")
    assert response.status_code == 200 and "toolout_llm_calls_total" not in response.text
    assert "toolout_http_requests_total" in response.text
