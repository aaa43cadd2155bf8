"""A job's trace: what each model call of the job read and said, kept with the job, bounded in bytes.

The job's steps write events (built here, below: `map_event`, `reduce_event`, … so the format has one home): one
per map call, per reduce call, per sub-agent tool call, per failed part and per fallback; each a small JSON
object whose texts are cut at `TEXT_CHARS`, so one event stays at 1 or 2 KB. The events answer "why is the answer
what it is": what each chunk's map call read (its byte range and lines) and said, what each reduce took in and gave
out, which tools the sub-agent called with what and what they returned, which parts failed and why the job fell
back. The
store keeps them in order under the job's byte bound (`trace_max_bytes`): the first event that no
longer fits leaves one `truncated` event in its place and nothing is added after it, so a job of a
thousand chunks costs at most the bound, and a reader can tell that the trace was cut. A trace lives
and dies with its job record (the job's TTL, deleted with it) and is read through the job's tenant check.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange

TraceEvent = dict[str, Any]

TEXT_CHARS = 1500
"""A text's share of one event: enough to read a chunk's answer or a Grep's first hits, small enough
for a 170-chunk job's trace to fit the default bound."""

DEFAULT_TRACE_MAX_BYTES = 256 * 1024
"""The `trace_max_bytes` default: a 170-chunk job's events at ~1.5 KB each (an answer is cut at
`TEXT_CHARS`) fit, and a thousand jobs' traces in Redis stay under 256 MB."""


WORKER = socket.gethostname()
"""The host a map, reduce or tool event names as the one that made the call: with workers scaled out (one
container each), where to read that call's logs."""


def event_json(event: TraceEvent) -> str:
    """One event as stored: compact ASCII JSON, so its length is its size in bytes on every store."""
    return json.dumps(event, separators=(",", ":"), default=str)


def cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


def usage_fields(usage: Usage) -> dict[str, Any]:
    return {"calls": usage.calls, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def map_event(chunk: int, span: tuple[int, int], text: str, answer: str, usage: Usage, seconds: float) -> str:
    start, end = span
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    fields = {"kind": "map", "chunk": chunk, "start": start, "end": end, "lines": lines, "seconds": round(seconds, 3)}
    fields["worker"] = WORKER
    return event_json({**fields, **usage_fields(usage), "answer": cut(answer)})


def reduce_event(level: int, group: int, inputs: int, answer: str, usage: Usage, seconds: float) -> str:
    fields = {"level": level, "group": group, "inputs": inputs, "seconds": round(seconds, 3), "worker": WORKER}
    return event_json({"kind": "reduce", **fields, **usage_fields(usage), "answer": cut(answer)})


def answer_event(answer: str, *, reduced: bool) -> str:
    """The map-reduce job's answer: the last reduce's, or (`reduced` False) the one map output that held
    anything, passed on without a reduce call; empty when every part found nothing."""
    return event_json({"kind": "answer", "reduced": reduced, "answer": cut(answer)})


def failed_event(failure: FailedRange) -> str:
    return event_json({"kind": "failed", "level": failure.level, "index": failure.index, "reason": failure.reason})


def fallback_event(reason: str) -> str:
    return event_json({"kind": "fallback", "to": "truncate", "reason": cut(reason, 500)})


def tool_event(name: str, args: dict[str, Any], seconds: float, *, result: str | None = None, error: str = "") -> str:
    """One sub-agent tool call: its arguments (cut), then its result (cut) or the error it raised."""
    event: TraceEvent = {"kind": "tool", "name": name, "args": {k: cut(str(v), 300) for k, v in args.items()}}
    ending = {"error": cut(error, 500)} if result is None else {"result": cut(result)}
    return event_json({**event, **ending, "seconds": round(seconds, 3), "worker": WORKER})


def truncated_marker(max_bytes: int) -> str:
    return event_json({"kind": "truncated", "max_bytes": max_bytes})


@dataclass
class Trace:
    """One job's trace in memory (`MemoryJobTraces`); `RedisJobTraces` keeps the same state in a hash."""

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
