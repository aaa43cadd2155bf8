"""JSON logs (`TOOLOUT_LOG_FORMAT=json`): one object a line, each with the `trace_id` and `job_id` it ran under.

A log line of a job's step can then be found from its trace and the other way round: `job_id` comes from
the step being run (`infra.tracing.current_job`, set by every step of a job) or a log call's
`extra={"job_id": …}`, `trace_id` from the active span (empty while tracing is off). Text logs stay the
default for a terminal.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from infra.settings import Settings
from infra.tracing import LogContext

STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "job_id", "trace_id"}


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "message", "trace_id", "job_id", …extra, "exc_info"?}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", ""),
            "job_id": getattr(record, "job_id", ""),
        }
        entry.update({key: value for key, value in vars(record).items() if key not in STANDARD})
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(settings: Settings) -> bool:
    """With `log_format=json`: the root logger writes JSON lines to stderr (everything propagates there,
    uvicorn's and Celery's loggers included). False (and nothing touched) for text logs.
    """
    if settings.log_format != "json":
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(LogContext())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    return True
