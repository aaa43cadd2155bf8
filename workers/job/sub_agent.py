"""The sub-agent both agent strategies run: a bounded tool loop on the agent stage's model over the stored output.

Read-grep (`workers.job.agent`) gives it Read and Grep; the query strategy (`workers.job.query`) adds SQL over
the output's tables. Either way the loop ends the job here: with its report (its quotes checked when the job
asked for evidence), or in the truncate fallback; and each tool call is written to the job's trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from extraction.protocols import Message
from extraction.strategies.agent import ToolExecutor, run_agent
from extraction.strategies.routing import Mode
from infra.outputs.stored import PinnedTools, StoredOutput, grep_time_budget
from infra.planning.plans import agent_bounds
from infra.stores.jobs import traces
from workers.job import outcomes
from workers.job.context import LiveJob
from workers.job.evidence import ToolLog, for_agent
from workers.job.runtime import Runtime, job_llm


def raw_tools(rt: Runtime, live: LiveJob) -> PinnedTools:
    """Read and Grep on the job's stored output, Grep within the deployment's time budget."""
    output = StoredOutput(
        rt.blobs,
        live.output,
        block_size=rt.settings.blob_read_block_bytes,
        grep_time_budget=grep_time_budget(rt.settings),
    )
    return PinnedTools(output)


def run_sub_agent(
    rt: Runtime, live: LiveJob, messages: list[Message], tools: list[dict[str, Any]], execute: ToolExecutor, mode: Mode
) -> None:
    """The bounded tool loop on the agent stage's model, then the job's end: its report, or the truncate fallback."""
    job_id, gate = live.job.id, job_llm(rt, live.job, "agent")
    log = ToolLog()
    outcome = run_agent(
        gate,
        messages,
        tools=tools,
        execute=traced_tools(rt, job_id, log.recording(execute), time.monotonic),
        nonce=live.job.nonce,
        bounds=agent_bounds(rt.settings, gate.limits),
        on_turn=lambda calls: rt.jobs.accounting.add_agent_progress(job_id, turns=1, tool_calls=calls),
        should_stop=lambda: rt.jobs.records.is_terminal(job_id),
    )
    rt.jobs.accounting.add_usage(job_id, outcome.usage)
    if outcome.report is not None:
        cited = for_agent(rt, live.output, outcome.report.content, log) if live.cite else None
        outcomes.finish_with_report(rt, live.job, outcome.report, mode.value, cited)
    else:
        outcomes.fall_back_to_truncate(rt, live.job, live.output, f"{mode.value} failed: {outcome.failure}")


def traced_tools(rt: Runtime, job_id: str, execute: ToolExecutor, clock: Callable[[], float]) -> ToolExecutor:
    """`execute`, each call written to the job's trace with its arguments, its result (cut) and its seconds."""

    def run(name: str, args: dict[str, Any]) -> str:
        started = clock()
        try:
            result = execute(name, args)
        except Exception as exc:
            rt.note(job_id, traces.tool_event(name, args, clock() - started, error=str(exc)))
            raise
        rt.note(job_id, traces.tool_event(name, args, clock() - started, result=result))
        return result

    return run
