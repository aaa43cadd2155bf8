"""What a job's steps write to its trace (`infra.stores.jobs.traces`): one small event per model call or step.

The events answer "why is the answer what it is": what each chunk's map call read (its byte range and
lines) and said, what each reduce took in and gave out, which tools the sub-agent called with what
and what they returned, which parts failed and why the job fell back. Texts are cut at `TEXT_CHARS`
so that one event stays at 1 or 2 KB; the store bounds the whole trace. A trace is a view, never a
dependency: writing one never fails a step (an outage is logged and the job goes on), and with
`trace_max_bytes` = 0 nothing is written at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from extraction.protocols import Usage
from extraction.strategies.agent import ToolExecutor
from extraction.strategies.coverage import FailedRange
from infra.stores.jobs.traces import TraceEvent, event_json
from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers")

TEXT_CHARS = 1500
"""A text's share of one event: enough to read a chunk's answer or a Grep's first hits, small enough
for a 170-chunk job's trace to fit the default bound."""


def cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


def usage_fields(usage: Usage) -> dict[str, Any]:
    return {"calls": usage.calls, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def map_event(chunk: int, span: tuple[int, int], text: str, answer: str, usage: Usage, seconds: float) -> str:
    start, end = span
    return event_json(
        {
            "kind": "map",
            "chunk": chunk,
            "start": start,
            "end": end,
            "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1),
            "seconds": round(seconds, 3),
            **usage_fields(usage),
            "answer": cut(answer),
        }
    )


def reduce_event(level: int, group: int, inputs: int, answer: str, usage: Usage, seconds: float) -> str:
    fields = {"level": level, "group": group, "inputs": inputs, "seconds": round(seconds, 3)}
    return event_json({"kind": "reduce", **fields, **usage_fields(usage), "answer": cut(answer)})


def answer_event(answer: str, *, reduced: bool) -> str:
    """The map-reduce job's answer: the last reduce's, or (`reduced` False) the one map output that held
    anything, passed on without a reduce call; empty when every part found nothing."""
    return event_json({"kind": "answer", "reduced": reduced, "answer": cut(answer)})


def failed_event(failure: FailedRange) -> str:
    return event_json({"kind": "failed", "level": failure.level, "index": failure.index, "reason": failure.reason})


def fallback_event(reason: str) -> str:
    return event_json({"kind": "fallback", "to": "truncate", "reason": cut(reason, 500)})


def note(rt: Runtime, job_id: str, *events: str) -> None:
    """Append to the job's trace unless tracing is off; an outage is logged, never raised into the step."""
    if not rt.settings.trace_max_bytes or not events:
        return
    try:
        rt.jobs.add_trace(job_id, events)
    except Exception as exc:  # noqa: BLE001 - the trace explains a job, it must never fail one
        log.warning("job %s: trace not written: %s", job_id, exc)


def traced_tools(rt: Runtime, job_id: str, execute: ToolExecutor, clock: Callable[[], float]) -> ToolExecutor:
    """`execute`, each call written to the trace with its arguments, its result (cut) and its seconds."""

    def run(name: str, args: dict[str, Any]) -> str:
        started = clock()
        event: TraceEvent = {"kind": "tool", "name": name, "args": {k: cut(str(v), 300) for k, v in args.items()}}
        try:
            result = execute(name, args)
        except Exception as exc:
            note(rt, job_id, event_json({**event, "error": cut(str(exc), 500), "seconds": round(clock() - started, 3)}))
            raise
        note(rt, job_id, event_json({**event, "result": cut(result), "seconds": round(clock() - started, 3)}))
        return result

    return run
