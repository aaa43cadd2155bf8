"""What an extraction would cost, without running it: the start step's decisions plus litellm's prices.

The budget, the route and the chunks come from the very functions the worker's start step calls
(`extraction.strategies.planning`, `infra.job_planning`), and the counting from `extraction.strategies.estimate`, which
follows the reduce plan the job will follow; this module only adds the deployment around them
(settings, the blob store) and the price of those tokens from litellm's cost map.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from extraction.errors import ExtractionError
from extraction.strategies import estimate
from extraction.strategies.mapreduce import ModelLimits
from extraction.strategies.planning import chunk_budget_for, route_document
from extraction.strategies.routing import Mode, RoutingDecision
from extraction.texts.nonce import WIDEST_NONCE
from extraction.texts.prompts import PromptContext
from extraction.texts.tools import sub_agent_tools
from infra.blobstore import BlobStore
from infra.content import structured_kind
from infra.errors import BudgetExceeded
from infra.job_planning import agent_bounds, plan_output_chunks, planning_rules
from infra.model_info import price_usd
from infra.records import OutputRecord, RecordStore, session_prefix
from infra.settings import Settings

Pricer = Callable[[str, int, int], float | None]
"""(model, input tokens, output tokens) → USD, or None when the model has no price."""


class ExtractionEstimate(estimate.UsageEstimate):
    """A job's expected route, calls, tokens and cost; `*_max` are upper bounds."""

    model: str
    mode: Mode = Field(description="the strategy the job would run (auto resolved)")
    routing_reason: str
    chunks: int = Field(description="chunks the job would map (0 unless full-chunked)")
    cost_usd: float | None = Field(description="input and output tokens at litellm's prices; null when unpriced")
    cost_usd_max: float | None
    notes: list[str] = Field(default_factory=list, description="what the numbers cannot promise, and why")


def estimate_extraction(
    output: OutputRecord,
    extract: str,
    mode: Mode | str,
    *,
    settings: Settings,
    blobs: BlobStore,
    records: RecordStore,
    limits: ModelLimits,
    price: Pricer = price_usd,
) -> ExtractionEstimate:
    """The estimate of extracting `extract` from `output` in `mode` on this deployment's model."""
    ctx = prompt_context(output, extract)
    rules = planning_rules(settings)
    try:
        budget = chunk_budget_for(ctx, limits, rules)
    except ExtractionError as exc:  # the job's start step falls back to truncate on the same error
        decision = RoutingDecision(mode=Mode.TRUNCATE, reason=f"fallback: {exc.message}")
        return _priced(settings, decision, 0, estimate.no_model_calls(), [], price)
    stats = output.stats
    kind = structured_kind(blobs, output) if Mode.parse(mode) is Mode.AUTO else None
    decision = route_document(
        mode,
        tokens=stats.tokens,
        avg_line_bytes=stats.avg_line_bytes,
        budget=budget,
        rules=rules,
        structured=kind.value if kind else None,
    )
    if decision.mode is Mode.TRUNCATE:
        return _priced(settings, decision, 0, estimate.no_model_calls(), [], price)
    if decision.mode in (Mode.READ_GREP, Mode.QUERY):  # both sub-agents: estimated by their bounds
        usage = read_grep_usage(output, ctx, settings, limits)
        return _priced(settings, decision, 0, usage, [_BOUNDS_NOTE], price)
    chunks = plan_output_chunks(blobs, records, output, budget, rules.chunk_overlap)
    usage = estimate.full_chunked(
        chunks, ctx, limits, overlap_percent=rules.overlap_percent, answer_tokens=settings.estimate_answer_tokens
    )
    notes = full_chunked_notes(usage, settings, bounded=estimate.full_answers_fit(ctx, limits))
    return _priced(settings, decision, len(chunks), usage, notes, price)


def prompt_context(output: OutputRecord, extract: str) -> PromptContext:
    """The job's prompt context before it has a nonce (budgets are measured with the widest one anyway)."""
    stats = output.stats
    return PromptContext(
        tool_name=output.tool_name,
        tool_args_json=output.tool_args,
        extract=extract,
        nonce=WIDEST_NONCE,
        doc_bytes=stats.bytes,
        doc_lines=stats.lines,
        doc_tokens=stats.tokens,
    )


def read_grep_usage(
    output: OutputRecord, ctx: PromptContext, settings: Settings, limits: ModelLimits
) -> estimate.UsageEstimate:
    return estimate.read_grep(
        ctx,
        limits,
        agent_bounds(settings, limits),
        handle_filename=output.handle,
        root=session_prefix(output.session_id),
        tools=sub_agent_tools(),
    )


_BOUNDS_NOTE = (
    "read-grep: the sub-agent chooses its own turns, so these are its bounds (agent_max_turns calls, "
    "agent_max_total_tokens plus one last window), not a forecast; most jobs spend far less"
)


def full_chunked_notes(usage: estimate.UsageEstimate, settings: Settings, *, bounded: bool = True) -> list[str]:
    answer = settings.estimate_answer_tokens
    notes = [
        f"output tokens assume answers of {answer} tokens (the model decides; "
        "*_max assume every answer at the model's output limit)"
    ]
    if usage.reduce_calls_max:
        notes.append(
            "the reduce follows the real answers: the job groups them by their real sizes when the maps are done "
            f"(answers that find nothing take no room), so calls and reduce_calls assume answers of {answer} tokens "
            "and calls_max, reduce_calls_max and reduce_levels_max are the upper bound (every answer at the model's "
            "output limit); a job with short answers makes fewer"
        )
    if not bounded:
        notes.append(
            "two full-length answers do not fit one reduce call at this window, so there is no upper bound on the "
            "reduce calls: *_max assume answers of the estimated size too"
        )
    if usage.reduce_levels_max > settings.max_reduce_depth:
        notes.append(
            f"the reduce may need up to {usage.reduce_levels_max} levels of groups but max_reduce_depth is "
            f"{settings.max_reduce_depth}: a job whose answers need more falls back to truncate after its maps"
        )
    if usage.calls > settings.max_llm_calls_per_job:
        notes.append(
            f"{usage.calls} calls exceed max_llm_calls_per_job={settings.max_llm_calls_per_job}: the job "
            "would fall back to truncate when the budget runs out"
        )
    return notes


def _priced(
    settings: Settings,
    decision: RoutingDecision,
    chunks: int,
    usage: estimate.UsageEstimate,
    notes: list[str],
    price: Pricer,
) -> ExtractionEstimate:
    model = settings.model
    return ExtractionEstimate(
        **usage.model_dump(),
        model=model,
        mode=decision.mode,
        routing_reason=decision.reason,
        chunks=chunks,
        cost_usd=price(model, usage.input_tokens, usage.output_tokens) if usage.calls else 0.0,
        cost_usd_max=price(model, usage.input_tokens_max, usage.output_tokens_max) if usage.calls else 0.0,
        notes=notes,
    )


def check_budget(found: ExtractionEstimate, *, max_input_tokens: int | None, max_cost_usd: float | None) -> None:
    """Refuse (`BudgetExceeded`, a 422) a job whose estimate is over the caller's budget.

    The point estimate is what is compared (for read-grep that is its bound). A cost budget on a
    model litellm has no price for cannot be checked, so it is refused too, rather than ignored.
    """
    over: list[str] = []
    if max_input_tokens is not None and found.input_tokens > max_input_tokens:
        over.append(f"{found.input_tokens} input tokens > max_input_tokens={max_input_tokens}")
    if max_cost_usd is not None and (found.cost_usd is None or found.cost_usd > max_cost_usd):
        cost = "an unknown cost (the model has no price in litellm's cost map)"
        over.append(f"{cost if found.cost_usd is None else f'${found.cost_usd:.4f}'} > max_cost_usd={max_cost_usd}")
    if over:
        raise BudgetExceeded(
            f"the extraction is over its budget: {'; '.join(over)}", estimate=found.model_dump(mode="json")
        )
