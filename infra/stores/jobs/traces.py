"""A job's trace: what each model call of the job read and said, kept with the job, bounded in bytes.

The job's steps write events (`workers.job.trace`): one per map call, per reduce call, per sub-agent
tool call, per failed part and per fallback; each a small JSON object whose texts are already cut. The
store keeps them in order under the job's byte bound (`trace_max_bytes`): the first event that no
longer fits leaves one `truncated` event in its place and nothing is added after it, so a job of a
thousand chunks costs at most the bound, and a reader can tell that the trace was cut. A trace lives
and dies with its job record (the job's TTL, deleted with it) and is read through the job's tenant check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TraceEvent = dict[str, Any]

DEFAULT_TRACE_MAX_BYTES = 256 * 1024
"""The `trace_max_bytes` default: a 170-chunk job's events at ~1.5 KB each (an answer is cut at
`workers.job.trace.TEXT_CHARS`) fit, and a thousand jobs' traces in Redis stay under 256 MB."""


def event_json(event: TraceEvent) -> str:
    """One event as stored: compact ASCII JSON, so its length is its size in bytes on every store."""
    return json.dumps(event, separators=(",", ":"), default=str)


def truncated_marker(max_bytes: int) -> str:
    return event_json({"kind": "truncated", "max_bytes": max_bytes})


@dataclass
class Trace:
    """One job's trace in memory (`MemoryJobStore`); `RedisJobStore` keeps the same state in a hash."""

    events: list[str] = field(default_factory=list)
    used: int = 0
    cut: bool = False

    def add(self, events: Sequence[str], max_bytes: int) -> int:
        """Append what fits (`add_trace.lua` does the same): how many of `events` were added."""
        marker = truncated_marker(max_bytes)
        added = 0
        for event in events:
            if self.cut:
                break
            if self.used + len(event) > max_bytes - len(marker):
                self.events.append(marker)
                self.used, self.cut = self.used + len(marker), True
                break
            self.events.append(event)
            self.used, added = self.used + len(event), added + 1
        return added

    def read(self, after: int = 0) -> list[TraceEvent]:
        return numbered(self.events[after:], after)


def numbered(events: Sequence[str], first: int) -> list[TraceEvent]:
    """The stored events parsed, each with its place in the trace (`seq`, what a live reader resumes after)."""
    return [{"seq": first + i, **json.loads(event)} for i, event in enumerate(events)]
