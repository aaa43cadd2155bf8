"""The steps of one extraction job, written against `Runtime`, free of Celery.

Each step loads what it needs from the stores, does one piece of work, persists it, and
returns what should run next (`workers.job.steps`; `workers.job.drive` runs it on either executor).
Every step starts by checking that the job is still live, which is how cancellation stays cooperative.
Each is traced where it is defined (`infra.tracing.traced_step`), so it has one signature wherever it runs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from extraction.documents.chunking import Chunk
from extraction.documents.tokens import decode_lossy
from extraction.errors import ExtractionError, NotFound
from extraction.protocols import Usage
from extraction.strategies import planning
from extraction.strategies.mapreduce import map_chunk, plan_reduce_groups, reduce_chunk_outputs, reduce_inputs
from extraction.strategies.reduce_plan import ensure_depth
from extraction.strategies.routing import Mode, RoutingDecision
from extraction.texts.prompts import PromptContext
from extraction.texts.report import FinalReport, says_not_found
from infra.outputs.content import read_content, structured_kind
from infra.outputs.views import reading_view
from infra.planning.plans import plan_output_chunks, planning_rules
from infra.stores.jobs import JobRecord, JobStatus, JobStore, traces
from infra.stores.records import OutputRecord
from infra.tracing import traced_step
from workers.job import outcomes
from workers.job.runtime import GatedLLM, Runtime, job_llm, stage_limits
from workers.job.steps import (
    Cover,
    Fanout,
    Map,
    Next,
    Query,
    ReadGrep,
    ReduceGroup,
    ReduceStage,
    Settled,
    Span,
    chunk_covers,
    group_covers,
)

log = logging.getLogger("toolout.workers")


@dataclass(frozen=True)
class LiveJob:
    job: JobRecord
    output: OutputRecord

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
        )


def load(rt: Runtime, job_id: str) -> LiveJob | None:
    """The job and its output, or None when the job ended (canceled, finished) or its output is gone."""
    return live(rt, rt.jobs.get(job_id))


def live(rt: Runtime, job: JobRecord) -> LiveJob | None:
    """`load` for a job record already read (a map reads it with its chunk, in one round trip)."""
    if job.status.terminal:
        return None
    output = rt.records.find_output(job.handle, job.tenant)
    if output is None:
        outcomes.finish_unknown_handle(rt, job)
        return None
    return LiveJob(job, reading_view(output, job.view))


def job_over(jobs: JobStore, job_id: str) -> bool:
    """Whether the job is gone or canceled (its session ended under a running step: whatever the step then
    trips over is the expected end of its work); False when that cannot be told, so a failure stands."""
    try:
        return jobs.get(job_id).status is JobStatus.CANCELED
    except NotFound:
        return True
    except Exception:  # noqa: BLE001 - the store is down: the step's own error is the one to report
        return False


# --- start ---------------------------------------------------------------------------------------
@traced_step("job.start")
def start(rt: Runtime, job_id: str) -> Next:
    live = load(rt, job_id)
    if live is None:
        return None
    rt.jobs.mark_running(job_id)
    try:
        return _start(rt, live)
    except ExtractionError as exc:
        strategy_failed(rt, live, exc)
        return None


def _start(rt: Runtime, live: LiveJob) -> Next:
    budget = chunk_budget_for(rt, live)
    return follow(rt, live, decide(rt, live, budget), budget)


def follow(rt: Runtime, live: LiveJob, decision: RoutingDecision, budget: int) -> Next:
    """Record the route on the job and return its first step (the query step re-routes through here)."""
    rt.jobs.update(live.job.id, mode_used=decision.mode.value, routing_reason=decision.reason)
    log.info("job %s routed to %s: %s", live.job.id, decision.mode, decision.reason)
    if decision.mode is Mode.TRUNCATE:
        outcomes.finish_truncate(rt, live.job, live.output)
        return None
    if decision.mode is Mode.READ_GREP:
        return ReadGrep(live.job.id)
    if decision.mode is Mode.QUERY:
        return Query(live.job.id)
    chunks = plan_job_chunks(rt, live, budget)
    rt.jobs.update(live.job.id, chunks_total=len(chunks))
    return map_chunks(live.job.id, chunks)


def map_chunks(job_id: str, chunks: list[Chunk]) -> Fanout:
    """A map per chunk, then the reduce stage over them (each map output covers its own chunk)."""
    maps: list[Map | ReduceGroup] = [Map(job_id, c.index, c.start, c.end) for c in chunks]
    return Fanout(maps, ReduceStage(job_id, 0, chunk_covers(chunks)))


def chunk_budget_for(rt: Runtime, live: LiveJob) -> int:
    return planning.chunk_budget_for(live.prompt, stage_limits(rt, live.job, "map"), planning_rules(rt.settings))


def overlap_percent(rt: Runtime) -> float:
    return planning_rules(rt.settings).overlap_percent


def decide(rt: Runtime, live: LiveJob, budget: int, *, as_text: bool = False) -> RoutingDecision:
    """The route; `auto` sniffs the first bytes for structured data unless `as_text` (it did not load)."""
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


# --- map ---------------------------------------------------------------------------------------
@traced_step("job.map", lambda index, start, end, **_: {"chunk_index": index, "start": start, "end": end})
def run_map(rt: Runtime, job_id: str, index: int, start: int, end: int, *, by: str | None = None) -> Settled | None:
    """Extract from one chunk; a redelivered task that finds the chunk settled (output or failure) does nothing.

    `Settled` when the output was recorded (the level is settled with it, `by` the map task's id); None when
    the caller must still settle the level (nothing recorded here, or a failure recorded).
    """
    job, done, reserved = rt.jobs.begin_map(job_id, index, rt.settings.max_llm_calls_per_job)
    current = live(rt, job)
    if current is None or outcomes.part_failed(current.job, 0, index) or done is not None:
        return None
    gate = job_llm(rt, current.job, "map", reserved=int(reserved), defer_counts=True)
    try:
        return _map(rt, current, gate, index, start, end, by)
    finally:
        gate.flush_counts()  # calls that no recorded output took (a failure, an outage): counted all the same


def _map(
    rt: Runtime, current: LiveJob, gate: GatedLLM, index: int, start: int, end: int, by: str | None
) -> Settled | None:
    text, _ = decode_lossy(read_content(rt.blobs, current.output, start, end))
    started = time.monotonic()
    try:
        report, usage = map_chunk(
            gate,
            current.prompt,
            text,
            index=index,
            total=current.job.chunks_total,
            overlap_percent=overlap_percent(rt),
            limits=gate.limits,
            attempts=1 + rt.settings.map_retry_on_bad_report,
        )
    except ExtractionError as exc:
        gate.flush_counts()  # before the failure is recorded: recording it may end the job
        _map_failed(rt, current, exc, [index, start, end])
        return None
    calls = gate.take_counts()
    seconds = time.monotonic() - started
    events = (
        [traces.map_event(index, (start, end), text, report.content, usage, seconds)]
        if rt.settings.trace_max_bytes
        else []
    )
    return Settled(
        rt.jobs.record_chunk_and_settle(current.job.id, index, report.content, usage, calls, by=by, trace=events)
    )


def _map_failed(rt: Runtime, current: LiveJob, exc: ExtractionError, span: Span) -> None:
    """The chunk's part fails (the job reads on without it), or, for any other failure, the job falls back."""
    if isinstance(exc, outcomes.PART_FAILURES):
        outcomes.record_failed_part(
            rt, current.job, current.output, outcomes.failed_part(current.job, 0, span[0], [span], exc), exc
        )
        return
    strategy_failed(rt, current, exc, f"chunk {span[0] + 1} of {current.job.chunks_total} failed")


def strategy_failed(rt: Runtime, live: LiveJob, exc: ExtractionError, where: str | None = None) -> None:
    """Any step whose strategy cannot go on: charge the attempts it spent, then fall back to truncate."""
    spent = exc.details.get("usage")
    if spent:
        rt.jobs.add_usage(live.job.id, Usage.model_validate(spent))
    outcomes.fall_back_to_truncate(rt, live.job, live.output, f"{where}: {exc.message}" if where else exc.message)


# --- reduce --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """What one reduce level works on: the outputs the reduce reads, in order, and what each covers.

    Empty outputs, and NO RELEVANT DATA FOUND answers once any output found something, are left out
    (`mapreduce.reduce_inputs`); the stage and its group tasks build this same list from the same
    settled parts, so group members (positions here) mean the same to both.
    """

    texts: list[str]
    covers: list[Cover]


def level_outputs(rt: Runtime, job_id: str, level: int) -> dict[int, str]:
    """Level 0 holds the map outputs; level n > 0 the outputs of the n-th round of group reduces."""
    return rt.jobs.chunk_outputs(job_id) if level == 0 else rt.jobs.reduce_outputs(job_id, level)


def with_content(stored: dict[int, str]) -> list[int]:
    """Indices of the outputs the reduce reads, in order (`mapreduce.reduce_inputs`)."""
    order = sorted(stored)
    return [order[position] for position in reduce_inputs([stored[i] for i in order])]


def level_inputs(stored: dict[int, str], covers: list[Cover]) -> Inputs:
    present = with_content(stored)
    return Inputs([stored[i] for i in present], [covers[i] for i in present])


@traced_step("job.reduce", lambda level, covers: {"level": level, "inputs": len(covers)})
def run_reduce_stage(rt: Runtime, job_id: str, level: int, covers: list[Cover]) -> Next:
    """Finish the job if this level's outputs fit one call; otherwise schedule another round of groups.

    `covers[i]` is what part `i` of this level covers (chunk `i` at level 0, group `i` above): every
    part must be settled, as an output or a failure, before the stage runs.
    """
    live = load(rt, job_id)
    if live is None:
        return None
    stored = level_outputs(rt, job_id, level)
    if _unsettled(rt, live, stored, level, len(covers)) or outcomes.fall_back_if_over_limit(rt, live.job, live.output):
        return None
    try:
        return _reduce_or_regroup(rt, live, level_inputs(stored, covers), level)
    except ExtractionError as exc:
        strategy_failed(rt, live, exc, "reduce failed")
        return None


def _unsettled(rt: Runtime, live: LiveJob, stored: dict[int, str], level: int, expected: int) -> bool:
    """Parts of this level with neither an output nor a failure: their tasks were lost, so the job falls back."""
    failed = sum(1 for part in live.job.failed_ranges if part.level == level)
    if len(stored) + failed >= expected:
        return False
    what = "chunks" if level == 0 else f"reduce groups of level {level}"
    outcomes.fall_back_to_truncate(
        rt, live.job, live.output, f"only {len(stored) + failed} of {expected} {what} produced a result"
    )
    return True


def _reduce_or_regroup(rt: Runtime, live: LiveJob, inputs: Inputs, level: int) -> Next:
    if len(inputs.texts) <= 1:
        _finish_single(rt, live, inputs.texts[0] if inputs.texts else "")
        return None
    groups = plan_reduce_groups(inputs.texts, live.prompt, stage_limits(rt, live.job, "reduce"))
    tree = [*live.job.reduce_tree[:level], [len(group) for group in groups]]
    if len(groups) == 1:
        _finish_single(rt, live, _final_reduce(rt, live, inputs.texts, level), reduce_tree=tree)
        return None
    ensure_depth(level + 1, rt.settings.max_reduce_depth)
    rt.jobs.update(live.job.id, reduce_level=level + 1, reduce_tree=tree)
    covers = group_covers(groups, inputs.covers)
    reduces: list[Map | ReduceGroup] = [
        ReduceGroup(live.job.id, level, i, members, covers[i]) for i, members in enumerate(groups)
    ]
    return Fanout(reduces, ReduceStage(live.job.id, level + 1, covers))


def _final_reduce(rt: Runtime, live: LiveJob, outputs: list[str], level: int) -> str:
    """The last reduce call, stored with HSETNX like a group's output (group 0 one level up).

    A job re-submitted by the watchdog can race the chord body it replaced; whichever twin
    stores first is the answer, and only its call is counted in `usage`, as for map outputs.
    """
    stored = rt.jobs.reduce_output(live.job.id, level + 1, 0)
    if stored is not None:
        return stored
    attempts = 1 + rt.settings.map_retry_on_bad_report
    started = time.monotonic()
    gate = job_llm(rt, live.job, "reduce")
    report, usage = reduce_chunk_outputs(gate, live.prompt, outputs, limits=gate.limits, attempts=attempts)
    rt.jobs.record_reduce(live.job.id, level + 1, 0, report.content, usage)
    seconds = time.monotonic() - started
    rt.note(live.job.id, traces.reduce_event(level + 1, 0, len(outputs), report.content, usage, seconds))
    return rt.jobs.reduce_output(live.job.id, level + 1, 0) or report.content


def _finish_single(rt: Runtime, live: LiveJob, content: str, **fields: object) -> None:
    """Finish with a final answer: the only output with content (one chunk's map answer needs no reduce:
    a single pass), the final reduce's, or none at all (every part found nothing: NO RELEVANT DATA FOUND)."""
    report = FinalReport(content=content, found=bool(content.strip()) and not says_not_found(content), closed=True)
    rt.note(live.job.id, traces.answer_event(report.content, reduced="reduce_tree" in fields))
    outcomes.finish_with_report(rt, live.job, report, Mode.FULL_CHUNKED.value, **fields)


@traced_step(
    "job.reduce_group",
    lambda level, group, members, cover: {"level": level, "group_index": group, "inputs": len(members)},
)
def run_reduce_group(rt: Runtime, job_id: str, level: int, group: int, members: list[int], cover: Cover) -> None:
    """Reduce one group of level-`level` outputs into one output at level `level + 1` (a lone output passes as is).

    `members` are positions in the level's inputs (`Inputs`); `cover` is what the group holds of the
    document, named on the job when the group still cannot be reduced after its retry.
    """
    live = load(rt, job_id)
    if live is None or outcomes.part_failed(live.job, level + 1, group) or _reduced(rt, job_id, level + 1, group):
        return
    stored = level_outputs(rt, job_id, level)
    inputs = [stored[i] for i in with_content(stored)]
    if len(members) == 1:
        rt.jobs.record_reduce(job_id, level + 1, group, inputs[members[0]], Usage())
        return
    started = time.monotonic()
    try:
        gate = job_llm(rt, live.job, "reduce")
        attempts = 1 + rt.settings.map_retry_on_bad_report
        report, usage = reduce_chunk_outputs(
            gate, live.prompt, [inputs[i] for i in members], limits=gate.limits, attempts=attempts
        )
    except outcomes.PART_FAILURES as exc:
        outcomes.record_failed_part(
            rt, live.job, live.output, outcomes.failed_part(live.job, level + 1, group, cover, exc), exc
        )
        return None
    except ExtractionError as exc:
        strategy_failed(rt, live, exc, f"reduce group {group + 1} at level {level + 1} failed")
        return None
    rt.jobs.record_reduce(job_id, level + 1, group, report.content, usage)
    seconds = time.monotonic() - started
    rt.note(job_id, traces.reduce_event(level + 1, group, len(members), report.content, usage, seconds))


def _reduced(rt: Runtime, job_id: str, level: int, group: int) -> bool:
    return rt.jobs.reduce_output(job_id, level, group) is not None
