"""The quality bench's quick subset (`python -m bench.quality.run --quick`), in CI: every scenario answered
every way, and `query` exact where it must be.

The quick subset holds the generated outputs at 120 KB and a few questions on the real corpus (one per content
kind small enough to run every strategy in seconds: a loghub log, a CSV, a documentation page). The corpus is
found beside the checkout (`toolout.devstack.datasets.corpus_dir`); without it the corpus checks skip, except under
`CI=true`, where the bench itself fails on the missing corpus and so does every test here.

The bench runs as a subprocess, as a user runs it, on the embedded mode (the service's job pipeline) against
this session's offline model, and hands its rows back as JSON. Whether `query` must be right is decided by the
API's own OpenAPI document: once the REST mode enum offers `query`, the exact-answer scenarios are asserted,
never skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.fixtures.api_server import api_settings
from tests.fixtures.offline_model import OfflineModelServer
from toolout.devstack.datasets import corpus_dir

pytestmark = [
    pytest.mark.integration,  # a model server and ~200 model calls: with the other server tests
    pytest.mark.timeout(1500),  # the bench's process (below) is given 1440 s: its own failure, with its output, first
]

ROOT = Path(__file__).resolve().parents[2]


def api_modes() -> list[str]:
    """The modes POST /v1/extractions accepts, as the API's OpenAPI document states them."""
    from api.app import create_app

    schema = create_app(api_settings("redis://127.0.0.1:6379/15", "memory://")).openapi()
    return list(schema["components"]["schemas"]["Mode"]["enum"])


@pytest.fixture(scope="module")
def report(offline_model: OfflineModelServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bench's JSON report; exit 1 only says `query` missed an exact answer, which a test below judges."""
    out = tmp_path_factory.mktemp("quality") / "report.json"
    model = ["--model", offline_model.model, "--api-base", offline_model.base_url, "--api-key", "offline"]
    argv = [sys.executable, "-m", "bench.quality.run", "--quick", *model, "--json", str(out)]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1440)
    assert done.returncode in (0, 1) and out.exists(), (done.stdout[-3000:], done.stderr[-3000:])
    return dict(json.loads(out.read_text()))


@pytest.fixture(scope="module")
def rows(report: dict[str, Any]) -> list[Any]:
    return [SimpleNamespace(**row) for row in report["rows"]]


@pytest.fixture(scope="module")
def strategies(report: dict[str, Any]) -> list[str]:
    return list(report["strategies"])


def test_every_scenario_is_answered_every_way(report: dict[str, Any], rows: list[Any], strategies: list[str]) -> None:
    names = [s["name"] for s in report["scenarios"]]
    assert len(names) >= 12
    assert [(r.scenario, r.strategy) for r in rows] == [(n, s) for n in names for s in strategies]
    errors = [(r.scenario, r.strategy, r.note) for r in rows if r.status == "error"]
    assert not errors
    ran = [r for r in rows if r.status in ("right", "wrong") and not r.used.startswith("truncate")]
    assert len(ran) >= len(names) * (len(strategies) - 2)  # all but truncate, and query (n/a or a fallback)
    assert all(r.calls >= 1 and r.input_tokens > 0 for r in ran), [r for r in ran if not r.calls]


def test_the_table_shows_each_strategy_and_its_totals(report: dict[str, Any], strategies: list[str]) -> None:
    table = report["markdown"]
    assert sum(line.startswith("|") for line in table.splitlines()) == len(report["scenarios"]) + 3
    assert all(f" {s} |" in table.splitlines()[0] for s in strategies)
    assert "| **total** |" in table


def test_the_bench_answers_every_strategy_and_both_baselines(strategies: list[str]) -> None:
    """The subprocess ran the full set a user gets by default, not a subset."""
    assert strategies == ["auto", "query", "full-chunked", "read-grep", "truncate", "head+tail-10K", "preview-2KB+RG"]


def test_the_baselines_and_full_chunked_find_what_they_can(rows: list[Any]) -> None:
    """A floor that catches a broken harness (a checker that never matches, a baseline that never answers)."""
    right = {(r.scenario, r.strategy) for r in rows if r.status == "right"}
    assert ("orders-lookup", "full-chunked") in right
    assert ("log-incidents", "preview-2KB+RG") in right
    assert ("orders-absent", "head+tail-10K") in right


def test_query_answers_the_exact_scenarios(report: dict[str, Any], rows: list[Any]) -> None:
    if "query" not in api_modes():
        pytest.skip("this build's API offers no mode=query (OpenAPI Mode enum): nothing to hold exact yet")
    query = {r.scenario: r for r in rows if r.strategy == "query"}
    exact = [s["name"] for s in report["scenarios"] if s["exact"]]
    assert exact and all(query[name].status == "right" for name in exact), {
        name: (query[name].status, query[name].note or query[name].answer[:300]) for name in exact
    }


TOOLOUT = ["auto", "query", "full-chunked", "read-grep", "truncate"]


def test_every_toolout_answer_carries_evidence_and_every_quote_verifies(
    report: dict[str, Any], rows: list[Any]
) -> None:
    """With the offline model, which quotes only what it was shown, every quote checks out, whatever the strategy."""
    mine = [r for r in rows if r.strategy in TOOLOUT and r.status in ("right", "wrong")]
    assert mine and all(r.evidence for r in mine), [(r.scenario, r.strategy) for r in mine if not r.evidence]
    assert sum(r.quotes for r in mine) > len(mine) // 2
    assert all(r.verified == r.quotes for r in mine), [(r.scenario, r.strategy) for r in mine if r.verified != r.quotes]
    assert report["evidence"].startswith(f"evidence: {len(mine)}/{len(mine)} answers (100.0%)")


def test_the_overhead_of_evidence_is_measured_beside_each_answer(report: dict[str, Any], rows: list[Any]) -> None:
    """Each toolout job ran again with evidence off: its tokens and seconds are the baseline printed beside it."""
    mine = [r for r in rows if r.strategy in TOOLOUT and r.status in ("right", "wrong")]
    assert all(r.plain_tokens is not None and r.plain_seconds is not None for r in mine)
    full = [r for r in mine if r.strategy == "full-chunked"]
    assert sum(r.input_tokens for r in full) > sum(r.plain_tokens for r in full)  # the line numbers cost tokens
    assert "evidence overhead over" in report["evidence"] and "input tokens" in report["evidence"]


CORPUS_KINDS = {"log (corpus)", "CSV (corpus)", "HTML (corpus)"}
"""The quick subset's kinds: the 2 to 3 MB weather CSV and GeoJSON take minutes per strategy (full runs only)."""


@pytest.fixture(scope="module")
def corpus_names(report: dict[str, Any]) -> list[str]:
    if corpus_dir(ROOT) is None:  # under CI=true this raises: a missing corpus fails, never skips
        pytest.skip("no corpus beside the checkout: the quick run had no corpus scenarios")
    return [s["name"] for s in report["scenarios"] if s["source"] == "corpus"]


def test_the_quick_run_asks_the_corpus_once_per_kind(report: dict[str, Any], corpus_names: list[str]) -> None:
    kinds = [s["kind"] for s in report["scenarios"] if s["name"] in corpus_names]
    assert sorted(kinds) == sorted(CORPUS_KINDS)


def test_the_kinds_table_shows_generated_and_real_content(report: dict[str, Any], corpus_names: list[str]) -> None:
    shown = {line.split(" | ")[0].lstrip("| ") for line in report["kinds"].splitlines()[2:]}
    assert shown >= {*CORPUS_KINDS, "JSON array (generated)", "log (generated)"}, shown


def test_the_corpus_scenarios_are_answered_and_some_found(rows: list[Any], corpus_names: list[str]) -> None:
    """A floor on real content: the first 'Directory index forbidden' in the Apache log is one line to find."""
    mine = [r for r in rows if r.scenario in corpus_names]
    assert mine and not [r for r in mine if r.status == "error"]
    right = {(r.scenario, r.strategy) for r in mine if r.status == "right"}
    assert {("apache-forbidden", "full-chunked"), ("apache-forbidden", "read-grep")} <= right
