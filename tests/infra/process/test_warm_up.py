"""Warm-ups wait, run in order in the background, and one that fails does not stop the next; the API and a
worker leave litellm, DuckDB and boto3 out of their start-up (`toolout dev`'s banner on 2 cores waited for them)."""

from __future__ import annotations

import subprocess
import sys
import time

from infra.process import warm_up

START_UP = """
import sys
from infra.settings import Settings
from {module} import {factory}
{factory}({args})
print(sorted(name for name in ("litellm", "duckdb", "boto3") if name in sys.modules))
"""


def test_steps_run_in_order_after_the_delay_and_a_failure_does_not_stop_the_rest() -> None:
    ran: list[tuple[str, float]] = []
    began = time.monotonic()

    def fails() -> None:
        ran.append(("fails", time.monotonic() - began))
        raise RuntimeError("no model map")

    thread = warm_up.later("test-warm-up", fails, lambda: ran.append(("next", time.monotonic() - began)), delay=0.2)
    assert thread.daemon
    thread.join(5)
    assert [name for name, _ in ran] == ["fails", "next"]
    assert ran[0][1] >= 0.2


def imported_at_start(module: str, factory: str, args: str, redis_url: str) -> str:
    env = {"TOOLOUT_REDIS_URL": redis_url, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": ""}
    code = START_UP.format(module=module, factory=factory, args=args)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_api_starts_without_litellm_duckdb_or_boto3(redis_url: str) -> None:
    assert imported_at_start("api.app", "create_app", "", redis_url) == "[]"


def test_a_worker_is_built_without_litellm(redis_url: str) -> None:
    assert "litellm" not in imported_at_start("workers.celery.main", "build_worker", "Settings()", redis_url)
