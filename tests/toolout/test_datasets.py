"""The generated tool outputs the demo, tests and benchmarks use: deterministic, streamed, with their facts planted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolout.devstack.datasets import (
    CORPUS_ENV,
    ORDER_COUNT_REQUEST,
    ORDER_COUNT_STATUS,
    ORDER_NEEDLE,
    PLANTED_ORDER,
    POOL_INCIDENT,
    CorpusMissing,
    corpus_dir,
    json_orders,
    order_totals,
    service_log,
)


def test_json_orders_is_one_minified_array_of_the_asked_size_with_the_planted_order() -> None:
    blocks = list(json_orders(300_000, block_bytes=64 << 10))
    data = b"".join(blocks)
    assert len(blocks) > 1 and all(len(block) <= 70 << 10 for block in blocks)
    assert 300_000 <= len(data) < 301_000 and b"\n" not in data
    orders = json.loads(data)
    planted = [order for order in orders if order["id"] == ORDER_NEEDLE.needle]
    assert len(planted) == 1 and "failure_reason" in planted[0]
    assert 0.55 < data.index(ORDER_NEEDLE.needle.encode()) / len(data) < 0.7


def test_service_log_plants_each_incident_once_spread_through_the_log() -> None:
    data = b"".join(service_log(400_000, incidents=3)).decode()
    lines = data.splitlines(keepends=True)
    starts = [sum(map(len, lines[:i])) for i, line in enumerate(lines) if POOL_INCIDENT.needle in line]
    assert len(starts) == 3 and len(data) >= 400_000
    assert [round(start / len(data), 2) for start in starts] == [0.25, 0.5, 0.75]
    assert all(line.startswith("2026-11-") and line.endswith("\n") for line in lines)


def test_outputs_are_deterministic_per_seed() -> None:
    assert b"".join(json_orders(50_000)) == b"".join(json_orders(50_000))
    assert b"".join(service_log(50_000, seed=1)) != b"".join(service_log(50_000, seed=2))


def test_order_totals_counts_what_the_generated_json_holds() -> None:
    orders = json.loads(b"".join(json_orders(200_000)))
    refunded = [order for order in orders if order["status"] == ORDER_COUNT_STATUS]
    assert order_totals(200_000) == (len(refunded), sum(order["total_cents"] for order in refunded))
    assert order_totals(200_000, "payment_failed") == (1, PLANTED_ORDER["total_cents"])
    assert ORDER_COUNT_STATUS in ORDER_COUNT_REQUEST and len(refunded) > 10


def _corpus(at: Path) -> Path:
    at.mkdir(parents=True)
    (at / "README.md").write_text("# corpus\n")
    return at


def test_the_corpus_is_found_beside_the_checkout_by_default(tmp_path: Path) -> None:
    found = _corpus(tmp_path / "shared" / "corpus")
    assert corpus_dir(tmp_path / "repo", {}) == found


def test_the_environment_names_another_corpus(tmp_path: Path) -> None:
    _corpus(tmp_path / "shared" / "corpus")
    other = _corpus(tmp_path / "elsewhere")
    assert corpus_dir(tmp_path / "repo", {CORPUS_ENV: str(other)}) == other


def test_a_missing_corpus_is_none_on_a_workstation_and_an_error_in_ci(tmp_path: Path) -> None:
    assert corpus_dir(tmp_path / "repo", {"CI": "false"}) is None
    with pytest.raises(CorpusMissing, match=CORPUS_ENV):
        corpus_dir(tmp_path / "repo", {"CI": "true"})
