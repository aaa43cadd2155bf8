"""The soak's 60-second form (docs/operations.md §Soak): `python -m bench.soak.run` on a stack of its own (private
Redis, offline model, API, two workers as processes), 4 agents of which 2 delete their session mid-job. It exits 1 on
any failed request, any traceback or ERROR line in any log, RSS growth past its bound after warm-up, or
Redis keys left behind; its report is printed (run with `-s`) and its numbers checked here too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.bench_runs import run_bench

pytestmark = pytest.mark.integration


def test_a_minute_of_agents_ending_sessions_mid_job_is_clean(tmp_path: Path) -> None:
    args = ["--agents", "4", "--minutes", "1", "--warmup-minutes", "0.25", "--sample-seconds", "5"]
    run, result = run_bench("bench.soak.run", args, tmp_path)
    print(run.stdout[-6000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert result["errors"] == 0 and result["log_problems"] == {} and result["keys_left_behind"] == []
    assert result["keys_left_without_ttl"] == [] and result["keys_left_with_ttl_of_deleted"] == []
    assert set(result["rss_slope_mb_per_min"]) >= {"api", "worker-1", "worker-2"}
    parts = result["rss"][-1]["api_parts"]  # where the API's memory sits, to tell a step from a climb
    assert parts["anon_mb"] > 0 and parts["file_mb"] > 0 and parts["threads"] >= 2 and parts["fds"] > 0
    assert result["deleted_mid_job"] > 0 and result["sessions"] > result["deleted_mid_job"]
    assert set(result["operations"]) >= {"store", "resolve", "grep", "submit", "cancel", "wait", "delete_session"}


def test_snapshots_say_what_grew_in_the_api(tmp_path: Path) -> None:
    args = ["--agents", "2", "--minutes", "0.5", "--warmup-minutes", "0.1", "--sample-seconds", "5", "--snapshots"]
    run, result = run_bench("bench.soak.run", args, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    grown = result["grown"]
    assert any(".py:" in line and "size=" in line for line in grown), grown  # tracemalloc's lines, by source line
    assert any(line.endswith(" objects") for line in grown), grown  # and gc's types
    assert "what grew in the API after the warm-up" in run.stdout
