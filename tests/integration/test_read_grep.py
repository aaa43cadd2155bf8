"""read-grep end to end: a sub-agent that may only Read/Grep the stored output finds a planted needle
in a 50 MB log through the offline model, with auto routing choosing it for a multi-line log."""

from __future__ import annotations

import pytest

from tests.fixtures.stack import Stack
from toolout.devstack import datasets

pytestmark = pytest.mark.integration


def test_auto_routes_a_50_mb_log_to_read_grep_which_finds_the_incident(stack: Stack) -> None:
    incident = datasets.POOL_INCIDENT
    with stack.client() as client:
        session = client.create_session()
        meta = client.store(
            session, datasets.service_log(50 * 10**6), tool_name="logs.fetch", tool_args='{"range": "30d"}'
        )
        job = client.wait(client.submit(meta["handle"], incident.request, "auto")["id"], timeout=300)
        client.delete_session(session)
    assert meta["bytes"] >= 50 * 10**6 and meta["lines"] > 400_000
    assert job["status"] == "succeeded", job
    assert job["mode_used"] == "read-grep" and job["routing_reason"].startswith("auto:")
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}, STRATEGY:read-grep:\n\n"
    )
    assert incident.needle in job["result"] and "INV-9003" in job["result"]
    assert job["agent_turns"] >= 2 and job["agent_tool_calls"] >= 1
    assert job["usage"]["input_tokens"] < 0.05 * meta["tokens"], "read-grep should read a few windows, not the file"
