"""The query strategy's preload on the in-memory stores: tables kept at store time, loaded once per content."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from infra.errors import BackendUnavailable
from infra.query.loaded_forms import wants_preload
from infra.stores.jobs import JobStatus
from infra.stores.records import OutputRecord
from tests.workers.conftest import store_output
from tests.workers.job.test_query import ORDERS, offline_llm, run
from toolout.devstack.datasets import ORDER_NEEDLE
from workers.job.runtime import Runtime
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin(
    "preload races in the record store; the blob reads go through the contract-tested BlobStore"
)


def manifest(output: OutputRecord) -> str:
    return f"{output.blob_key}.duckdb/manifest.json"


def before_keeping(rt: Runtime, output: OutputRecord, meanwhile: Callable[[], object], *, fails: bool = False) -> None:
    """Run `meanwhile` (a deletion racing the keep) just before the output's tables' manifest is written; `fails`:
    that write then fails as a local store's does into a removed folder."""
    original = rt.blobs.put_bytes

    def put_bytes(key: str, data: bytes) -> int:
        if key == manifest(output):
            meanwhile()
            if fails:
                raise BackendUnavailable(f"local blob store failed at {key}: No such file or directory")
        return original(key, data)

    rt.blobs.put_bytes = put_bytes  # type: ignore[method-assign]


def count_raw_reads(rt: Runtime, *outputs: OutputRecord, delay: float = 0.0) -> tuple[list[str], threading.Event]:
    """Every read of the outputs' raw content (a load), each first block `delay` late; the event is set at the first."""
    raw = {o.blob_key for o in outputs}
    reads: list[str] = []
    reading = threading.Event()
    original = rt.blobs.iter_range

    def iter_range(key: str, *args, **kwargs) -> Iterator[bytes]:
        if key in raw:
            reads.append(key)
            reading.set()
            threading.Event().wait(delay)
        return original(key, *args, **kwargs)

    rt.blobs.iter_range = iter_range  # type: ignore[method-assign]
    return reads, reading


def test_a_preload_keeps_the_tables_and_the_first_question_reuses_them(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    reads, _ = count_raw_reads(rt, output)
    dispatcher = LocalDispatcher(rt, concurrency=1)
    assert dispatcher.preload(output.handle, output.tenant).result() == "loaded"
    assert rt.blobs.exists(manifest(output)) and reads == [output.blob_key]
    done = run(rt, output, ORDER_NEEDLE.request)
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "query" and ORDER_NEEDLE.needle in done.result
    assert done.query_load == "reused" and 0 < done.query_bytes_read < output.stats.bytes
    assert reads == [output.blob_key], "the question loaded the raw content again"
    assert dispatcher.preload(output.handle, output.tenant).result() == "kept already"


def test_a_question_arriving_during_the_preload_waits_for_it_instead_of_loading_again(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    reads, reading = count_raw_reads(rt, output, delay=0.3)
    preloading = LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant)
    assert reading.wait(10)  # the preload holds the load lock and reads the raw content
    done = run(rt, output, ORDER_NEEDLE.request)
    assert preloading.result() == "loaded"
    assert done.status is JobStatus.SUCCEEDED and done.query_load == "reused", done
    assert reads == [output.blob_key]


def test_a_second_upload_of_the_same_content_copies_the_tables(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    first, second = (store_output(rt, ORDERS, tool_name="orders.list") for _ in range(2))
    reads, _ = count_raw_reads(rt, first, second)
    dispatcher = LocalDispatcher(rt, concurrency=1)
    assert [dispatcher.preload(o.handle, o.tenant).result() for o in (first, second)] == ["loaded", "copied"]
    assert rt.blobs.exists(manifest(second)) and reads == [first.blob_key]
    assert run(rt, second, ORDER_NEEDLE.request).query_load == "reused"


def test_a_question_without_preload_answers_then_keeps_and_the_next_reuses(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    first, second = (store_output(rt, ORDERS, tool_name="orders.list") for _ in range(2))
    asked = run(rt, first, ORDER_NEEDLE.request)
    assert asked.query_load == "loaded" and rt.blobs.exists(manifest(first))
    assert run(rt, first, "How many orders have status refunded?").query_load == "reused"
    assert run(rt, second, ORDER_NEEDLE.request).query_load == "copied" and rt.blobs.exists(manifest(second))


def test_text_is_not_preloaded(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    text = b"".join(f"INFO request {i} served\n".encode() for i in range(20_000))
    bracketed = b"".join(f'["INFO"] request {i} served\n'.encode() for i in range(20_000))  # opens as JSON
    outputs = [store_output(rt, text), store_output(rt, bracketed)]
    dispatcher = LocalDispatcher(rt, concurrency=1)
    done = [dispatcher.preload(o.handle, o.tenant).result() for o in outputs]
    assert done[0] == "not structured" and done[1].startswith("not loadable (the output does not load as json")
    assert not any(rt.blobs.exists(manifest(o)) for o in outputs)
    assert not wants_preload(rt.settings, outputs[0], text[:65536], oversized=True)


def test_what_is_preloaded(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    head = ORDERS[:65536]
    assert wants_preload(rt.settings, output, head, oversized=True)
    assert not wants_preload(rt.settings, output, head, oversized=False)
    assert not wants_preload(rt.settings.model_copy(update={"query_preload": False}), output, head, oversized=True)
    assert not wants_preload(rt.settings, output.model_copy(update={"inline": ORDERS[:100]}), head, oversized=True)


def test_a_preload_of_an_output_deleted_meanwhile_keeps_nothing(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    assert LocalDispatcher(rt, concurrency=1).preload("no-such-handle", output.tenant).result() == "gone"
    before_keeping(rt, output, lambda: rt.records.outputs.delete_output(output))  # deleted while its tables are kept
    assert LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result() == "loaded"
    assert not rt.blobs.exists(manifest(output))
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None, "the pointer outlived its tables"


def test_a_preload_whose_blob_went_with_its_session_is_gone_and_logs_no_traceback(make_runtime, caplog) -> None:
    """The soak's race: the session is deleted (blobs first) after the preload read the record, before the blob."""
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    rt.blobs.delete_prefix(f"sessions/{output.session_id}/")
    with caplog.at_level("INFO", logger="toolout.workers"):
        assert LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result() == "gone"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING], caplog.text
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None


def test_a_preload_whose_session_goes_while_it_keeps_tables_is_gone_and_logs_no_traceback(make_runtime, caplog):
    """The next soak's race: the session's folder is removed while the load keeps its tables, so the local store's
    write fails (BackendUnavailable, not NotFound); with the output gone that is `gone`, not a warning."""
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    before_keeping(rt, output, lambda: rt.records.outputs.delete_output(output), fails=True)
    with caplog.at_level("INFO", logger="toolout.workers"):
        assert LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result() == "gone"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING], caplog.text
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None


def test_a_preload_whose_session_is_half_deleted_when_its_keep_fails_is_gone(make_runtime, caplog) -> None:
    """The fifth soak hour's race: a session's deletion removes its blobs first and its records last, so the failed
    write into the removed folder comes while the output's record is still there."""
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    # the session's blobs went; its records go next
    before_keeping(rt, output, lambda: rt.blobs.delete_prefix(f"sessions/{output.session_id}/"), fails=True)
    with caplog.at_level("INFO", logger="toolout.workers"):
        assert LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result() == "gone"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING], caplog.text
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None


def test_tables_kept_after_the_sessions_blobs_went_are_dropped(make_runtime) -> None:
    """On S3 the write after the deletion of the session's blobs succeeds: the tables would outlive the session."""
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    before_keeping(rt, output, lambda: rt.blobs.delete_prefix(f"sessions/{output.session_id}/"))
    LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result()
    assert not rt.blobs.exists(manifest(output)), "tables kept in a session being deleted"
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None, "the pointer outlived its tables"


def test_a_failed_keep_of_a_live_output_is_still_a_warning(make_runtime, caplog) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")

    def full_disk(key: str, data: bytes) -> int:
        raise BackendUnavailable(f"local blob store failed at {key}: No space left on device")

    rt.blobs.put_bytes = full_disk  # type: ignore[method-assign]
    with caplog.at_level("INFO", logger="toolout.workers"):
        assert LocalDispatcher(rt, concurrency=1).preload(output.handle, output.tenant).result() == "failed"
    assert any("No space left" in r.getMessage() or r.exc_info for r in caplog.records if r.levelno == logging.WARNING)


def test_a_question_whose_output_is_deleted_meanwhile_leaves_no_pointer(make_runtime) -> None:
    rt = make_runtime(offline_llm())
    output = store_output(rt, ORDERS, tool_name="orders.list")
    # deleted while the question keeps tables
    before_keeping(rt, output, lambda: rt.records.outputs.delete_output(output))
    run(rt, output, ORDER_NEEDLE.request)
    assert not rt.blobs.exists(manifest(output))
    assert rt.loaded.kept_at(output.tenant, output.stats.sha256) is None, "the pointer outlived its tables"
