"""The child process: a query past a limit kills its child, never the caller; the next call gets a fresh one."""

from __future__ import annotations

import json
import os
import pickle
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from extraction.documents.structured import StructuredKind
from infra.query import EngineLimits, LoadFailed, QueryRefused, TableFile
from infra.query.loading import load_tables
from infra.query.process import CHILD_ENVIRONMENT, Child, ChildLimit, ChildSandbox, load_in_child, take_child

CHILD_RSS_BOUND_MB = 600
LIMITS = EngineLimits(memory_limit_mb=256, threads=1, statement_timeout_seconds=5.0)


def tables(root: Path, rows: int = 2000) -> list[TableFile]:
    """A small output loaded as tables under `root`."""
    source = root / "content.json"
    source.write_text(json.dumps([{"id": i, "status": "paid" if i % 3 else "failed"} for i in range(rows)]))
    loaded = load_tables(source, StructuredKind.JSON, root / "out", LIMITS)
    return [TableFile(t.name, root / "out" / t.file, t.rows) for t in loaded]


@pytest.fixture
def files(tmp_path: Path) -> list:
    return tables(tmp_path)


@pytest.fixture
def box(files: list, tmp_path: Path) -> Iterator[ChildSandbox]:
    sandbox = ChildSandbox(files, LIMITS, tmp_path / "spill")
    yield sandbox
    sandbox.close()


def answers(box: ChildSandbox) -> None:
    assert box.query("SELECT count(*) FROM records", 5).rows == [(2000,)]


def test_a_huge_value_is_refused_inside_the_child_under_its_address_space(box: ChildSandbox) -> None:
    with pytest.raises(QueryRefused, match="more memory than it may use"):
        box.query("SELECT length(repeat('x', 2000000000))", 5)
    found = box.query("SELECT repeat('x', 20000000) AS s FROM range(51)", 50)
    assert len(found.rows) == 50 and {len(r[0]) for r in found.rows} == {LIMITS.max_cell_chars}
    assert box.peak_rss_kib / 1024 < CHILD_RSS_BOUND_MB
    answers(box)


def test_a_call_past_the_wall_clock_kills_the_child_and_the_next_call_has_a_fresh_one(box: ChildSandbox) -> None:
    child = take_child()
    child.call(
        ("open", [(t.name, t.path, t.rows) for t in box.tables], LIMITS, box.temp_dir), seconds=30, max_bytes=1 << 16
    )
    with pytest.raises(ChildLimit) as caught:
        child.call(("query", "SELECT count(*) FROM range(1000000000000)", 5), seconds=0.3, max_bytes=1 << 16)
    assert caught.value.limit == "time" and child.proc.returncode is not None
    first = box.pid
    answers(box)
    assert box.pid == first


def test_an_unexpected_error_is_a_tool_error_and_the_next_call_has_a_fresh_child(box: ChildSandbox) -> None:
    first = box.pid
    with pytest.raises(QueryRefused, match=r"the columns stopped: it failed \(CatalogException\)"):
        box.columns("no_such_table")  # not a model's SQL: DuckDB's error is not one `_guard` turns into a message
    assert box.pid is None, "a child whose state is unknown is not asked again"
    answers(box)
    assert box.pid not in (None, first)


def test_the_cpu_limit_ends_the_child_and_the_model_reads_which_limit(files: list, tmp_path: Path) -> None:
    limits = replace(LIMITS, statement_timeout_seconds=30.0, process_cpu_seconds=1.0)
    box = ChildSandbox(files, limits, tmp_path / "spill")
    first = box.pid
    with pytest.raises(QueryRefused, match="CPU seconds and its process was stopped"):
        box.query("SELECT count(*) FROM range(1000000000000)", 5)
    answers(box)
    assert box.pid not in (None, first) and os.getpid() != first
    box.close()


def test_an_answer_longer_than_its_bound_kills_the_child(box: ChildSandbox) -> None:
    child = take_child()
    child.call(
        ("open", [(t.name, t.path, t.rows) for t in box.tables], LIMITS, box.temp_dir), seconds=30, max_bytes=1 << 16
    )
    with pytest.raises(ChildLimit) as caught:
        child.call(("query", "SELECT repeat('x', 900) FROM range(40)", 50), seconds=10, max_bytes=1000)
    assert caught.value.limit == "output"


def test_a_load_past_its_limits_is_load_failed(tmp_path: Path) -> None:
    source = tmp_path / "big.ndjson"
    source.write_text("".join(f'{{"id": {i}, "s": "{"x" * 200}"}}\n' for i in range(200_000)))
    with pytest.raises(LoadFailed, match="loading"):
        load_in_child(source, StructuredKind.NDJSON, tmp_path / "out", replace(LIMITS, load_timeout_seconds=0.01))


def test_a_child_left_busy_by_an_interrupted_caller_is_killed_on_close(box: ChildSandbox) -> None:
    """A task time limit raised while the caller waits leaves the child running a query: close kills it
    at once instead of waiting for the query to end."""
    child = take_child()
    tables = [(t.name, t.path, t.rows) for t in box.tables]
    child.call(("open", tables, LIMITS, box.temp_dir), seconds=30, max_bytes=1 << 16)
    child.busy = True
    child.to_child.send_bytes(pickle.dumps(("query", "SELECT count(*) FROM range(1000000000000)", 5)))
    started = time.monotonic()
    child.close()
    assert child.proc.returncode is not None and time.monotonic() - started < 2


def test_the_child_inherits_none_of_the_workers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOUT_WEBHOOK_SECRET", "worker-secret-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
    child = Child.start()
    try:
        environ = Path(f"/proc/{child.proc.pid}/environ").read_bytes()
    finally:
        child.close()
    assert b"worker-secret-value" not in environ and b"aws-secret-value" not in environ
    assert set(dict(v.split(b"=", 1) for v in environ.split(b"\0") if v)) <= {n.encode() for n in CHILD_ENVIRONMENT}
