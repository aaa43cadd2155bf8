"""The offline model's own provider limits (`--rpm`, `--tpm`): 429 past them, as a provider answers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from offline_model import OfflineModelConfig
from offline_model.limits import ProviderLimits
from offline_model.server import create_app

BODY = {"model": "toolout-offline", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 50}


def test_requests_past_the_rpm_are_refused_until_the_bucket_refills() -> None:
    limits = ProviderLimits(rpm=2)
    assert limits.admit(0, now=0.0) == 0 and limits.admit(0, now=0.0) == 0
    assert limits.admit(0, now=0.0) == pytest.approx(30.0)
    assert limits.admit(0, now=30.0) == 0
    assert (limits.counts.admitted, limits.counts.rate_limited) == (3, 1)


def test_tokens_per_minute_charge_prompt_and_max_tokens() -> None:
    limits = ProviderLimits(tpm=100)
    assert limits.admit(80, now=0.0) == 0
    assert limits.admit(40, now=0.0) == pytest.approx(12.0)  # 20 left, 20 more at 100/60 a second


def test_the_server_answers_429_past_its_rpm_and_counts_it() -> None:
    client = TestClient(create_app(OfflineModelConfig(rpm=2)))
    answers = [client.post("/v1/chat/completions", json=BODY) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert int(answers[2].headers["retry-after-ms"]) > 1000
    assert answers[2].json()["error"]["type"] == "rate_limit_error"
    stats = client.get("/stats").json()
    assert (stats["rpm"], stats["admitted"], stats["rate_limited"]) == (2, 2, 1)


def test_the_limits_come_from_the_environment() -> None:
    config = OfflineModelConfig.from_env({"TOOLOUT_OFFLINE_RPM": "120", "TOOLOUT_OFFLINE_TPM": "9000"})
    assert (config.rpm, config.tpm) == (120, 9000)
    with pytest.raises(ValueError, match="rpm"):
        OfflineModelConfig(rpm=-1)
