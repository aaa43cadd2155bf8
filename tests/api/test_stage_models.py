"""A model per stage at the API: the request's `model` from the allow-list, estimates priced per stage."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.llm.info import price_usd
from infra.stores.jobs import JobStatus
from tests.api.test_estimates import JSON, LOG, REQUEST, App, make_app
from tests.fixtures.api_server import assert_error

CHEAP, STRONG = "openai/gpt-4o-mini", "openai/gpt-4o"


@pytest.fixture()
def staged() -> Iterator[App]:
    """Maps on gpt-4o-mini, the reduce on gpt-4o; a request may ask for either, nothing else."""
    yield from make_app(map_model=CHEAP, reduce_model=STRONG, allowed_models=[CHEAP, STRONG])


def test_the_estimate_prices_each_stage_with_its_own_model(staged: App) -> None:
    _, handle = staged.upload(JSON)
    found = staged.estimate(handle)
    maps, reduces = found["stages"]
    assert (maps["stage"], maps["model"], reduces["stage"], reduces["model"]) == ("map", CHEAP, "reduce", STRONG)
    assert maps["calls"] == found["map_calls"] and reduces["calls"] == found["reduce_calls"] >= 1
    assert maps["cost_usd"] == pytest.approx(price_usd(CHEAP, maps["input_tokens"], maps["output_tokens"]))
    assert reduces["cost_usd"] == pytest.approx(price_usd(STRONG, reduces["input_tokens"], reduces["output_tokens"]))
    assert found["cost_usd"] == pytest.approx(maps["cost_usd"] + reduces["cost_usd"])
    assert found["input_tokens"] == maps["input_tokens"] + reduces["input_tokens"]
    assert found["calls"] == maps["calls"] + reduces["calls"]


def test_a_requested_model_prices_every_stage(staged: App) -> None:
    _, handle = staged.upload(JSON)
    found = staged.estimate(handle, model=STRONG)
    assert found["model"] == STRONG and {s["model"] for s in found["stages"]} == {STRONG}


def test_read_grep_is_priced_on_the_agent_model(staged: App) -> None:
    _, handle = staged.upload(LOG)
    found = staged.estimate(handle, mode="read-grep")
    [agent] = found["stages"]
    assert agent["stage"] == "agent" and agent["model"] == "openai/toolout-offline" and agent["cost_usd"] is None


def test_a_job_records_each_stages_model(staged: App) -> None:
    _, handle = staged.upload(JSON)
    response = staged.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["stage_models"] == {"map": CHEAP, "reduce": STRONG, "agent": "openai/toolout-offline"}
    assert job["model_usage"] == {} and job["model_fallbacks"] == [] and job["calls_waiting"] == 0
    asked = staged.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST, "model": CHEAP}).json()
    assert asked["stage_models"] == {"map": CHEAP, "reduce": CHEAP, "agent": CHEAP} and asked["model"] == CHEAP
    assert asked["status"] == JobStatus.QUEUED.value


def test_a_model_not_on_the_allow_list_is_refused_with_a_typed_422(staged: App) -> None:
    _, handle = staged.upload(JSON)
    for path in ("/v1/extractions", "/v1/extractions/estimate"):
        response = staged.client.post(path, json={"handle": handle, "extract": REQUEST, "model": "openai/o1"})
        assert_error(response, 422, "model_not_allowed")
        assert "openai/gpt-4o-mini" in response.json()["error"]["message"]
    assert staged.dispatcher.submitted == []


def test_without_an_allow_list_no_request_may_choose() -> None:
    for app in make_app():
        _, handle = app.upload(JSON)
        response = app.client.post("/v1/extractions", json={"handle": handle, "extract": REQUEST, "model": CHEAP})
        assert_error(response, 422, "model_not_allowed")
        assert "none" in response.json()["error"]["message"]
