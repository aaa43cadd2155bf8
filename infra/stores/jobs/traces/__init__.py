"""A job's trace: the events its steps write (`events`, the format's one home) and the part of the store that keeps
them (`JobTraces`; its Redis implementation and in-memory twin are `traces.redis` and `traces.memory`)."""

from infra.stores.jobs.traces.base import JobTraces
from infra.stores.jobs.traces.events import (
    DEFAULT_TRACE_MAX_BYTES,
    TraceEvent,
    answer_event,
    event_json,
    failed_event,
    fallback_event,
    map_event,
    reduce_event,
    tool_event,
)

__all__ = [
    "DEFAULT_TRACE_MAX_BYTES",
    "JobTraces",
    "TraceEvent",
    "answer_event",
    "event_json",
    "failed_event",
    "fallback_event",
    "map_event",
    "reduce_event",
    "tool_event",
]
