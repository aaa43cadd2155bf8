"""bench/quality.py's quick subset, in CI: every scenario answered every way, and `query` exact where it must be.

The harness runs in this process on the embedded mode (the service's job pipeline) against the
offline model. Whether `query` must be right is decided by the API's own OpenAPI document: once the
REST mode enum offers `query`, the exact-answer scenarios are asserted, never skipped.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import quality
from tests.fixtures.api_server import api_settings
from tests.fixtures.offline_model import OfflineModelServer
from toolout.local import LocalToolOut

pytestmark = pytest.mark.integration  # a model server and ~150 model calls: with the other server tests


def api_modes() -> list[str]:
    """The modes POST /v1/extractions accepts, as the API's OpenAPI document states them."""
    from api.app import create_app

    schema = create_app(api_settings("redis://127.0.0.1:6379/15", "memory://")).openapi()
    return list(schema["components"]["schemas"]["Mode"]["enum"])


@pytest.fixture(scope="module")
def rows(offline_model: OfflineModelServer) -> list[Any]:
    with LocalToolOut(offline_model.model, api_base=offline_model.base_url, api_key="offline") as local:
        return list(quality.run_suite(local, quality.QUICK_BYTES))


def test_every_scenario_is_answered_every_way(rows: list[Any]) -> None:
    names = [s.name for s in quality.scenarios()]
    assert len(names) >= 12
    assert [(r.scenario, r.strategy) for r in rows] == [(n, s) for n in names for s in quality.ALL]
    errors = [(r.scenario, r.strategy, r.note) for r in rows if r.status == "error"]
    assert not errors
    ran = [r for r in rows if r.status in ("right", "wrong") and not r.used.startswith("truncate")]
    assert len(ran) >= len(names) * (len(quality.ALL) - 2)  # all but truncate, and query (n/a or a fallback)
    assert all(r.calls >= 1 and r.input_tokens > 0 for r in ran), [r for r in ran if not r.calls]


def test_the_table_shows_each_strategy_and_its_totals(rows: list[Any]) -> None:
    table = quality.markdown(rows, quality.ALL)
    assert sum(line.startswith("|") for line in table.splitlines()) == len(quality.scenarios()) + 3
    assert all(f" {s} |" in table.splitlines()[0] for s in quality.ALL)
    assert "| **total** |" in table


def test_the_baselines_and_full_chunked_find_what_they_can(rows: list[Any]) -> None:
    """A floor that catches a broken harness (a checker that never matches, a baseline that never answers)."""
    right = {(r.scenario, r.strategy) for r in rows if r.status == "right"}
    assert ("orders-lookup", "full-chunked") in right
    assert ("log-incidents", "preview-2KB+RG") in right
    assert ("orders-absent", "head+tail-10K") in right


def test_query_answers_the_exact_scenarios(rows: list[Any]) -> None:
    if "query" not in api_modes():
        pytest.skip("this build's API offers no mode=query (OpenAPI Mode enum): nothing to hold exact yet")
    query = {r.scenario: r for r in rows if r.strategy == "query"}
    exact = [s.name for s in quality.scenarios() if s.exact]
    assert exact and all(query[name].status == "right" for name in exact), {
        name: (query[name].status, query[name].note or query[name].answer[:300]) for name in exact
    }
