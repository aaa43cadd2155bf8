"""What every strategy's steps share: the live job they work on, and the start step that chose their strategy.

Every step starts with `load`: a job canceled, finished by a twin or by the watchdog, or whose output is gone makes
the step a no-op, which is how cancellation stays cooperative. The start step (`start`, then `follow`) measures the
map prompt, computes the chunk budget, asks the engine for the mode (`extraction.strategies.planning`), records it
and answers the strategy's first step (`ReadGrep`, `Query`, the full-chunked `Fanout` of maps) or ends the job in
the truncate fallback; the query strategy comes back to `follow` when an `auto` job's output does not load as tables.
The strategies (`workers.job.pipeline`, `workers.job.agent`, `workers.job.query`) share this module, the runtime
and its model gate (`workers.job.runtime`) and the job's endings (`workers.job.outcomes`), and import no other
strategy (the `strategies` contract in pyproject.toml).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from extraction.documents.chunking import Chunk
from extraction.errors import ExtractionError, NotFound
from extraction.protocols import Usage
from extraction.strategies import planning
from extraction.strategies.routing import Mode, RoutingDecision
from extraction.texts.prompts import PromptContext
from infra.outputs.content import structured_kind
from infra.outputs.views import reading_view
from infra.planning.plans import plan_output_chunks, planning_rules
from infra.stores.jobs import JobRecord, JobStatus, JobStores
from infra.stores.records import OutputRecord
from infra.tracing import traced_step
from workers.job import outcomes
from workers.job.runtime import Runtime, stage_limits
from workers.job.steps import Fanout, Map, Next, Query, ReadGrep, ReduceGroup, ReduceStage, chunk_covers

log = logging.getLogger("toolout.workers")


@dataclass(frozen=True)
class LiveJob:
    job: JobRecord
    output: OutputRecord
    cite: bool = False

    @property
    def prompt(self) -> PromptContext:
        stats = self.output.stats
        return PromptContext(
            tool_name=self.job.tool_name,
            tool_args_json=self.output.tool_args,
            extract=self.job.extract,
            nonce=self.job.nonce,
            doc_bytes=stats.bytes,
            doc_lines=stats.lines,
            doc_tokens=stats.tokens,
            cite=self.cite,
        )


def load(rt: Runtime, job_id: str) -> LiveJob | None:
    """The job and its output, or None when the job ended (canceled, finished) or its output is gone."""
    return live(rt, rt.jobs.records.get(job_id))


def live(rt: Runtime, job: JobRecord) -> LiveJob | None:
    """`load` for a job record already read (a map reads it with its chunk, in one round trip)."""
    if job.status.terminal:
        return None
    output = rt.records.outputs.find_output(job.handle, job.tenant)
    if output is None:
        outcomes.finish_unknown_handle(rt, job)
        return None
    return LiveJob(job, reading_view(output, job.view, redact=job.redact), rt.settings.evidence)


def job_over(jobs: JobStores, job_id: str) -> bool:
    """Whether the job is gone or canceled (its session ended under a running step: whatever the step then
    trips over is the expected end of its work); False when that cannot be told, so a failure stands."""
    try:
        return jobs.records.get(job_id).status is JobStatus.CANCELED
    except NotFound:
        return True
    except Exception:  # noqa: BLE001 - the store is down: the step's own error is the one to report
        return False


def strategy_failed(rt: Runtime, live: LiveJob, exc: ExtractionError, where: str | None = None) -> None:
    """Any step whose strategy cannot go on: charge the attempts it spent, then fall back to truncate."""
    spent = exc.details.get("usage")
    if spent:
        rt.jobs.accounting.add_usage(live.job.id, Usage.model_validate(spent))
    outcomes.fall_back_to_truncate(rt, live.job, live.output, f"{where}: {exc.message}" if where else exc.message)


# --- start ----------------------------------------------------------------------------------------
@traced_step("job.start")
def start(rt: Runtime, job_id: str) -> Next:
    live = load(rt, job_id)
    if live is None:
        return None
    rt.jobs.records.mark_running(job_id)
    try:
        return _start(rt, live)
    except ExtractionError as exc:
        strategy_failed(rt, live, exc)
        return None


def _start(rt: Runtime, live: LiveJob) -> Next:
    budget = chunk_budget_for(rt, live)
    return follow(rt, live, decide(rt, live, budget), budget)


def follow(rt: Runtime, live: LiveJob, decision: RoutingDecision, budget: int) -> Next:
    """Record the mode choice on the job and return its first step (the query step chooses again through here)."""
    rt.jobs.records.update(live.job.id, mode_used=decision.mode.value, routing_reason=decision.reason)
    log.info("job %s routed to %s: %s", live.job.id, decision.mode, decision.reason)
    if decision.mode is Mode.TRUNCATE:
        outcomes.finish_truncate(rt, live.job, live.output)
        return None
    if decision.mode is Mode.READ_GREP:
        return ReadGrep(live.job.id)
    if decision.mode is Mode.QUERY:
        return Query(live.job.id)
    chunks = plan_job_chunks(rt, live, budget)
    rt.jobs.records.update(live.job.id, chunks_total=len(chunks))
    return map_chunks(live.job.id, chunks)


def map_chunks(job_id: str, chunks: list[Chunk]) -> Fanout:
    """A map per chunk, then the reduce stage over them (each map output covers its own chunk)."""
    maps: list[Map | ReduceGroup] = [Map(job_id, c.index, c.start, c.end) for c in chunks]
    return Fanout(maps, ReduceStage(job_id, 0, chunk_covers(chunks)))


def chunk_budget_for(rt: Runtime, live: LiveJob) -> int:
    return planning.chunk_budget_for(live.prompt, stage_limits(rt, live.job, "map"), planning_rules(rt.settings))


def decide(rt: Runtime, live: LiveJob, budget: int, *, as_text: bool = False) -> RoutingDecision:
    """The mode choice; `auto` sniffs the first bytes for structured data unless `as_text` (it did not load)."""
    stats = live.output.stats
    sniff = Mode.parse(live.job.mode_requested) is Mode.AUTO and not as_text
    kind = structured_kind(rt.blobs, live.output) if sniff else None
    return planning.route_document(
        live.job.mode_requested,
        tokens=stats.tokens,
        avg_line_bytes=stats.avg_line_bytes,
        budget=budget,
        rules=planning_rules(rt.settings),
        structured=kind.value if kind else None,
    )


def plan_job_chunks(rt: Runtime, live: LiveJob, budget: int) -> list[Chunk]:
    return plan_output_chunks(rt.blobs, rt.records, live.output, budget, rt.settings.chunk_overlap)
