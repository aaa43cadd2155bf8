"""The readiness probe of the model endpoints: what counts as up, caching, one endpoint per stage."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from infra.llm.probe import ModelEndpoint, ModelProbe, model_endpoints, probe_endpoint
from infra.settings import Settings

ENDPOINT = ModelEndpoint("model", "openai/m", "http://model.test/v1", "sk-1")


class FakeGet:
    """Answers `status` (or raises `error`) and records what was asked."""

    def __init__(self, status: int = 200, error: Exception | None = None) -> None:
        self.status, self.error, self.calls = status, error, []

    def __call__(self, url: str, **kwargs: Any) -> httpx.Response:
        self.calls.append((url, kwargs))
        if self.error is not None:
            raise self.error
        return httpx.Response(self.status)


@pytest.mark.parametrize(
    ("status", "ok", "said"),
    [(200, True, "HTTP 200"), (404, True, "HTTP 404"), (401, False, "refused the API key"), (503, False, "HTTP 503")],
)
def test_an_answer_below_500_is_up_unless_the_key_is_refused(status: int, ok: bool, said: str) -> None:
    get = FakeGet(status)
    result = probe_endpoint(ENDPOINT, 2.0, get)
    assert (result.ok, said in result.detail, "openai/m" in result.detail) == (ok, True, True)
    url, kwargs = get.calls[0]
    assert (url, kwargs["headers"], kwargs["timeout"]) == (
        "http://model.test/v1/models",
        {"Authorization": "Bearer sk-1"},
        2.0,
    )


def test_a_timeout_and_a_refused_connection_are_down_with_why() -> None:
    hung = probe_endpoint(ENDPOINT, 1.5, FakeGet(error=httpx.ReadTimeout("slow")))
    refused = probe_endpoint(ENDPOINT, 1.5, FakeGet(error=httpx.ConnectError("Connection refused")))
    assert not hung.ok and "no answer within 1.5 s" in hung.detail
    assert not refused.ok and "ConnectError: Connection refused" in refused.detail


def test_a_provider_default_endpoint_is_not_probed() -> None:
    get = FakeGet(500)
    result = probe_endpoint(ModelEndpoint("model", "anthropic/claude", None), 2.0, get)
    assert result.ok and "not probed" in result.detail and not get.calls


def test_an_answer_is_reused_for_the_cache_period_then_asked_again() -> None:
    now = [100.0]
    get = FakeGet(200)
    probe = ModelProbe([ENDPOINT], cache_seconds=5, clock=lambda: now[0], get=get)
    assert probe.check(ENDPOINT).ok
    get.status = 500
    now[0] += 4.9
    assert probe.check(ENDPOINT).ok and len(get.calls) == 1
    now[0] += 0.2
    assert not probe.check(ENDPOINT).ok and len(get.calls) == 2


def test_one_model_today_is_one_endpoint_named_model() -> None:
    settings = Settings(model="openai/x", model_api_base="http://h/v1", model_api_key="k")
    assert model_endpoints(settings) == [ModelEndpoint("model", "openai/x", "http://h/v1", "k")]


def test_settings_with_stage_models_give_one_endpoint_per_stage() -> None:
    class Config:
        def __init__(self, base: str) -> None:
            self.api_base, self.api_key = base, "k"

    class StagedSettings(Settings):
        def stage_model(self, stage: str) -> str:
            return {"map": "openai/small"}.get(stage, self.model)

        def model_config_for(self, model: str) -> Config:
            return Config("http://small/v1" if model == "openai/small" else "http://big/v1")

    endpoints = model_endpoints(StagedSettings(model="openai/big"))
    assert [(e.check_name, e.model, e.api_base) for e in endpoints] == [
        ("model:map", "openai/small", "http://small/v1"),
        ("model:reduce", "openai/big", "http://big/v1"),
        ("model:agent", "openai/big", "http://big/v1"),
    ]
