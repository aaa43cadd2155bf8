"""The soak's `variables` shape (issue 33): each conversation uploads a ~300 KB JSON as a variable, resolves a
`$ref` into it, greps it, runs a read-grep extraction over it and waits for the answer, then deletes its session.

The JSON is new bytes every time (its values are drawn per conversation), so every upload is oversized structured
content the API queues a preload for: a worker loads it as tables and records where (`infra.query.loaded_forms`).
That is what the `mixed` shape (`bench.soak.run.work`, small JSON and a log) never reaches.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from toolout.client import TERMINAL, ToolOutClient

if TYPE_CHECKING:
    from bench.soak.stats import Stats

ROWS = 2400
"""~125 bytes a row: a document of ~300 KB."""


def document(rng: random.Random) -> bytes:
    """A deployment inventory of ~300 KB whose values differ per call (so its sha256 does)."""
    hosts = [
        {
            "id": f"host-{i:05d}",
            "region": rng.choice(("eu-west-1", "us-east-1", "ap-south-1")),
            "cpu": rng.randint(2, 96),
            "status": "degraded" if rng.random() < 0.02 else "ok",
            "tag": rng.getrandbits(48),
        }
        for i in range(ROWS)
    ]
    return json.dumps({"service": "payments", "limits": {"rps": rng.randint(1, 99)}, "hosts": hosts}).encode()


def work(client: ToolOutClient, rng: random.Random, session: str, stats: Stats) -> None:
    """One conversation's body (the caller opens and deletes the session)."""
    stored = stats.timed(
        "store",
        lambda: client.store(
            session, document(rng), tool_name="inventory.get", content_type="application/json", name="inv"
        ),
    )
    stats.own(stored)
    stats.timed("resolve", lambda: client.resolve(session, {"rps": "$inv.limits.rps", "host": "$inv.hosts[-1].id"}))
    if not isinstance(stored, dict):
        return
    handle = stored["handle"]
    stats.timed("grep", lambda: client.grep(handle, '"status": "degraded"', max_matches=20))
    job = stats.timed("submit", lambda: client.submit(handle, "the hosts whose status is degraded", "read-grep"))
    if not isinstance(job, dict):
        return
    ended = stats.timed("wait", lambda: client.wait(job["id"], timeout=300))
    if isinstance(ended, dict) and ended["status"] not in TERMINAL:
        stats.error("wait", f"job {job['id']} still {ended['status']} after 300 s")
