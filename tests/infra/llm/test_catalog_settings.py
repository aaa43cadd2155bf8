"""Settings of a model per stage: the recipe of docs/models.md as the settings read it, and the allow-list."""

from __future__ import annotations

import json
import shlex

import pytest

from extraction.errors import InvalidInput
from infra.llm.catalog import check_requested_model, rate_limits
from infra.llm.info import model_limits_for
from infra.settings import Settings
from tests.docs_pages import blocks, page


def recipe_env() -> dict[str, str]:
    """The `export NAME=value` lines of the models page's recipe block."""
    [block] = blocks(page("models.md"), "bash")
    words = shlex.split(block.replace("\\\n", " "))
    return dict(word.split("=", 1) for word in words if "=" in word and word.startswith("TOOLOUT_"))


def test_the_docs_recipe_gives_a_cheap_map_model_and_a_strong_reduce_model(monkeypatch) -> None:
    for name, value in recipe_env().items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.stage_model("map") == "openai/gpt-4o-mini"
    assert settings.stage_model("reduce").startswith("anthropic/claude-sonnet")
    strong = settings.model_config_for(settings.stage_model("reduce"))
    assert strong.api_base == "https://api.anthropic.com" and strong.rpm == 50
    assert rate_limits(settings)["openai/gpt-4o-mini"].tpm == 200_000
    assert json.loads(json.dumps(settings.stage_models())) == {
        "map": "openai/gpt-4o-mini",
        "reduce": settings.stage_model("reduce"),
        "agent": "openai/gpt-4o-mini",
    }


def test_a_stage_without_a_model_of_its_own_calls_the_deployments_model() -> None:
    settings = Settings(model="openai/gpt-4o", reduce_model="openai/o3", reduce_fallbacks=["openai/gpt-4o"])
    assert settings.stage_models() == {"map": "openai/gpt-4o", "reduce": "openai/o3", "agent": "openai/gpt-4o"}
    assert settings.stage_models("openai/x") == {"map": "openai/x", "reduce": "openai/x", "agent": "openai/x"}
    assert settings.model_chain("reduce", "openai/o3") == ["openai/o3", "openai/gpt-4o"]
    assert settings.model_chain("reduce", "openai/gpt-4o") == ["openai/gpt-4o"]


def test_a_models_own_window_wins_over_litellms() -> None:
    settings = Settings(models={"openai/gpt-4o-mini": {"context_tokens": 3000, "max_output_tokens": 400}})
    limits = model_limits_for(settings, "openai/gpt-4o-mini")
    assert (limits.context_tokens, limits.max_output_tokens) == (3000, 400)
    assert model_limits_for(settings, "openai/gpt-4o").context_tokens == 128_000


def test_only_allowed_models_may_be_requested() -> None:
    settings = Settings(allowed_models=["openai/gpt-4o-mini"])
    assert check_requested_model(settings, None) is None
    assert check_requested_model(settings, "openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    with pytest.raises(InvalidInput) as refused:
        check_requested_model(settings, "openai/o1")
    assert refused.value.code == "model_not_allowed" and refused.value.details["allowed_models"] == [
        "openai/gpt-4o-mini"
    ]


def test_readyz_probes_each_stage_models_own_endpoint() -> None:
    from infra.llm.probe import model_endpoints

    settings = Settings(
        model="openai/gpt-4o",
        model_api_base="http://big/v1",
        map_model="openai/gpt-4o-mini",
        models={"openai/gpt-4o-mini": {"api_base": "http://small/v1"}},
    )
    assert [(e.check_name, e.model, e.api_base) for e in model_endpoints(settings)] == [
        ("model:map", "openai/gpt-4o-mini", "http://small/v1"),
        ("model:reduce", "openai/gpt-4o", "http://big/v1"),
        ("model:agent", "openai/gpt-4o", "http://big/v1"),
    ]


def test_hedging_is_on_by_default_and_one_setting_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.llm.catalog import ModelCatalog

    monkeypatch.delenv("TOOLOUT_HEDGE_ENABLED")  # the suite turns it off for itself (tests/conftest.py)
    assert ModelCatalog(Settings(), None).hedger is not None
    monkeypatch.setenv("TOOLOUT_HEDGE_ENABLED", "false")
    assert ModelCatalog(Settings(), None).hedger is None
