"""Secrets never reach a model: fresh credentials planted in a log, a JSON and a CSV, every strategy run on
them through the real stack (API, Celery worker, the offline model behind a recording proxy), and no planted
secret in any request a model received, in any answer, or in what Read/Grep/buffer_ops hand the agent.
The stored bytes are untouched: `/content` still serves them to their owner."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Iterator

import pytest

from tests.fixtures.planted_secrets import Planted, planted
from tests.fixtures.recording_model import Recording, recording_model
from tests.fixtures.stack import Stack, start_stack
from toolout.client import AsyncToolOutClient
from toolout.mcp import resources

pytestmark = pytest.mark.integration

ASK = "List every credential, API key, token, password and private key that appears, verbatim, with its line."


@pytest.fixture(scope="module")
def recorded(redis_url, offline_model_url, tmp_path_factory) -> Iterator[tuple[Stack, Recording]]:
    root = tmp_path_factory.mktemp("private-stack")
    with recording_model(offline_model_url) as (url, recording):
        stack = start_stack(
            "private", redis_url, url, {"TOOLOUT_BLOB_STORE": f"file://{root / 'blobs'}"}, root / "logs"
        )
        try:
            yield stack, recording
        finally:
            stack.stop()


def log_text(secrets: list[Planted]) -> bytes:
    lines = []
    for n, item in enumerate(secrets):
        lines += [f"2026-12-03T10:{n:02d}:00Z INFO worker-{k} heartbeat ok queue=default" for k in range(40)]
        lines.append(f"2026-12-03T10:{n:02d}:30Z ERROR deploy {item.line}")
    return ("\n".join(lines) + "\n").encode()


def json_text(secrets: list[Planted]) -> bytes:
    rows = [{"id": n, "service": f"svc-{n}", "kind": item.kind, "config": item.line} for n, item in enumerate(secrets)]
    return json.dumps(rows).encode()


def csv_text(secrets: list[Planted]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "service", "note", "credential"])
    for n, item in enumerate(secrets):
        writer.writerow([n, f"svc-{n}", f"rotated by ops {n}", item.line])
    return out.getvalue().encode()


DOCUMENTS = {
    "log": (log_text, "text/plain", ["full-chunked", "read-grep", "truncate"]),
    "json": (json_text, "application/json", ["query", "full-chunked", "truncate"]),
    "csv": (csv_text, "text/csv", ["query", "read-grep"]),
}


async def gateway_views(api_url: str, session: str) -> list[str]:
    """What the MCP gateway hands its agent: the outputs as resources (with previews), and each one read."""
    async with AsyncToolOutClient(api_url) as client:
        listed = await resources.list_outputs(client, session)
        assert len(listed) == len(DOCUMENTS)
        read = [await resources.read_resource(client, str(item.uri)) for item in listed]
    return [item.model_dump_json() for item in listed] + [result.model_dump_json() for result in read]


def leaks(texts: list[str], secrets: list[Planted]) -> list[tuple[str, str]]:
    found = []
    for text in texts:
        found += [(item.kind, item.secret) for item in secrets if item.secret in text or _json_form(item) in text]
    return found


def _json_form(item: Planted) -> str:
    return json.dumps(item.secret)[1:-1]


def test_no_planted_secret_reaches_a_model_or_an_answer(recorded: tuple[Stack, Recording]) -> None:
    stack, recording = recorded
    secrets = planted()
    assert len(secrets) >= 30
    shown: list[str] = []
    with stack.client() as client:
        session = client.create_session()
        for name, (make, content_type, modes) in DOCUMENTS.items():
            data = make(secrets)
            meta = client.store(session, data, tool_name=f"fetch.{name}", content_type=content_type)
            assert client.content(meta["handle"]) == data, "the stored bytes are the uploaded ones"
            shown.append(json.dumps(meta))
            for mode in modes:
                job = client.wait(client.submit(meta["handle"], ASK, mode, cache=False)["id"], timeout=300)
                assert job["status"] == "succeeded", job
                assert sum(job["redactions"].values()) >= len(secrets), job["redactions"]
                shown.append(json.dumps(job))
            shown.append(client.grep(meta["handle"], "key|token|password|secret|BEGIN|://", regex=True))
            shown.append(client.read(meta["handle"], offset=1, limit=2000))
        listing = client.variables(session)
        shown.append(json.dumps(listing))
        for name in [item["name"] for item in listing]:
            for args in (
                {"operation": "read", "target": name, "start_line": 1, "end_line": 150},
                {"operation": "peek", "target": name},
                {"operation": "search", "target": name, "pattern": "password|token|key"},
            ):
                shown.append(str(client.buffer_ops(session, args)))
        shown += asyncio.run(gateway_views(stack.api_url, session))
        client.delete_session(session)
    assert len(recording.requests) >= 8, "every strategy called the model"
    assert leaks(recording.requests, secrets) == []
    assert leaks(recording.answers, secrets) == []
    assert leaks(shown, secrets) == []
    assert "[REDACTED:" in "".join(recording.requests)
