"""What a job's steps need, built once per process by its entry point, and the one door to the model they call.

`Runtime` holds the stores, the models and the limits: `llm` and `limits` are the map stage's (what tests replace
with a scripted model, for every stage); `models` gives each stage of a job its own client and limits
(`stage_llm`, `stage_limits`); `note` writes the job's trace (`infra.stores.jobs.traces`).

Every model call a job makes passes one gate (`GatedLLM`, from `job_llm`): the job must still be live and within
its call budget.

The gate also opens the call's scope for the pacer (`infra.llm.ratelimit.pacing`): a call waiting for its turn
under its model's provider limits shows as `calls_waiting` on the job, not as a failure; and once the call
is answered it is counted under the model that answered it (`JobAccounting.count_model_call`), with the
fallback it took, if any. A map's gate keeps its counts (`defer_counts`) for the map to write with its
output in one round trip (`JobFanIn.record_chunk_and_settle`): with a model that answers at once a job is all
such fixed costs, and a round trip per call was one more GIL hand-off per map in a busy worker.

Wrapping the job's `LLM` (instead of sprinkling checks through the steps) puts the check exactly
between LLM calls — between the attempts of one map, between agent turns, before each reduce —
without the pure engine knowing about Redis. A refused call raises an `ExtractionError`, which
the steps already turn into the job's ending through `workers.job.outcomes`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extraction.errors import ExtractionError
from extraction.protocols import LLM, LLMReply, Message
from extraction.strategies.mapreduce import ModelLimits
from infra import tracing
from infra.blobstore import BlobStore
from infra.errors import LLMBudgetExhausted
from infra.llm.catalog import ModelCatalog, hedge_policy, pacer_for
from infra.llm.hedging import HedgeTicket
from infra.llm.info import model_limits_for
from infra.llm.ratelimit.pacing import CallScope, call_scope, request_tokens
from infra.query.loaded_forms import LoadedForms, MemoryLoadedForms
from infra.settings import Settings
from infra.stores.bundle import Stores
from infra.stores.jobs import JobRecord, JobStores, ModelCall, ModelFallback
from infra.stores.records import RecordStores

log = logging.getLogger("toolout.workers")


@dataclass
class Runtime:
    """The steps' dependencies; tests build one with in-memory stores and a scripted model."""

    settings: Settings
    jobs: JobStores
    records: RecordStores
    blobs: BlobStore
    llm: LLM
    limits: ModelLimits | None = None
    """The map stage's; None until `map_limits` looks them up (litellm's model map: seconds to import, which a
    worker then pays in its warm-up or first job, not before it answers pings)."""
    models: ModelCatalog | None = None
    """None when the runtime was given one model for everything (tests, `toolout.local` with an `llm`)."""
    loaded: LoadedForms = field(default_factory=MemoryLoadedForms)
    """Who loads which output as tables now, where it was kept (`infra.query.loaded_forms`); shared via Redis."""
    _warm: bool = field(default=False, repr=False)

    def llm_ready(self) -> None:
        """Touch the model client so its heavy import happens now, not in the first task."""
        warm = getattr(self.llm, "warm_up", None)
        if callable(warm) and not self._warm:
            warm()
            self._warm = True

    def map_limits(self) -> ModelLimits:
        """The map stage's limits: the ones given, else the map model's, looked up once."""
        if self.limits is None:
            self.limits = model_limits_for(self.settings, self.settings.stage_model("map"))
        return self.limits

    def note(self, job_id: str, *events: str) -> None:
        """Append to the job's trace unless tracing is off; an outage is logged, never raised into the step."""
        if not self.settings.trace_max_bytes or not events:
            return
        try:
            self.jobs.traces.add_trace(job_id, events)
        except Exception as exc:  # noqa: BLE001 - the trace explains a job, it must never fail one
            log.warning("job %s: trace not written: %s", job_id, exc)


def build_runtime(
    settings: Settings, stores: Stores, llm: LLM | None = None, *, limits: ModelLimits | None = None
) -> Runtime:
    """The runtime over `stores`: each stage's litellm client and limits as `settings` describe, unless
    one `llm` (and `limits`) is given for every stage."""
    map_model = settings.stage_model("map")
    models = None
    if llm is None:
        models = ModelCatalog(settings, pacer_for(settings, stores.limiter))
        llm = models.llm("map", map_model)
    return Runtime(
        settings=settings,
        jobs=stores.jobs,
        records=stores.records,
        blobs=stores.blobs,
        llm=llm,
        limits=limits,
        models=models,
        loaded=stores.loaded,
    )


def job_model(rt: Runtime, job: JobRecord, stage: str) -> str:
    """The model `stage` of `job` calls first: as recorded when the job was created, else the stage's own."""
    return job.stage_models.get(stage) or rt.settings.stage_model(stage)


def stage_llm(rt: Runtime, job: JobRecord, stage: str) -> LLM:
    return rt.llm if rt.models is None else rt.models.llm(stage, job_model(rt, job, stage))


def stage_limits(rt: Runtime, job: JobRecord, stage: str) -> ModelLimits:
    """The stage's limits; a runtime given one model (or limits) uses them for every stage."""
    if rt.models is None or (stage == "map" and job_model(rt, job, stage) == rt.settings.stage_model("map")):
        return rt.map_limits()
    return rt.models.limits(job_model(rt, job, stage))


class JobEnded(ExtractionError):
    """The job was canceled or finished meanwhile (by a faster twin task or the watchdog): stop calling the model."""

    code = "job_ended"


@dataclass
class GatedLLM:
    """An `LLM` that reserves one call of the job's budget (atomically, in Redis) before each call.

    `reserved` calls were reserved already (a map reserves its first with the read it starts with).
    With `defer_counts`, answered calls wait in `counts` until the owner takes them (`take_counts`, to write
    them with its output) or has them written (`flush_counts`, on any other way out).
    """

    llm: LLM
    jobs: JobStores
    job_id: str
    max_calls: int
    reserved: int = 0
    stage: str = "map"
    encoding: str = "o200k_base"
    defer_counts: bool = False
    counts: list[ModelCall] = field(default_factory=list)
    hedge_budget: int = 0
    """Hedges the job may send in all (`HedgePolicy.budget`; 0: none); counted atomically in the job store."""
    limits: ModelLimits = field(kw_only=True)
    """What one call of this stage's model may hold: the step asks the gate for its model and its limits at once."""

    def complete(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        self._reserve()
        scope = CallScope(
            count=lambda: request_tokens(messages, tools, max_tokens, self.encoding),
            on_wait=self._waiting,
            hedge=self._ticket(lambda: request_tokens(messages, tools, None, self.encoding)),
        )
        with tracing.model_span(getattr(self.llm, "model", None), self.job_id) as span, call_scope(scope):
            reply = self.llm.complete(messages, tools=tools, max_tokens=max_tokens)
            tracing.record_usage(span, reply.usage, reply.model)
        self._count(reply, scope)
        return reply

    def _ticket(self, prompt_tokens: Callable[[], int]) -> HedgeTicket | None:
        """The call's hedge ticket: the job's budget, reserved one hedge at a time (None: no hedging)."""
        if self.hedge_budget <= 0:
            return None
        return HedgeTicket(
            self.stage,
            lambda: self.jobs.accounting.reserve_hedge(self.job_id, self.hedge_budget),
            prompt_tokens=prompt_tokens,
        )

    def _waiting(self, delta: int, seconds: float) -> None:
        self.jobs.accounting.note_waiting(self.job_id, delta, seconds)

    def _count(self, reply: LLMReply, scope: CallScope) -> None:
        """Count the call under the model that answered it: the last one its client tried (its usage holds
        every copy a hedged call sent; what hedging cost is counted apart as well)."""
        if scope.hedge is not None and scope.hedge.sent:
            self.jobs.accounting.count_hedges(self.job_id, scope.hedge.sent, scope.hedge.won, scope.hedge.cost)
        first = str(getattr(self.llm, "model", None) or reply.model or "unknown")
        answered = scope.attempted[-1] if scope.attempted else first
        fallback = None
        if answered != first:
            fallback = ModelFallback(stage=self.stage, model=first, answered_by=answered, attempts=len(scope.attempted))
            log.warning("job %s: %s call answered by fallback %s (%s failed)", self.job_id, self.stage, answered, first)
        call = ModelCall(self.stage, answered, reply.usage, fallback)
        if self.defer_counts:
            self.counts.append(call)
            return
        self.jobs.accounting.count_model_call(self.job_id, call.stage, call.model, call.usage, call.fallback)

    def take_counts(self) -> list[ModelCall]:
        """The calls answered and not yet counted; the caller now writes them."""
        taken, self.counts = self.counts, []
        return taken

    def flush_counts(self) -> None:
        """Count what no output took (the part failed, or the step did): every call made is counted."""
        for call in self.take_counts():
            self.jobs.accounting.count_model_call(self.job_id, call.stage, call.model, call.usage, call.fallback)

    def _reserve(self) -> None:
        if self.reserved > 0:
            self.reserved -= 1
            return
        if self.jobs.accounting.reserve_llm_call(self.job_id, self.max_calls):
            return
        if self.jobs.records.is_terminal(self.job_id):
            raise JobEnded(f"job {self.job_id} already ended; no further model calls", job_id=self.job_id)
        log.warning("job %s: LLM call budget of %d calls is spent", self.job_id, self.max_calls)
        raise LLMBudgetExhausted(
            f"the job's LLM call budget is spent ({self.max_calls} calls, max_llm_calls_per_job)",
            job_id=self.job_id,
            max_calls=self.max_calls,
        )


def job_llm(rt: Runtime, job: JobRecord, stage: str, *, reserved: int = 0, defer_counts: bool = False) -> GatedLLM:
    """The model `stage` of the job calls, as the job may use it (gated by liveness and `max_llm_calls_per_job`),
    with its limits."""
    return GatedLLM(
        stage_llm(rt, job, stage),
        rt.jobs,
        job.id,
        rt.settings.max_llm_calls_per_job,
        reserved,
        stage=stage,
        encoding=rt.settings.tokenizer_encoding,
        defer_counts=defer_counts,
        hedge_budget=hedge_budget(rt, job),
        limits=stage_limits(rt, job, stage),
    )


def hedge_budget(rt: Runtime, job: JobRecord) -> int:
    """Hedges the job may send: none when the deployment or the request turned hedging off, else the policy's
    share of its planned calls (its maps and a reduce; a sub-agent job: its first call)."""
    if not job.hedge:
        return 0
    return hedge_policy(rt.settings).budget(job.chunks_total + 1)
