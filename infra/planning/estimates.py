"""What an extraction would cost, without running it: the start step's decisions plus litellm's prices.

The budget, the mode choice and the chunks come from the very functions the worker's start step calls
(`extraction.strategies.planning`, `infra.planning.plans`), and the counting from
`extraction.strategies.estimate`, which follows the reduce plan the job will follow; this module only
adds the deployment around them (settings, the blob store) and the price of those tokens from litellm's
cost map.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from extraction.documents.chunking import Chunk
from extraction.errors import ExtractionError
from extraction.evidence.citations import numbering_cost
from extraction.strategies import estimate
from extraction.strategies.mapreduce import ModelLimits
from extraction.strategies.planning import chunk_budget_for, route_document
from extraction.strategies.routing import Mode, RoutingDecision
from extraction.texts.nonce import WIDEST_NONCE
from extraction.texts.prompts import PromptContext
from extraction.texts.tools import sub_agent_tools
from infra.blobstore import BlobStore
from infra.errors import BudgetExceeded
from infra.llm.catalog import hedge_policy
from infra.llm.info import price_usd
from infra.outputs.content import read_content, structured_kind
from infra.planning.plans import agent_bounds, plan_output_chunks, planning_rules
from infra.settings import Settings
from infra.stores.records import OutputRecord, RecordStores, session_prefix

Pricer = Callable[[str, int, int], float | None]
"""(model, input tokens, output tokens) → USD, or None when the model has no price."""
Limits = Callable[[str], ModelLimits]
"""model → its limits (`infra.llm.info.model_limits_for`, or one set of limits for every model in tests)."""


class StageEstimate(BaseModel):
    """One stage's share of the estimate (map calls, reduce calls, agent turns), priced with its own model."""

    stage: str
    model: str
    calls: int
    input_tokens: int
    input_tokens_max: int
    output_tokens: int
    output_tokens_max: int
    cost_usd: float | None
    cost_usd_max: float | None


class ExtractionEstimate(estimate.UsageEstimate):
    """A job's expected mode, calls, tokens and cost; `*_max` are upper bounds."""

    model: str = Field(description="the model the request named, else the deployment's TOOLOUT_MODEL")
    stages: list[StageEstimate] = Field(
        default_factory=list, description="each stage that calls a model, with its model and price"
    )
    mode: Mode = Field(description="the strategy the job would run (auto resolved)")
    routing_reason: str
    chunks: int = Field(description="chunks the job would map (0 unless full-chunked)")
    cost_usd: float | None = Field(description="input and output tokens at litellm's prices; null when unpriced")
    cost_usd_max: float | None
    notes: list[str] = Field(default_factory=list, description="what the numbers cannot promise, and why")
    hedge_calls_max: int = Field(
        0, description="hedge copies of slow calls the job may send on top of `calls` (its hedge budget)"
    )
    hedge_input_tokens_max: int = Field(
        0, description="their cost if every hedge is sent: an average call's prompt each (a cancelled copy's bill)"
    )
    hedge_cost_usd_max: float | None = Field(0.0, description="those tokens at the map model's price")


def estimate_extraction(
    output: OutputRecord,
    extract: str,
    mode: Mode | str,
    *,
    settings: Settings,
    blobs: BlobStore,
    records: RecordStores,
    limits: ModelLimits | Limits,
    price: Pricer = price_usd,
    requested_model: str | None = None,
    hedge: bool = True,
) -> ExtractionEstimate:
    """The estimate of extracting `extract` from `output` in `mode`, each stage on its own model, with what
    hedging slow calls may add (`hedge`: the request's option).

    `limits` is a model's limits by name, or one set of limits for every model (tests)."""
    found = _estimate(output, extract, mode, settings, blobs, records, limits, price, requested_model)
    return with_hedges(found, settings, price, settings.stage_models(requested_model)["map"]) if hedge else found


def with_hedges(found: ExtractionEstimate, settings: Settings, price: Pricer, model: str) -> ExtractionEstimate:
    """The estimate plus the job's hedge budget at its worst: every hedge sent, each an average call's prompt.

    Expected hedges are far fewer (a healthy model's calls rarely wait past the trigger: see
    `infra.llm.hedging.policy`), so this is an upper bound, apart from `calls_max` and `input_tokens_max`."""
    if not found.calls:
        return found
    hedges = hedge_policy(settings).budget(found.chunks + 1)
    tokens = hedges * -(-found.input_tokens_max // max(found.calls_max, 1))
    return found.model_copy(
        update={
            "hedge_calls_max": hedges,
            "hedge_input_tokens_max": tokens,
            "hedge_cost_usd_max": price(model, tokens, 0) if hedges else 0.0,
        }
    )


def _estimate(
    output: OutputRecord,
    extract: str,
    mode: Mode | str,
    settings: Settings,
    blobs: BlobStore,
    records: RecordStores,
    limits: ModelLimits | Limits,
    price: Pricer,
    requested_model: str | None,
) -> ExtractionEstimate:
    limits_of = limits if callable(limits) else (lambda _model, fixed=limits: fixed)
    stage = Stages(settings.stage_models(requested_model), limits_of, price, requested_model or settings.model)
    ctx = prompt_context(output, extract, cite=settings.evidence)
    if ctx.cite:
        ctx = ctx.model_copy(update={"number_tokens": number_tokens(blobs, output)})
    rules = planning_rules(settings)
    try:
        budget = chunk_budget_for(ctx, stage.limits("map"), rules)
    except ExtractionError as exc:  # the job's start step falls back to truncate on the same error
        decision = RoutingDecision(mode=Mode.TRUNCATE, reason=f"fallback: {exc.message}")
        return stage.priced(decision, 0, estimate.no_model_calls(), [], [])
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
        return stage.priced(decision, 0, estimate.no_model_calls(), [], [])
    if decision.mode in (Mode.READ_GREP, Mode.QUERY):  # both sub-agents: estimated by their bounds
        usage = read_grep_usage(output, ctx, settings, stage.limits("agent"))
        return stage.priced(decision, 0, usage, [stage.share("agent", usage)], [_BOUNDS_NOTE])
    chunks = plan_output_chunks(blobs, records, output, budget, rules.chunk_overlap)
    usage = estimate.full_chunked(
        chunks,
        ctx,
        stage.limits("reduce"),
        overlap_percent=rules.overlap_percent,
        answer_tokens=settings.estimate_answer_tokens,
    )
    shares = map_and_reduce(stage, chunks, ctx, usage, rules.overlap_percent, settings.estimate_answer_tokens)
    usage = usage.model_copy(update=_summed(shares))
    notes = full_chunked_notes(usage, settings, bounded=estimate.full_answers_fit(ctx, stage.limits("reduce")))
    return stage.priced(decision, len(chunks), usage, shares, notes)


@dataclass(frozen=True)
class Stages:
    """The job's model per stage, their limits and prices."""

    models: dict[str, str]
    limits_of: Limits
    price: Pricer
    model: str

    def limits(self, stage: str) -> ModelLimits:
        return self.limits_of(self.models[stage])

    def share(self, stage: str, usage: estimate.UsageEstimate | _Tokens) -> StageEstimate:
        model = self.models[stage]
        cost = self.price(model, usage.input_tokens, usage.output_tokens) if usage.calls else 0.0
        cost_max = self.price(model, usage.input_tokens_max, usage.output_tokens_max) if usage.calls else 0.0
        fields = {name: getattr(usage, name) for name in _TOKEN_FIELDS}
        return StageEstimate(stage=stage, model=model, cost_usd=cost, cost_usd_max=cost_max, **fields)

    def priced(
        self,
        decision: RoutingDecision,
        chunks: int,
        usage: estimate.UsageEstimate,
        shares: list[StageEstimate],
        notes: list[str],
    ) -> ExtractionEstimate:
        costs = [share.cost_usd for share in shares]
        costs_max = [share.cost_usd_max for share in shares]
        return ExtractionEstimate(
            **usage.model_dump(),
            model=self.model,
            stages=shares,
            mode=decision.mode,
            routing_reason=decision.reason,
            chunks=chunks,
            cost_usd=None if None in costs else sum(c or 0.0 for c in costs),
            cost_usd_max=None if None in costs_max else sum(c or 0.0 for c in costs_max),
            notes=notes,
        )


_TOKEN_FIELDS = ("calls", "input_tokens", "input_tokens_max", "output_tokens", "output_tokens_max")


@dataclass(frozen=True)
class _Tokens:
    calls: int
    input_tokens: int
    input_tokens_max: int
    output_tokens: int
    output_tokens_max: int


def map_and_reduce(
    stage: Stages,
    chunks: list[Chunk],
    ctx: PromptContext,
    usage: estimate.UsageEstimate,
    overlap_percent: float,
    answer_tokens: int,
) -> list[StageEstimate]:
    """The map calls on the map model (with its own output cap), the rest of `usage` (the reduce tree) on the
    reduce model."""
    map_limits, reduce_limits = stage.limits("map"), stage.limits("reduce")
    maps_in = sum(estimate.map_call_tokens(c, len(chunks), ctx, map_limits, overlap_percent) for c in chunks)
    n = len(chunks)
    answer = min(answer_tokens, map_limits.max_output_tokens)
    maps = _Tokens(n, maps_in, maps_in, n * answer, n * map_limits.max_output_tokens)
    reduce_answer = min(answer_tokens, reduce_limits.max_output_tokens)
    r = usage.reduce_calls
    reduces = _Tokens(
        r,
        usage.input_tokens - maps_in,
        usage.input_tokens_max - maps_in,
        r * reduce_answer,
        r * reduce_limits.max_output_tokens,
    )
    return [stage.share("map", maps), stage.share("reduce", reduces)]


def _summed(shares: list[StageEstimate]) -> dict[str, int]:
    return {name: sum(getattr(share, name) for share in shares) for name in _TOKEN_FIELDS if name != "calls"}


NUMBERING_SAMPLE_BYTES = 16 << 10


def number_tokens(blobs: BlobStore, output: OutputRecord) -> float:
    """What a line's number costs on this output: measured on its head once per number width, each width
    weighed by the share of the output's lines numbered that wide."""
    head = read_content(blobs, output, 0, NUMBERING_SAMPLE_BYTES).decode("utf-8", "replace")
    whole = head[: head.rfind("\n") + 1] or head
    lines = max(1, output.stats.lines)
    widths = [(10 ** (digits - 1), min(lines, 10**digits - 1)) for digits in range(1, len(str(lines)) + 1)]
    costs = [numbering_cost(whole, first, output.stats.encoding) * (last - first + 1) / lines for first, last in widths]
    return float(sum(costs))


def prompt_context(output: OutputRecord, extract: str, *, cite: bool = False) -> PromptContext:
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
        cite=cite,
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
