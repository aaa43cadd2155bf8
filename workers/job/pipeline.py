"""The full-chunked strategy: a map per chunk, then reduce stages (and reduce groups) until one answer is left.

Each step loads the job (`workers.job.context.load`), does one piece of work, persists it, and returns what should
run next (`workers.job.steps`; `workers.job.drive` runs it on either executor); the start step that plans the chunks
is `workers.job.context`'s. Each is traced where it is defined (`infra.tracing.traced_step`), so it has one signature
wherever it runs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from extraction.documents.tokens import decode_lossy
from extraction.errors import ExtractionError
from extraction.protocols import Usage
from extraction.strategies.mapreduce import map_chunk, plan_reduce_groups, reduce_chunk_outputs, reduce_inputs
from extraction.strategies.reduce_plan import ensure_depth
from extraction.strategies.routing import Mode
from extraction.texts.report import FinalReport, says_not_found
from infra.outputs.content import read_content
from infra.planning.plans import planning_rules
from infra.stores.jobs import traces
from infra.tracing import traced_step
from workers.job import evidence, outcomes
from workers.job.context import LiveJob, chunk_budget_for, live, load, plan_job_chunks, strategy_failed
from workers.job.runtime import GatedLLM, Runtime, job_llm, stage_limits
from workers.job.steps import Cover, Fanout, Map, Next, ReduceGroup, ReduceStage, Settled, Span, group_covers

log = logging.getLogger("toolout.workers")


def overlap_percent(rt: Runtime) -> float:
    return planning_rules(rt.settings).overlap_percent


# --- map ---------------------------------------------------------------------------------------
@traced_step("job.map", lambda index, start, end, **_: {"chunk_index": index, "start": start, "end": end})
def run_map(rt: Runtime, job_id: str, index: int, start: int, end: int, *, by: str | None = None) -> Settled | None:
    """Extract from one chunk; a redelivered task that finds the chunk settled (output or failure) does nothing.

    `Settled` when the output was recorded (the level is settled with it, `by` the map task's id); None when
    the caller must still settle the level (nothing recorded here, or a failure recorded).
    """
    job, done, reserved = rt.jobs.fanin.begin_map(job_id, index, rt.settings.max_llm_calls_per_job)
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
    first_line = evidence.output_lines(rt, current.output).line_of(start) if current.cite else 1
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
            first_line=first_line,
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
        rt.jobs.fanin.record_chunk_and_settle(current.job.id, index, report.content, usage, calls, by=by, trace=events)
    )


def _map_failed(rt: Runtime, current: LiveJob, exc: ExtractionError, span: Span) -> None:
    """The chunk's part fails (the job reads on without it), or, for any other failure, the job falls back."""
    if isinstance(exc, outcomes.PART_FAILURES):
        outcomes.record_failed_part(
            rt, current.job, current.output, outcomes.failed_part(current.job, 0, span[0], [span], exc), exc
        )
        return
    strategy_failed(rt, current, exc, f"chunk {span[0] + 1} of {current.job.chunks_total} failed")


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
    return rt.jobs.fanin.chunk_outputs(job_id) if level == 0 else rt.jobs.fanin.reduce_outputs(job_id, level)


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
    rt.jobs.records.update(live.job.id, reduce_level=level + 1, reduce_tree=tree)
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
    stored = rt.jobs.fanin.reduce_output(live.job.id, level + 1, 0)
    if stored is not None:
        return stored
    attempts = 1 + rt.settings.map_retry_on_bad_report
    started = time.monotonic()
    gate = job_llm(rt, live.job, "reduce")
    report, usage = reduce_chunk_outputs(gate, live.prompt, outputs, limits=gate.limits, attempts=attempts)
    rt.jobs.fanin.record_reduce(live.job.id, level + 1, 0, report.content, usage)
    seconds = time.monotonic() - started
    rt.note(live.job.id, traces.reduce_event(level + 1, 0, len(outputs), report.content, usage, seconds))
    return rt.jobs.fanin.reduce_output(live.job.id, level + 1, 0) or report.content


def _finish_single(rt: Runtime, live: LiveJob, content: str, **fields: object) -> None:
    """Finish with a final answer: the only output with content (one chunk's map answer needs no reduce:
    a single pass), the final reduce's, or none at all (every part found nothing: NO RELEVANT DATA FOUND)."""
    report = FinalReport(content=content, found=bool(content.strip()) and not says_not_found(content), closed=True)
    rt.note(live.job.id, traces.answer_event(report.content, reduced="reduce_tree" in fields))
    cited = (
        evidence.for_chunks(rt, live.job, live.output, content, plan_job_chunks(rt, live, chunk_budget_for(rt, live)))
        if live.cite
        else None
    )
    outcomes.finish_with_report(rt, live.job, report, Mode.FULL_CHUNKED.value, cited, **fields)


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
        rt.jobs.fanin.record_reduce(job_id, level + 1, group, inputs[members[0]], Usage())
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
    rt.jobs.fanin.record_reduce(job_id, level + 1, group, report.content, usage)
    seconds = time.monotonic() - started
    rt.note(job_id, traces.reduce_event(level + 1, group, len(members), report.content, usage, seconds))


def _reduced(rt: Runtime, job_id: str, level: int, group: int) -> bool:
    return rt.jobs.fanin.reduce_output(job_id, level, group) is not None
