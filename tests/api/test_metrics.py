"""Prometheus metrics the API serves for the whole service: failed chunks, counted where they are recorded."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest

from api.metrics import FailedChunksCollector
from extraction.strategies.coverage import FailedRange
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobRecord, JobStores
from tests.api.conftest import InProcess

pytestmark = pytest.mark.twin("metrics read from the job store, not from stored content")


def failed_chunks_metric(text: str) -> dict[str, float]:
    return {
        stage: float(v) for stage, v in re.findall(r'^toolout_chunks_failed_total\{stage="(\w+)"\} (\S+)$', text, re.M)
    }


def lose(jobs: JobStores, job_id: str, level: int, chunks: list[int]) -> None:
    jobs.records.create(JobRecord(id=job_id, session_id="s", handle="h", extract="x", nonce="n"))
    assert jobs.fanin.record_failure(
        job_id, FailedRange(level=level, index=0, chunks=chunks, start=0, end=10, reason="model call failed (x)")
    )


def test_failed_chunks_are_exposed_by_stage_from_the_job_store(inproc: InProcess) -> None:
    assert failed_chunks_metric(inproc.client.get("/metrics").text) == {"map": 0.0, "reduce": 0.0}
    jobs = inproc.app.state.services.jobs
    lose(jobs, "a", 0, [4])
    lose(jobs, "b", 1, [0, 1, 2])
    text = inproc.client.get("/metrics").text
    assert failed_chunks_metric(text) == {"map": 1.0, "reduce": 3.0}
    assert "# TYPE toolout_chunks_failed_total counter" in text


def test_a_store_that_does_not_answer_leaves_the_series_out_and_the_scrape_up(caplog) -> None:
    def down() -> dict[str, int]:
        raise BackendUnavailable("Redis is unavailable: connection refused", backend="redis")

    registry = CollectorRegistry()
    registry.register(FailedChunksCollector(down))
    assert b"toolout_chunks_failed_total" not in generate_latest(registry)
    assert "failed-chunk count unavailable: Redis is unavailable" in caplog.text


def test_every_api_instance_reports_the_same_store_wide_count(inproc: InProcess) -> None:
    """A second app over the same stores (another API replica) reads the same total: aggregate with max."""
    from api.app import create_app

    lose(inproc.app.state.services.jobs, "a", 0, [1, 2])
    with TestClient(create_app(services=inproc.app.state.services)) as replica:
        assert failed_chunks_metric(replica.get("/metrics").text) == {"map": 2.0, "reduce": 0.0}


def test_hedges_sent_won_and_their_tokens_are_exposed_from_the_job_store(inproc: InProcess) -> None:
    from extraction.protocols import Usage

    jobs = inproc.app.state.services.jobs
    jobs.records.create(JobRecord(id="h", session_id="s", handle="h", extract="x", nonce="n"))
    jobs.accounting.count_hedges("h", 2, True, Usage(calls=1, input_tokens=300))
    text = inproc.client.get("/metrics").text
    assert re.search(r"^toolout_model_hedges_sent_total 2\.0$", text, re.M)
    assert re.search(r"^toolout_model_hedges_won_total 1\.0$", text, re.M)
    assert re.search(r'^toolout_model_hedge_tokens_total\{kind="prompt"\} 300\.0$', text, re.M)


def test_hedge_counts_a_store_cannot_give_leave_the_scrape_up(caplog) -> None:
    from api.metrics import HedgesCollector

    def down() -> dict[str, int]:
        raise BackendUnavailable("Redis is unavailable: connection refused", backend="redis")

    registry = CollectorRegistry()
    registry.register(HedgesCollector(down))
    assert b"toolout_model_hedges_sent_total" not in generate_latest(registry)
    assert "hedge counts unavailable" in caplog.text
