"""Every test that stores content through the API or runs a job over it runs on a real blob store, or says why not.

The table comes from collecting the store-facing suites with `--store-report` (tests/fixtures/store_check.py):
each test function with the stores its cases run on (`memory`, `file`, `s3`) and its twin reason. It is
printed (`pytest -s` shows it) and the test fails naming any function that runs on the in-memory twin alone
without `@pytest.mark.twin("why")`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.fixtures.store_check import unexplained

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["tests/api", "tests/workers", "tests/toolout", "tests/integration"]


def test_no_store_facing_test_runs_on_the_memory_twin_alone_without_saying_why(tmp_path: Path) -> None:
    report = tmp_path / "stores.json"
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "--collect-only", f"--store-report={report}", *SUITES]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = json.loads(report.read_text())
    print(f"\n{len(table)} store-facing test functions; stores they run on:")
    for stores, count in sorted(Counter(" + ".join(row["stores"]) for row in table.values()).items()):
        print(f"  {count:4d}  {stores}")
    for name, row in table.items():
        print(f"{' + '.join(row['stores']):<20} {name}" + (f"  -- twin: {row['reason']}" if row["reason"] else ""))
    assert any(row["stores"] == ["file", "memory", "s3"] for row in table.values()), "no test runs on every store"
    assert unexplained(table) == []
