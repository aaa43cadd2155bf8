"""Every model call a job makes passes one gate: the job must still be live and within its call budget.

Wrapping the job's `LLM` (instead of sprinkling checks through the steps) puts the check exactly
between LLM calls — between the attempts of one map, between agent turns, before each reduce —
without the pure engine knowing about Redis. A refused call raises an `ExtractionError`, which
the steps already turn into the job's ending through `workers.outcomes`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from extraction.errors import ExtractionError
from extraction.protocols import LLM, LLMReply, Message
from infra import tracing
from infra.errors import LLMBudgetExhausted
from infra.jobstore import JobStore
from workers.runtime import Runtime

log = logging.getLogger("toolout.workers")


class JobEnded(ExtractionError):
    """The job was canceled or finished meanwhile (by a faster twin task or the watchdog): stop calling the model."""

    code = "job_ended"


@dataclass
class GatedLLM:
    """An `LLM` that reserves one call of the job's budget (atomically, in Redis) before each call.

    `reserved` calls were reserved already (a map reserves its first with the read it starts with).
    """

    llm: LLM
    jobs: JobStore
    job_id: str
    max_calls: int
    reserved: int = 0

    def complete(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        self._reserve()
        with tracing.model_span(getattr(self.llm, "model", None), self.job_id) as span:
            reply = self.llm.complete(messages, tools=tools, max_tokens=max_tokens)
            tracing.record_usage(span, reply.usage, reply.model)
        return reply

    def _reserve(self) -> None:
        if self.reserved > 0:
            self.reserved -= 1
            return
        if self.jobs.reserve_llm_call(self.job_id, self.max_calls):
            return
        if self.jobs.is_terminal(self.job_id):
            raise JobEnded(f"job {self.job_id} already ended; no further model calls", job_id=self.job_id)
        log.warning("job %s: LLM call budget of %d calls is spent", self.job_id, self.max_calls)
        raise LLMBudgetExhausted(
            f"the job's LLM call budget is spent ({self.max_calls} calls, max_llm_calls_per_job)",
            job_id=self.job_id,
            max_calls=self.max_calls,
        )


def job_llm(rt: Runtime, job_id: str, *, reserved: int = 0) -> GatedLLM:
    """The model as one job may use it: gated by liveness and `max_llm_calls_per_job`."""
    return GatedLLM(rt.llm, rt.jobs, job_id, rt.settings.max_llm_calls_per_job, reserved)
