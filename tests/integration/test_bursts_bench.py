"""The bursts bench (`python -m bench.soak.bursts`, docs/operations.md §Memory over hours) runs in its small form:
two private stacks, one burst each, the API's peak and what stayed measured from /proc."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.servers import unavailable

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_a_small_burst_on_each_bound_is_measured(tmp_path: Path) -> None:
    if not shutil.which("redis-server"):
        unavailable("redis-server is not installed")
    out = tmp_path / "bursts.json"
    argv = [sys.executable, "-m", "bench.soak.bursts", "--widths", "6", "--uploads", "2", "--rest-seconds", "1"]
    run = subprocess.run([*argv, "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]  # 1: a MISS, not a crash
    result = json.loads(out.read_text())
    assert len(result["runs"]) == 2 and set(result["ratios"]) == {"peak_mb", "after_mb"}
    for stack in result["runs"].values():
        (burst,) = stack["bursts"]
        assert burst["width"] == 6 and burst["peak_mb"] >= stack["warm_mb"] * 0.9 > 0
        assert burst["at_peak"]["threads"] >= 2 and burst["after"]["fds"] > 0
    assert ("PASS" in run.stdout) == (run.returncode == 0)
