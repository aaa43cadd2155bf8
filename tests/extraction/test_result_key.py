"""The result cache's key: equal only when everything that shapes the answer is equal."""

from __future__ import annotations

import pytest

from extraction import result_key
from extraction.result_key import prompt_version
from extraction.texts import prompts

BASE = {
    "tenant": "acme",
    "sha256": "ab" * 32,
    "extract": "every ERROR line",
    "mode": "auto",
    "tool_name": "logs.fetch",
    "tool_args": '{"service": "billing"}',
    "model": "openai/gpt-4o-mini",
    "version": "0123456789abcdef",
}


def test_the_same_request_has_the_same_key() -> None:
    assert result_key.result_key(**BASE) == result_key.result_key(**dict(BASE))


@pytest.mark.parametrize("field", sorted(BASE))
def test_any_difference_is_another_key(field: str) -> None:
    assert result_key.result_key(**{**BASE, field: BASE[field] + "x"}) != result_key.result_key(**BASE)


def test_the_prompt_version_follows_the_parameters() -> None:
    settings = {"chunk_overlap": 0.1, "model_context_tokens": 128_000}
    assert prompt_version(settings) == prompt_version(dict(settings))
    assert prompt_version(settings) != prompt_version({**settings, "chunk_overlap": 0.2})


def test_the_prompt_version_follows_the_prompt_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    before = prompt_version({})
    monkeypatch.setattr(prompts, "REDUCE_SYSTEM_TEMPLATE", prompts.REDUCE_SYSTEM_TEMPLATE + "\nBe brief.")
    assert prompt_version({}) != before


def test_the_prompt_version_follows_the_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    before = prompt_version({})
    monkeypatch.setattr(result_key, "PIPELINE_EPOCH", result_key.PIPELINE_EPOCH + 1)
    assert prompt_version({}) != before
