"""The query strategy's preload of a just-stored output: no job's step (no job id), and never an error."""

from __future__ import annotations

import logging

from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers")


def preload(rt: Runtime, handle: str, tenant: str) -> str:
    """Load the output's tables now (`workers.job.query.preload`); a failure leaves the first question to load."""
    try:
        from workers.job.query import preload as _preload  # DuckDB: imported by the worker that runs a preload

        return _preload(rt, handle, tenant)
    except Exception:
        log.warning("output %s: preload failed; its first question will load it", handle, exc_info=True)
        return "failed"
