"""Hostile SQL through the real `query` job on the service (issue 28's done-when): API, a Celery worker, Redis,
and a scripted model (`tests.fixtures.scripted_model`) that plays an injected sub-agent sending the adversarial
suite's cases as Query calls.

Every job succeeds; no tool result the model reads shows anything outside the output (the blob or temp
directories, '/root', a setting, a planted environment value, another output's data); the worker's peak RSS
stays under 1.5 GB and it is the same process at the end (the queries' memory is their child process's); a
benign `SELECT count(*) … -- comment` answers; and two documents whose names collide once flattened answer two
questions each, the second within 30 s of the first.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.stores.records import blob_key
from tests.fixtures.broker import broker_env
from tests.fixtures.scripted_model import ScriptedModel, serving
from tests.fixtures.servers import unavailable
from tests.infra.query import test_adversarial as suite
from toolout.devstack import processes
from toolout.devstack.stack import Stack, answering_worker, launch, offline_env, private_redis
from workers.job.query import kept_sql

pytestmark = pytest.mark.integration

PLANTED = f"planted-{uuid.uuid4().hex}"
OTHER_MARKER = f"other-output-{uuid.uuid4().hex[:12]}"
ROWS = 3000
RSS_BOUND_MB = 1536
PER_JOB = 6
WAVE = 12  # jobs in flight at once: under the tenant's cap of live jobs (16)


def ours(sql: str) -> str:
    """The suite's table is `orders`; an output stored through the API loads as `records`."""
    return sql.replace("orders", "records")


def cases(other_output: Path) -> list[str]:
    """Every query of the adversarial suite: file and URL reads, settings and catalog reads, shadowing CTEs,
    statements, several statements, odd text (surrogates, NUL, long SQL, deep expressions), huge values,
    another output's tables and files; and reads of this stack's own other output and planted variable."""
    picked = [
        *suite.FILE_READS,
        *suite.URL_READS,
        *[f"SELECT {s}" for s in suite.SCALARS],
        *[f"SELECT * FROM {f}" for f in suite.CATALOG_FUNCTIONS],
        *[f"SELECT * FROM {t}" for t in suite.CATALOG_TABLES],
        *suite.SHADOWING,
        *suite.STATEMENTS,
        *suite.SEVERAL,
        *suite.TEXT,
        *suite.HUGE,
        *suite.OTHER_OUTPUT,
        "SELECT getenv('HOSTILE_PLANTED')",
        f"SELECT * FROM read_json('{other_output}')",
        f"SELECT * FROM read_parquet('{other_output}.duckdb/*.parquet')",
        f"SELECT * FROM '{other_output}'",
    ]
    return [ours(sql) for sql in picked]


@pytest.fixture(scope="module")
def hostile_stack(tmp_path_factory) -> Iterator[tuple[Stack, ScriptedModel]]:
    root = tmp_path_factory.mktemp("hostile-stack")
    model = ScriptedModel(batches=[])
    with serving(model) as model_url:
        redis_port, api_port = processes.free_port(), processes.free_port()
        redis_url, logs = f"redis://127.0.0.1:{redis_port}/0", root / "logs"
        env = {
            **offline_env(root, redis_url, model_url),
            "TOOLOUT_MODEL": "openai/toolout-scripted",
            "TOOLOUT_QUERY_TEMP_DIR": str(root / "query-temp"),
            "TOOLOUT_QUERY_STATEMENT_TIMEOUT_SECONDS": "2",
            "TOOLOUT_QUERY_PROCESS_CPU_SECONDS": "10",
            "TOOLOUT_WORKER_CONCURRENCY": "4",
            "HOSTILE_PLANTED": PLANTED,
            **broker_env("hostile"),
        }
        (root / "query-temp").mkdir()
        stack = Stack("hostile", f"http://127.0.0.1:{api_port}", redis_url, env, logs)
        try:
            stack.redis_process = private_redis(redis_port, root)
            services = [processes.api(api_port, env, logs), answering_worker("hostile-worker", env, logs)]
            launch(stack, services)
        except RuntimeError as exc:
            unavailable(f"the hostile stack did not start: {exc}")
        try:
            yield stack, model
        finally:
            stack.stop()


def peak_rss_mb(pid: int) -> float:
    """The process's high-water RSS (VmHWM), its own pages only: a query's child process is another process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def store_json(client: Any, session: str, data: Any, tool: str) -> dict[str, Any]:
    return dict(client.store(session, json.dumps(data).encode(), tool_name=tool, content_type="application/json"))


def without_what_the_model_wrote(text: str, sqls: list[str]) -> str:
    """A refusal may quote the statement it refuses ("unknown table '/root/.ssh/id_rsa'"): the model wrote that
    path itself, so it is no leak. Every string literal of the cases is cut out before looking for leaks."""
    literals = sorted({lit for sql in sqls for lit in re.findall(r"'([^']{4,})'", sql)}, key=len, reverse=True)
    for literal in literals:
        text = text.replace(literal, "<what the model wrote>")
    return text


def test_hostile_sql_on_the_service_stays_inside_the_output(hostile_stack) -> None:
    stack, model = hostile_stack
    worker = stack.service("hostile-worker")
    assert worker.process is not None
    pid = worker.process.pid
    rows = [{"id": i, "status": "paid" if i % 3 else "failed", "note": f"row {i}"} for i in range(ROWS)]
    with stack.client() as client:
        session = client.create_session()
        other = store_json(client, session, [{"v": OTHER_MARKER, "i": i} for i in range(2000)], "secret.list")
        other_path = Path(stack.env["TOOLOUT_BLOB_STORE"].removeprefix("file://")) / blob_key(session, other["handle"])
        sqls = cases(other_path)
        model.batches[:] = [sqls[i : i + PER_JOB] for i in range(0, len(sqls), PER_JOB)]
        meta = store_json(client, session, rows, "orders.list")
        started = time.monotonic()
        jobs = []
        for wave in range(0, len(model.batches), WAVE):
            batches = range(wave, min(wave + WAVE, len(model.batches)))
            ids = [client.submit(meta["handle"], f"hostile batch {n}", "query")["id"] for n in batches]
            jobs += [client.wait(job_id, timeout=300) for job_id in ids]
        hostile_seconds = time.monotonic() - started
        benign = client.wait(client.submit(meta["handle"], "how many rows are there", "query")["id"], timeout=120)
    assert all(job["status"] == "succeeded" and job["mode_used"] == "query" for job in jobs), [
        (j["status"], j["mode_used"], j.get("error")) for j in jobs if j["status"] != "succeeded"
    ]
    ran = {sql for job in jobs for sql in job["queries"]}
    missing = {sql for sql in sqls if kept_sql(sql) not in ran}
    assert len(sqls) >= 250 and missing <= {"", "   ", ";"}, missing  # a blank call is refused before it runs
    forbidden = [str(stack.log_dir.parent), "/root", "secret_directory", "root:x:0:0", PLANTED, OTHER_MARKER]
    echoed = [without_what_the_model_wrote(text, sqls) for text in model.seen]
    leaks = [(word, text[:300]) for text in echoed for word in forbidden if word in text]
    assert not leaks, leaks
    assert benign["status"] == "succeeded" and f"\n{ROWS}" in benign["result"], benign["result"]
    peak = peak_rss_mb(pid)
    print(
        f"\nhostile query: {len(sqls)} cases in {len(jobs)} jobs, {hostile_seconds:.1f}s; "
        f"{len(model.seen)} tool results read; worker peak RSS {peak:.0f} MB"
    )
    assert worker.process.poll() is None and stack.service("hostile-worker").process.pid == pid, "the worker died"
    assert peak < RSS_BOUND_MB


COLLIDING = {
    "root_total": {"root": [{"id": i, "name": f"n{i}"} for i in range(500)], "total": 5},
    "dotted": {"a.b": [{"x": i} for i in range(300)], "a": {"b": [{"y": i} for i in range(200)]}},
}


@pytest.mark.parametrize("name", sorted(COLLIDING))
def test_documents_whose_names_collide_answer_two_questions(hostile_stack, name: str) -> None:
    stack, _ = hostile_stack
    with stack.client() as client:
        session = client.create_session()
        meta = store_json(client, session, COLLIDING[name], f"{name}.get")
        first = client.wait(
            client.submit(meta["handle"], "how many rows in the first table", "query")["id"], timeout=120
        )
        first_ended = time.time()
        second = client.wait(client.submit(meta["handle"], "count the first table again", "query")["id"], timeout=120)
        latency = second["finished_at"] - first_ended
    print(f"\n{name}: tables {first.get('query_tables')}; second question ended {latency:.1f}s after the first")
    for job in (first, second):
        assert job["status"] == "succeeded" and job["mode_used"] == "query", job
        assert "Error" not in job["result"], job["result"]
    assert latency < 30
