"""POST /v1/extractions/estimate and the budgets of POST /v1/extractions, on the in-memory app (no server).

Prices come from litellm's bundled cost map (LITELLM_LOCAL_MODEL_COST_MAP: no network): null for the
offline model, which litellm does not know, and gpt-4o-mini's published per-token prices otherwise.
That the numbers match real jobs is tested in tests/workers/job/test_estimates.py and on the real stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.deps import Services
from extraction.strategies.planning import chunk_budget_for
from infra.planning.estimates import prompt_context
from infra.planning.plans import decode_plan, plan_fresh, plan_key, planning_rules
from infra.stores.jobs import JobStatus
from tests.fixtures.api_server import api_settings, assert_error, build_test_app
from toolout.devstack import datasets
from workers.testing import RecordingDispatcher

ORDERS = b"".join(datasets.json_orders(2 << 20))
JSON = b"orders=" + ORDERS
"""~2 MB of minified JSON on one line behind a label (so it is text, not data): auto routes it to full-chunked
whatever its size. The bare JSON is structured data: auto routes it to query."""
LOG = b"".join(datasets.service_log(1 << 20))
REQUEST = "every order whose payment was declined, with its reason"


class App:
    def __init__(self, client: TestClient, services: Services, dispatcher: RecordingDispatcher) -> None:
        self.client, self.services, self.dispatcher = client, services, dispatcher

    def upload(self, content: bytes) -> tuple[str, str]:
        session = self.client.post("/v1/sessions").json()["id"]
        response = self.client.post(f"/v1/sessions/{session}/outputs", content=content, headers={"X-Tool-Name": "t"})
        return session, response.json()["handle"]

    def estimate(self, handle: str, **body: Any) -> dict[str, Any]:
        response = self.client.post("/v1/extractions/estimate", json={"handle": handle, "extract": REQUEST, **body})
        assert response.status_code == 200, response.text
        return response.json()


def make_app(**overrides: Any) -> Iterator[App]:
    dispatcher = RecordingDispatcher()
    app = build_test_app(api_settings("memory://", "memory://", **overrides), dispatcher)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield App(client, app.state.services, dispatcher)


@pytest.fixture()
def offline() -> Iterator[App]:
    """The default model (openai/toolout-offline): unknown to litellm, so 128k context and no price."""
    yield from make_app()


@pytest.fixture()
def priced() -> Iterator[App]:
    """openai/gpt-4o-mini: litellm knows its window (128k in, 16k out, capped at 4096) and its prices."""
    yield from make_app(model="openai/gpt-4o-mini")


def test_an_estimate_plans_the_job_without_running_or_storing_anything(offline: App) -> None:
    session, handle = offline.upload(JSON)
    found = offline.estimate(handle)
    assert (found["model"], found["mode"], found["basis"]) == ("openai/toolout-offline", "full-chunked", "plan")
    assert found["routing_reason"].startswith("auto: avg line")
    assert found["chunks"] == found["map_calls"] > 1 and found["calls"] == found["map_calls"] + found["reduce_calls"]
    assert not found["exact_calls"] and found["reduce_calls"] == found["reduce_calls_max"] == 1
    assert any("upper bound" in note for note in found["notes"]), "the reduce depends on the answers, and it says so"
    assert found["input_tokens"] > found["chunks"] and found["input_tokens_max"] >= found["input_tokens"]
    assert (found["cost_usd"], found["cost_usd_max"], found["cached"]) == (None, None, False)
    assert offline.dispatcher.submitted == []
    assert offline.client.get(f"/v1/sessions/{session}/extractions").json()["items"] == []


def test_an_estimate_keeps_its_chunk_plan_for_the_job_until_the_output_is_deleted(offline: App) -> None:
    """The plan cache: the estimate's plan is kept with the output (the job asked next reads it), and goes with it."""
    services = offline.services
    _, handle = offline.upload(JSON)
    found = offline.estimate(handle)
    output = services.records.outputs.get_output(handle)
    budget = chunk_budget_for(
        prompt_context(output, REQUEST, cite=services.settings.evidence),
        services.model_limits(),
        planning_rules(services.settings),
    )
    key = plan_key(output, budget, services.settings.chunk_overlap)
    kept = decode_plan(services.records.plans.chunk_plan(output, key))
    assert kept == plan_fresh(services.blobs, output, budget, services.settings.chunk_overlap)
    assert len(kept) == found["chunks"]
    assert offline.client.delete(f"/v1/outputs/{handle}").status_code == 204
    assert services.records.plans.chunk_plan(output, key) is None


def test_a_priced_model_gets_litellms_price_for_the_estimated_tokens(priced: App) -> None:
    import litellm

    _, handle = priced.upload(JSON)
    found = priced.estimate(handle)
    prices = litellm.model_cost["gpt-4o-mini"]
    expected = (
        found["input_tokens"] * prices["input_cost_per_token"]
        + found["output_tokens"] * prices["output_cost_per_token"]
    )
    assert found["model"] == "openai/gpt-4o-mini" and found["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert found["cost_usd"] > 0 and found["cost_usd_max"] > found["cost_usd"]


def test_structured_json_is_estimated_as_query_by_its_bounds(offline: App) -> None:
    _, handle = offline.upload(ORDERS)
    found = offline.estimate(handle)
    assert (found["mode"], found["basis"], found["exact_calls"]) == ("query", "bounds", False)
    assert found["routing_reason"].startswith("auto: structured data (json)")


def test_read_grep_is_estimated_by_its_bounds(offline: App) -> None:
    _, handle = offline.upload(LOG)
    found = offline.estimate(handle, mode="read-grep")
    assert (found["mode"], found["basis"], found["exact_calls"], found["calls"]) == ("read-grep", "bounds", False, 15)
    assert found["input_tokens"] == 200_000 + 128_000 and any("bounds" in note for note in found["notes"])


def test_truncate_costs_nothing_even_unpriced(offline: App) -> None:
    _, handle = offline.upload(LOG)
    found = offline.estimate(handle, mode="truncate")
    assert (found["calls"], found["input_tokens"], found["cost_usd"], found["basis"]) == (0, 0, 0.0, "none")


def test_an_unknown_handle_is_the_agent_facing_404(offline: App) -> None:
    response = offline.client.post(
        "/v1/extractions/estimate", json={"handle": "00000000-0000-4000-8000-000000000000", "extract": "x"}
    )
    assert "tool_result" in assert_error(response, 404)["details"]


def test_the_estimate_says_when_the_cache_would_answer(offline: App) -> None:
    _, handle = offline.upload(JSON)
    job = offline.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST}).json()
    report = {"content": "3 declined orders", "found": True}
    offline.services.jobs.records.finish(job["id"], JobStatus.SUCCEEDED, result="ABSTRACT", report=report)
    assert offline.estimate(handle)["cached_from"] == job["id"]
    assert offline.estimate(handle, cache=False)["cached"] is False


# --- budgets ---------------------------------------------------------------------------------------
def test_a_job_over_its_token_budget_is_refused_with_the_estimate(offline: App) -> None:
    _, handle = offline.upload(JSON)
    found = offline.estimate(handle)
    body = {"handle": handle, "extract": REQUEST, "max_input_tokens": found["input_tokens"] - 1}
    error = assert_error(offline.client.post("/v1/extractions", json=body), 422, "budget_exceeded")
    assert error["details"]["estimate"] == {k: v for k, v in found.items() if k not in ("cached", "cached_from")}
    assert "max_input_tokens" in error["message"] and offline.dispatcher.submitted == []


def test_a_job_within_its_budgets_runs(priced: App) -> None:
    _, handle = priced.upload(JSON)
    found = priced.estimate(handle)
    body = {"max_input_tokens": found["input_tokens"], "max_cost_usd": found["cost_usd"] * 1.01}
    response = priced.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST, **body})
    assert response.status_code == 202 and priced.dispatcher.submitted == [response.json()["id"]]


def test_a_job_over_its_cost_budget_is_refused(priced: App) -> None:
    _, handle = priced.upload(JSON)
    body = {"handle": handle, "extract": REQUEST, "max_cost_usd": priced.estimate(handle)["cost_usd"] / 2}
    error = assert_error(priced.client.post("/v1/extractions", json=body), 422, "budget_exceeded")
    assert "max_cost_usd" in error["message"] and error["details"]["estimate"]["cost_usd"] > body["max_cost_usd"]


def test_a_cost_budget_on_an_unpriced_model_cannot_be_kept(offline: App) -> None:
    _, handle = offline.upload(LOG)
    body = {"handle": handle, "extract": REQUEST, "mode": "full-chunked", "max_cost_usd": 100.0}
    assert "unknown cost" in assert_error(offline.client.post("/v1/extractions", json=body), 422)["message"]


def test_a_cached_answer_needs_no_budget(offline: App) -> None:
    _, handle = offline.upload(JSON)
    job = offline.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST}).json()
    offline.services.jobs.records.finish(job["id"], JobStatus.SUCCEEDED, result="ABSTRACT", report={"content": "x"})
    body = {"handle": handle, "extract": REQUEST, "max_input_tokens": 1, "max_cost_usd": 0}
    assert offline.client.post("/v1/extractions", json=body).status_code == 201


@pytest.mark.parametrize("budget", [{"max_input_tokens": 0}, {"max_cost_usd": -1}, {"max_input_tokens": "many"}])
def test_malformed_budgets_are_422(offline: App, budget: dict[str, Any]) -> None:
    _, handle = offline.upload(LOG)
    body = {"handle": handle, "extract": REQUEST, **budget}
    assert_error(offline.client.post("/v1/extractions", json=body), 422, "validation_error")


def test_the_estimate_route_is_post_only(offline: App) -> None:
    """Not mistaken for `GET /v1/extractions/{job_id}` with a malformed id (which would be a 422)."""
    response = offline.client.get("/v1/extractions/estimate")
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
