"""Every strategy on a real web page reads its text view: at most 1.5x the page's visible-text tokens, answers
quoting text, Read/Grep numbering the view's lines and saying so. Jobs run on the offline model, embedded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extraction.documents.kinds import ContentKind
from infra.outputs.content import read_content
from infra.outputs.stored import PinnedTools, StoredOutput
from infra.outputs.storing import delete_stored_output
from infra.outputs.views import TEXT_VIEW_HEADER, reading_view, view_blob_keys
from infra.stores.jobs import JobRecord, new_job
from infra.stores.records import OutputRecord
from tests.fixtures.offline_model import OfflineModelServer
from tests.html_pages import MAX_TEXT_RATIO, PAGES, a_sentence, visible_tokens
from toolout.local import LocalToolOut

HTML = "text/html; charset=utf-8"
MARKUP = ('class="', "<li>", "<a ", "</")


@pytest.fixture()
def local(offline_model: OfflineModelServer) -> Iterator[LocalToolOut]:
    with LocalToolOut(offline_model.model, api_base=offline_model.base_url, api_key="offline") as embedded:
        yield embedded


def run(local: LocalToolOut, record: OutputRecord, extract: str, mode: str, view: str = "text") -> JobRecord:
    job = local.stores.jobs.records.create(new_job(record, extract, mode).model_copy(update={"view": view}))
    local.dispatcher.run(job.id)
    return local.stores.jobs.records.get(job.id)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
@pytest.mark.parametrize("mode", ["full-chunked", "read-grep", "truncate", "auto"])
def test_every_strategy_reads_the_text_not_the_markup(local: LocalToolOut, page: Path, mode: str) -> None:
    record = local.stores.records.outputs.get_output(local.store(page.read_bytes(), content_type=HTML).handle)
    job = run(local, record, f"Quote the sentence that starts with: {a_sentence(page)}", mode)
    assert job.status == "succeeded", job.error
    assert job.usage.input_tokens <= MAX_TEXT_RATIO * visible_tokens(page)
    assert not any(markup in job.result for markup in MARKUP)


def test_the_same_job_on_the_raw_markup_reads_several_times_more(local: LocalToolOut) -> None:
    page = PAGES[1]
    record = local.stores.records.outputs.get_output(local.store(page.read_bytes(), content_type=HTML).handle)
    text = run(local, record, "json.dumps arguments", "full-chunked")
    raw = run(local, record, "json.dumps arguments", "full-chunked", view="raw")
    assert raw.usage.input_tokens > 3 * text.usage.input_tokens
    assert raw.usage.input_tokens > record.stats.tokens > MAX_TEXT_RATIO * visible_tokens(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_read_and_grep_number_the_text_views_lines_and_say_so(local: LocalToolOut, page: Path) -> None:
    record = local.stores.records.outputs.get_output(local.store(page.read_bytes(), content_type=HTML).handle)
    view = reading_view(record)
    tools = PinnedTools(StoredOutput(local.stores.blobs, view))
    sentence = a_sentence(page)
    found = tools("Grep", {"handle": record.handle, "pattern": sentence})
    header, first = found.splitlines()[:2]
    number, _, line = first.partition(":\t")
    lines = read_content(local.stores.blobs, view, 0, view.stats.bytes).decode().splitlines()
    assert header == TEXT_VIEW_HEADER and lines[int(number) - 1] == line and sentence in line
    read = tools("Read", {"handle": record.handle, "offset": int(number), "limit": 1})
    assert read.splitlines()[:2] == [TEXT_VIEW_HEADER, first.replace(":\t", "\t", 1)]


def test_deleting_a_page_removes_its_view(local: LocalToolOut) -> None:
    record = local.stores.records.outputs.get_output(local.store(PAGES[1].read_bytes(), content_type=HTML).handle)
    assert record.text_view is not None and local.stores.blobs.exists(record.text_view.blob_key)
    assert view_blob_keys(record) == [record.text_view.blob_key, record.text_view.index_key, record.text_view.lines_key]
    inline = record.text_view.model_copy(update={"inline": b"# page"})
    assert view_blob_keys(record.model_copy(update={"text_view": inline})) == []
    delete_stored_output(local.stores.blobs, local.stores.records, record)
    assert not local.stores.blobs.exists(record.text_view.blob_key)
    assert not local.stores.blobs.exists(record.text_view.index_key)


def test_a_page_the_converter_cannot_read_stays_readable_as_html(
    local: LocalToolOut, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(blocks: object) -> Iterator[bytes]:
        yield b"half a view"
        raise RuntimeError("converter panic")

    monkeypatch.setattr("infra.outputs.views.markdown_blocks", broken)
    record = local.stores.records.outputs.get_output(local.store(PAGES[1].read_bytes(), content_type=HTML).handle)
    assert (record.kind, record.text_view) == (ContentKind.HTML, None)
    assert reading_view(record) is record
    assert not local.stores.blobs.exists(f"{record.blob_key}.text.md")
