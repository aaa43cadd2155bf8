"""Every corpus file through the live service, on each blob store: the real API, a Celery worker and the offline
model as processes (`stack`: one per store, file:// and SeaweedFS's S3), uploaded the way an agent's tool does.

The tool sends its output over HTTP with no more than `text/plain` for a type (what the SDK sends when a tool
does not know better), so the kind is the service's own sniffing. What a user would check: the kind; an HTML
page's text view, and a job over the page reading at most `MAX_TEXT_RATIO` times its visible text; a table
or a JSON document going to `query`; and each corpus question answered right (the answers are computed from
the files by the quality bench, `python -m bench.quality.corpus`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.corpus_files import CORPUS, corpus_files, listing
from tests.fixtures.stack import Stack
from tests.html_pages import MAX_TEXT_RATIO, visible_tokens
from toolout.client import ToolOutClient

pytestmark = pytest.mark.integration

FILES = corpus_files()
KIND = {".html": "html", ".json": "json", ".csv": "text", ".log": "text"}
STRUCTURED = {".csv", ".json"}
ONE_CHUNK = "1 chunk ≤ max_chunks_for_full_mode"
"""Why `auto` reads a structured output whole: it fits one chunk (docs/spec/tool-output.md §Mode choice, rule 1)."""
QUESTIONS = listing(CORPUS) if CORPUS else []
OFFLINE_MISSES = {
    "apache-errors": "the offline stand-in never counts lines, and a log has no tables for query",
    "linux-ssh-fails": "the offline stand-in never counts lines, and a log has no tables for query",
    "zk-warns": "the offline stand-in never counts lines, and a log has no tables for query",
    "zk-first-error": "the stand-in's map reader ranks lines by shared words; ERROR lines share one",
    "airports-alaska": "airports.csv fits one chunk, so auto reads it whole, and the stand-in never counts",
    "weather-avg-temp": "the offline query agent never asks for an average",
    "canada-rings": "query loads the FeatureCollection as one row; nobody counts nested coordinate arrays",
    "canada-points": "query loads the FeatureCollection as one row; nobody counts nested coordinate arrays",
    "canada-north": "query loads the FeatureCollection as one row; the stand-in never takes a maximum",
    "re-fullmatch": "'New in version 3.4' shares no word with the question; a real model reads the heading",
    "json-encoding": "'Changed in version 3.9' shares no word with the question; a real model reads the heading",
}
"""Questions the offline model answers wrong on any store (docs/quality.md measures why): strict, so one that
starts being answered right fails here until it leaves this list."""


@pytest.fixture(scope="module")
def handles() -> dict[tuple[str, str], str]:
    """Each file's handle per stack: uploaded once, then asked every question (the stack's session TTL ends it)."""
    return {}


def handle_of(stack: Stack, client: ToolOutClient, name: str, handles: dict[tuple[str, str], str]) -> str:
    key = (stack.name, name)
    if key not in handles:
        session = client.create_session()
        data = (CORPUS / name).read_bytes()
        handles[key] = client.store(session, data, tool_name="web.fetch", tool_args=f'{{"file": "{name}"}}')["handle"]
    return handles[key]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_corpus_file_is_sniffed_and_routed(stack: Stack, path: Path, handles: dict[tuple[str, str], str]) -> None:
    with stack.client() as client:
        output = client.output(handle_of(stack, client, path.name, handles))
        estimate = client.estimate(output["handle"], "What does this output hold?")
    assert output["bytes"] == path.stat().st_size and output["kind"] == KIND[path.suffix], output
    assert (output["text_view"] is not None) == (path.suffix == ".html"), output
    if path.suffix in STRUCTURED:
        assert estimate["mode"] == "query" or ONE_CHUNK in estimate["routing_reason"], estimate["routing_reason"]


@pytest.mark.parametrize("path", [p for p in FILES if p.suffix in STRUCTURED], ids=lambda p: p.name)
def test_a_table_or_json_document_is_answered_by_query(
    stack: Stack, path: Path, handles: dict[tuple[str, str], str]
) -> None:
    """Asked for `query` (what `auto` picks once it is bigger than one chunk), it loads as tables: no fallback."""
    with stack.client() as client:
        handle = handle_of(stack, client, path.name, handles)
        job = client.wait(client.submit(handle, "How many records are there?", "query", cache=False)["id"], timeout=300)
    assert (job["status"], job["mode_used"]) == ("succeeded", "query"), job


@pytest.mark.parametrize("path", [p for p in FILES if p.suffix == ".html"], ids=lambda p: p.name)
def test_a_job_on_a_page_reads_its_text_not_its_markup(
    stack: Stack, path: Path, handles: dict[tuple[str, str], str]
) -> None:
    with stack.client() as client:
        handle = handle_of(stack, client, path.name, handles)
        job = client.wait(
            client.submit(handle, "Which functions does this page document?", cache=False)["id"], timeout=300
        )
    assert job["status"] == "succeeded", job
    assert job["usage"]["input_tokens"] <= MAX_TEXT_RATIO * visible_tokens(path), (job["usage"], visible_tokens(path))


@pytest.mark.parametrize(
    "question",
    [
        pytest.param(q, marks=pytest.mark.xfail(strict=True, reason=OFFLINE_MISSES[q["name"]]))
        if q["name"] in OFFLINE_MISSES
        else q
        for q in QUESTIONS
    ],
    ids=lambda q: q["name"],
)
def test_a_corpus_question_is_answered_right(
    stack: Stack, question: dict[str, Any], handles: dict[tuple[str, str], str]
) -> None:
    with stack.client() as client:
        handle = handle_of(stack, client, question["file"], handles)
        job = client.wait(client.submit(handle, question["request"], cache=False)["id"], timeout=600)
    assert job["status"] == "succeeded", job
    assert right(job["result"], question["must"], question["near"]), (job["mode_used"], job["result"][-1500:])


def right(answer: str, must: list[str], near: list[float]) -> bool:
    """Every computed value in the answer: whole tokens, digits without thousands separators; a non-integer
    stated to the precision the answer gives it (the quality bench's rule)."""
    header, _, body = answer.partition("\n\n")  # the ABSTRACT header names the handle and tool: not the answer
    text = re.sub(r"(?<=\d)[, _](?=\d{3}\b)", "", body if header.startswith("ABSTRACT") else answer).lower()
    exact = all(re.search(rf"(?<![\w-]){re.escape(value.lower())}(?![\w-])", text) for value in must)
    decimals = [(float(m[0]), len(m[1])) for m in re.finditer(r"(?<![\w.])-?\d+\.(\d+)(?!\w|\.\d)", text)]
    return exact and all(any(abs(x - v) <= 0.5 * 10**-places + 1e-9 for x, places in decimals) for v in near)
