"""Every test that stores content through the API or runs a job over it runs on a real blob store, or says why not.

The table comes from collecting the store-facing suites (tests/fixtures/store_check.py), in this run's own
collection when it has them all or else with `--store-report`: each test function with the stores its cases
run on (`memory`, `file`, `s3`) and its twin reason. It is printed (`pytest -s` shows it) and the test fails
naming any function that runs on the in-memory twin alone
without `@pytest.mark.twin("why")`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.fixtures.store_check import COLLECTED, table_of_this_run, unexplained

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["tests/api", "tests/workers", "tests/toolout", "tests/integration"]


def test_no_store_facing_test_runs_on_the_memory_twin_alone_without_saying_why(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    table = table_of_this_run(request.config, SUITES) or collected_apart(tmp_path)
    print(f"\n{len(table)} store-facing test functions; stores they run on:")
    for stores, count in sorted(Counter(" + ".join(row["stores"]) for row in table.values()).items()):
        print(f"  {count:4d}  {stores}")
    for name, row in table.items():
        print(f"{' + '.join(row['stores']):<20} {name}" + (f"  -- twin: {row['reason']}" if row["reason"] else ""))
    assert any(row["stores"] == ["file", "memory", "s3"] for row in table.values()), "no test runs on every store"
    assert unexplained(table) == []


def collected_apart(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The table from a collection of SUITES in a pytest of its own, for a run that did not collect them all."""
    report = tmp_path / "stores.json"
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "--collect-only", f"--store-report={report}", *SUITES]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(report.read_text()))


def test_a_run_that_collected_every_suite_reads_its_own_table_and_a_narrower_one_collects_apart(
    request: pytest.FixtureRequest,
) -> None:
    def run(*args: str) -> pytest.Config:
        return cast(pytest.Config, SimpleNamespace(rootpath=ROOT, stash=request.config.stash, args=list(args)))

    own = table_of_this_run(run("tests"), SUITES)
    assert own is not None and COLLECTED in request.config.stash, "a run over all of tests/ keeps its table"
    assert table_of_this_run(run(str(ROOT)), SUITES) == own
    assert all(name.startswith(tuple(SUITES)) for name in own), "only the store-facing suites"
    narrower = run("tests/api", "tests/workers/job/test_drive.py::test_x")
    assert table_of_this_run(narrower, SUITES) is None, "tests/toolout and tests/integration were not collected"
