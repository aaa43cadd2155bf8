"""Evidence through the job's steps with stand-in models: honest citations verify, bad ones are flagged every time.

On the in-memory twins (tests/workers/conftest.py): what is under test is which citation each step gathers
and how the verifier judges it, the same on any store; the Redis path is tested in tests/integration.
"""

from __future__ import annotations

import re

import pytest

from extraction.evidence.model import Match, SourceKind
from extraction.protocols import LLMReply, Message, Usage
from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus
from tests.workers.conftest import NONCE_RE, store_output, submit
from tests.workers.job.test_pipeline import drive

pytestmark = pytest.mark.twin(
    "each citation the verifier is handed by a scripted model; its ranged reads of real stores run in the live"
    " corpus test and the quality bench"
)

LINES = [f"entry {n:04d} service=svc{n % 13} latency_ms={n * 37 % 1000} code={n * 11 % 97}" for n in range(1, 1201)]
DOCUMENT = ("\n".join(LINES) + "\n").encode()
NUMBERED = re.compile(r"^ *(\d+)\t(.*)$", re.M)
CITATION = re.compile(r"^\[L\d+(?:-L?\d+)?\] .*$", re.M)


def shown_lines(messages: list[Message]) -> list[tuple[int, str]]:
    """The numbered lines of the map call's chunk, as the model saw them."""
    return [(int(n), text) for n, text in NUMBERED.findall(str(messages[-1]["content"]))]


def reply(messages: list[Message], body: str) -> LLMReply:
    nonce = NONCE_RE.search(str(messages[0]["content"])).group(1)
    return LLMReply(
        content=f'<ai-agent-{nonce}-FINAL format="text">{body}</ai-agent-{nonce}-FINAL>', usage=Usage(calls=1)
    )


def stand_in(cite) -> ScriptedLLM:
    """A model whose map answers are `cite(lines)` and whose reduce keeps every citation line it is given."""

    def respond(messages, tools):
        if "CHUNK OUTPUTS" in str(messages[0]["content"]):
            return reply(messages, "\n".join(CITATION.findall(str(messages[0]["content"]))))
        return reply(messages, cite(shown_lines(messages)))

    return ScriptedLLM(respond)


def honest(lines):
    if not lines:
        return "No numbered lines to cite."
    number, text = lines[len(lines) // 2]
    return f"The middle entry.\n[L{number}] {text.split(' latency')[0]}"


def invents(lines):
    number, _ = lines[0]
    return f"[L{number}] entry {number:04d} service=payments latency_ms=99999"


def outside(lines):
    first, last = lines[0][0], lines[-1][0]
    other = last + 40 if last + 40 <= len(LINES) else first - 40
    return f"[L{other}] {LINES[other - 1]}"


def across(lines):
    last, text = lines[-1]
    if last >= len(LINES):
        return honest(lines)
    return f"[L{last}-L{last + 1}] {text} {LINES[last]}"


def run(make_runtime, model, **settings):
    rt = make_runtime(model, context_tokens=2000, max_output_tokens=200, **settings)
    output = store_output(rt, DOCUMENT)
    job = submit(rt, output, "which service is slowest", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.chunks_total > 3
    return done


def chunk_items(job):
    return [item for item in job.evidence if item.source is SourceKind.CHUNK]


def test_honest_citations_verify_and_the_abstract_names_them(make_runtime):
    job = run(make_runtime, stand_in(honest))
    items = chunk_items(job)
    assert len(items) == job.chunks_total and all(item.verified and item.match is Match.EXACT for item in items)
    assert all(DOCUMENT[i.start_byte : i.end_byte].decode().startswith(i.quote) for i in items)
    assert "WARNING" not in job.result
    assert job.result.rstrip().splitlines()[-1].startswith("SOURCES: L")


def test_the_chunks_are_shown_numbered_with_the_documents_line_numbers(make_runtime):
    model = stand_in(honest)
    run(make_runtime, model)
    maps = [call["messages"] for call in model.calls if "CHUNK OUTPUTS" not in str(call["messages"][0]["content"])]
    for messages in maps:
        for number, text in shown_lines(messages):
            assert text in LINES[number - 1]  # a chunk's first line may start mid-line
    assert "Cite what you use" in str(maps[0][-1]["content"])


@pytest.mark.parametrize(
    ("cite", "why"), [(invents, "not on lines"), (outside, "outside what chunk"), (across, "crosses the edge")]
)
def test_every_bad_citation_is_flagged_and_the_answer_says_so(make_runtime, cite, why):
    job = run(make_runtime, stand_in(cite))
    bad = [item for item in chunk_items(job) if why in (item.why or "")]
    expected = job.chunks_total - (1 if cite is across else 0)  # the last chunk has no next line to cross into
    assert len(bad) == expected and not any(item.verified for item in bad)
    assert job.result.split("\n\n")[1].startswith(f"WARNING: {len(bad)} quote(s)")
    assert f"(0 of {len(chunk_items(job))} quotes verified)" in job.result or cite is across


def test_evidence_off_shows_plain_chunks_and_keeps_none(make_runtime):
    model = stand_in(honest)
    job = run(make_runtime, model, evidence=False)
    assert job.evidence == [] and "SOURCES" not in job.result
    first_map = model.calls[0]["messages"]
    assert shown_lines(first_map) == [] and "Cite what you use" not in str(first_map[-1]["content"])
