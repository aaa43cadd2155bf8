"""An output kept inline in its record (no blob at all) is extracted from like any other: every strategy."""

from __future__ import annotations

import pytest

from extraction.documents.lines import build_line_index
from extraction.documents.stats import measure
from infra.outputs.storing import UploadMeta, WriteOptions, store_output
from infra.outputs.versions import BytesSource
from infra.stores.jobs import JobStatus
from infra.stores.records import OutputRecord
from tests.workers.conftest import needle_model, submit
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from tests.workers.job.test_read_grep import LOG, grepping_model
from workers.job import context
from workers.job.agent import run_read_grep
from workers.job.runtime import Runtime
from workers.job.steps import ReadGrep

pytestmark = pytest.mark.twin("inline outputs live in the record, not in a blob store")


def store_inline(rt: Runtime, data: bytes) -> OutputRecord:
    """Through the one storing path, with an inline threshold above the document's size."""
    session = rt.records.sessions.create_session()

    def no_blob(key: str) -> None:
        raise AssertionError(f"an inline output must not write a blob ({key})")

    record = store_output(
        rt.blobs,
        rt.records,
        session,
        UploadMeta("logs.fetch", '{"q": 1}'),
        measure([data]),
        build_line_index([data]),
        no_blob,
        options=WriteOptions(inline_max_bytes=len(data)),
        source=BytesSource(data),
    )
    assert record.inline == data and not rt.blobs.exists(record.blob_key) and record.name == "logs_fetch_1"
    return record


def test_full_chunked_over_an_inline_output(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    job = submit(rt, store_inline(rt, document()), "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and NEEDLE in done.result and done.chunks_total > 1


def test_read_grep_and_truncate_over_an_inline_output(make_runtime) -> None:
    rt = make_runtime(grepping_model())
    output = store_inline(rt, LOG.encode())
    job = submit(rt, output, "connection pool incidents", mode="read-grep")
    assert isinstance(context.start(rt, job.id), ReadGrep)
    run_read_grep(rt, job.id)
    assert "ERROR billing: connection pool exhausted" in rt.jobs.records.get(job.id).result
    truncated = submit(rt, output, "anything", mode="truncate")
    context.start(rt, truncated.id)
    result = rt.jobs.records.get(truncated.id).result
    assert LOG[:100] in result and "bytes truncated" in result
