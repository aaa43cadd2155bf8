"""Pipeline steps on the in-memory stores and a scripted model — no Redis, no Celery."""

from __future__ import annotations

import re
import uuid

import pytest

from extraction.documents.lines import build_line_index
from extraction.documents.stats import measure
from extraction.protocols import LLMReply, Usage
from extraction.strategies.mapreduce import ModelLimits
from extraction.testing import ScriptedLLM
from extraction.texts.nonce import new_nonce
from infra.blobstore.memory import MemoryBlobStore
from infra.settings import Settings
from infra.stores.jobs import JobRecord, memory_job_stores
from infra.stores.records import OutputRecord, blob_key, memory_record_stores
from workers.job.runtime import Runtime

NONCE_RE = re.compile(r"<ai-agent-([A-Za-z0-9]+)-FINAL")


NOTHING_HERE = "NO RELEVANT DATA FOUND\nOnly filler lines."
CHUNK_NOTES = "Filler lines, one per request."
"""A miss answered as data: every chunk's answer then takes room in the reduce (a NOTHING_HERE one takes none)."""


def needle_model(needle: str, *, misses: str = NOTHING_HERE) -> ScriptedLLM:
    """Answers every map/reduce call with the lines that contain `needle`, inside the real wrapper, and
    `misses` when a text has none."""

    def respond(messages, tools):
        nonce = NONCE_RE.search(messages[0]["content"]).group(1)
        text = "\n".join(m["content"] or "" for m in messages)
        hits = sorted({line.strip() for line in text.splitlines() if needle in line and "WHAT TO EXTRACT" not in line})
        body = "\n".join(hits) if hits else misses
        return LLMReply(
            content=f'<ai-agent-{nonce}-FINAL format="text">\n{body}\n</ai-agent-{nonce}-FINAL>',
            usage=Usage(calls=1, input_tokens=100, output_tokens=10),
        )

    return ScriptedLLM(respond)


@pytest.fixture()
def make_runtime():
    """A runtime on the in-memory twins (no server): the pipeline's steps and promises, nothing else."""

    def make(llm, *, context_tokens: int = 4000, max_output_tokens: int = 500, **settings) -> Runtime:
        config = Settings(redis_url="memory://", blob_store="memory://", truncate_bytes=400, **settings)
        return Runtime(
            settings=config,
            jobs=memory_job_stores(ttl_seconds=600, deadline_seconds=600),
            records=memory_record_stores(session_ttl_seconds=600),
            blobs=MemoryBlobStore(),
            llm=llm,
            limits=ModelLimits(context_tokens=context_tokens, max_output_tokens=max_output_tokens),
        )

    return make


def store_output(rt: Runtime, data: bytes, *, tool_name: str = "logs.fetch") -> OutputRecord:
    session = rt.records.sessions.create_session()
    handle = str(uuid.uuid4())
    key = blob_key(session.id, handle)
    measured = measure([data])
    rt.blobs.put_bytes(key, data)
    rt.blobs.put_bytes(f"{key}.tokidx", measured.index.model_dump_json().encode())
    rt.blobs.put_bytes(f"{key}.lines", build_line_index([data]).model_dump_json().encode())
    record = OutputRecord(
        handle=handle,
        session_id=session.id,
        tool_name=tool_name,
        tool_args='{"q": 1}',
        stats=measured.stats,
        blob_key=key,
        index_key=f"{key}.tokidx",
        lines_key=f"{key}.lines",
    )
    rt.records.outputs.put_output(record)
    return record


def submit(rt: Runtime, output: OutputRecord, extract: str, mode: str = "auto") -> JobRecord:
    job = JobRecord(
        id=str(uuid.uuid4()),
        session_id=output.session_id,
        handle=output.handle,
        tool_name=output.tool_name,
        extract=extract,
        mode_requested=mode,
        nonce=new_nonce(),
    )
    return rt.jobs.records.create(job)
