"""The bursts bench (`python -m bench.soak.bursts`, docs/operations.md §Memory over hours) runs in its small form:
two private stacks, one burst each, the API's peak and what stayed measured from /proc."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.bench_runs import run_bench

pytestmark = pytest.mark.integration


def test_a_small_burst_on_each_bound_is_measured(tmp_path: Path) -> None:
    args = ["--widths", "6", "--uploads", "2", "--rest-seconds", "1"]
    run, result = run_bench("bench.soak.bursts", args, tmp_path)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]  # 1: a MISS, not a crash
    assert len(result["runs"]) == 2 and set(result["ratios"]) == {"peak_mb", "after_mb"}
    for stack in result["runs"].values():
        (burst,) = stack["bursts"]
        assert burst["width"] == 6 and burst["peak_mb"] >= stack["warm_mb"] * 0.9 > 0
        assert burst["at_peak"]["threads"] >= 2 and burst["after"]["fds"] > 0
    assert ("PASS" in run.stdout) == (run.returncode == 0)


def test_a_small_upload_burst_is_measured_before_at_peak_and_after(tmp_path: Path) -> None:
    """`python -m bench.soak.upload_burst` (200 uploads of 2.3 MB in its full form) in a small form."""
    args = ["--width", "6", "--body-mb", "0.3", "--rest-seconds", "1"]
    run, result = run_bench("bench.soak.upload_burst", args, tmp_path)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]  # 1: a MISS, not a crash
    assert result["width"] == 6 and result["body_bytes"] > 250_000
    assert result["peak_mb"] >= result["before_mb"] * 0.9 > 0 and result["after_mb"] > 0
    assert ("PASS" in run.stdout) == (run.returncode == 0)
