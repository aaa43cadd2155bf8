"""The fallback chain end to end: a strategy that cannot finish ends in the truncate view with the WARNING."""

from __future__ import annotations

import pytest

from tests.fixtures.stack import Stack
from toolout.devstack import datasets

pytestmark = pytest.mark.integration


def test_read_grep_that_exhausts_its_bounds_falls_back_to_truncate(tight_stack: Stack) -> None:
    log = b"".join(datasets.service_log(3 * 10**6))
    with tight_stack.client() as client:
        session = client.create_session()
        meta = client.store(session, log, tool_name="logs.fetch")
        job = client.wait(client.submit(meta["handle"], datasets.POOL_INCIDENT.request, "read-grep")["id"], timeout=120)
        client.delete_session(session)
    assert job["status"] == "succeeded" and job["mode_used"] == "truncate", job
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}, STRATEGY:truncate:\n\n"
        "WARNING: tool_output fallback to truncate (read-grep failed: turn limit reached (1 turns) without a "
        "final report).\n\n"
    )
    assert job["fallback_reason"].startswith("read-grep failed: turn limit reached")
    assert log[:100].decode() in job["result"] and log[-100:].decode() in job["result"]
    assert (job["agent_turns"], job["agent_tool_calls"]) == (1, 1)
