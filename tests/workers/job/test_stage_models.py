"""A model per stage, fallbacks and provider limits, as the pipeline's steps use them (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from extraction.protocols import LLM, LLMReply, Message
from extraction.strategies.mapreduce import ModelLimits
from extraction.testing import ScriptedLLM
from infra.llm.catalog import ModelCatalog
from infra.llm.ratelimit import MemoryRateLimiter, RateLimit
from infra.llm.ratelimit.pacing import CALL, Pacer
from infra.stores.jobs import JobStatus
from tests.workers.conftest import CHUNK_NOTES, needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from workers.job.runtime import Runtime

pytestmark = pytest.mark.twin("which model each stage calls; stored content is incidental")


class Named:
    """A scripted model under a name; `tried` are the models its "router" tries before it answers."""

    def __init__(self, model: str, inner: ScriptedLLM, *, tried: list[str] | None = None, pacer: Pacer | None = None):
        self.model = model
        self.inner = inner
        self.tried = tried or [model]
        self.pacer = pacer

    def complete(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        scope = CALL.get()
        for model in self.tried:
            if self.pacer is not None:
                self.pacer.pace(model)
            elif scope is not None:
                scope.attempted.append(model)
        return self.inner.complete(messages, tools=tools, max_tokens=max_tokens)


class Catalog(ModelCatalog):
    """Each stage's model is a `Named` scripted model; limits per model as given."""

    def __init__(self, rt: Runtime, clients: dict[str, LLM], limits: dict[str, ModelLimits]) -> None:
        super().__init__(rt.settings, None)
        self.clients = clients
        self.by_model = limits

    def llm(self, stage: str, model: str) -> LLM:
        return self.clients[stage]

    def limits(self, model: str) -> ModelLimits:
        return self.by_model[model]


def staged(make_runtime, clients: dict[str, LLM], limits: dict[str, ModelLimits] | None = None) -> Runtime:
    rt = make_runtime(clients["map"], map_model="cheap", reduce_model="strong")
    rt.models = Catalog(rt, clients, limits or {"cheap": rt.limits, "strong": rt.limits})
    return rt


def test_map_calls_go_to_the_map_model_and_the_reduce_to_the_reduce_model(make_runtime) -> None:
    cheap = Named("cheap", needle_model(NEEDLE, misses=CHUNK_NOTES))  # every answer takes room: a reduce runs
    strong = Named("strong", needle_model(NEEDLE))
    rt = staged(make_runtime, {"map": cheap, "reduce": strong, "agent": strong})
    output = store_output(rt, document())
    job = submit(rt, output, "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and NEEDLE in done.result
    assert len(cheap.inner.calls) == done.chunks_total and len(strong.inner.calls) >= 1
    assert set(done.model_usage) == {"cheap", "strong"}
    assert done.model_usage["cheap"].calls == done.chunks_total
    assert done.model_usage["strong"].calls == len(strong.inner.calls)
    assert done.model_fallbacks == []


def test_each_stage_plans_with_its_own_models_limits(make_runtime) -> None:
    """A map model with a small window makes more chunks; the reduce model's window groups their answers."""
    small, large = (
        ModelLimits(context_tokens=4000, max_output_tokens=500),
        ModelLimits(context_tokens=60_000, max_output_tokens=500),
    )
    rt = staged(
        make_runtime,
        {
            "map": Named("cheap", needle_model(NEEDLE, misses=CHUNK_NOTES)),
            "reduce": (strong := Named("strong", needle_model(NEEDLE))),
        },
        {"cheap": small, "strong": large},
    )
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.chunks_total > 10 and done.reduce_level == 0 and len(strong.inner.calls) == 1


def test_a_call_a_fallback_answered_is_recorded_on_the_job(make_runtime) -> None:
    falls_back = Named("a", needle_model(NEEDLE), tried=["a", "a", "b"])
    rt = staged(make_runtime, {"map": falls_back, "reduce": Named("strong", needle_model(NEEDLE))})
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED
    assert len(done.model_fallbacks) == done.chunks_total
    first = done.model_fallbacks[0]
    assert (first.stage, first.model, first.answered_by, first.attempts) == ("map", "a", "b", 3)
    assert "a" not in done.model_usage and done.model_usage["b"].calls == done.chunks_total


def test_a_call_waiting_for_its_turn_shows_as_waiting_then_goes(make_runtime) -> None:
    seen: list[int] = []
    slept: list[float] = []
    rt = make_runtime(needle_model(NEEDLE))

    def sleep(seconds: float) -> None:
        seen.append(rt.jobs.records.get(job.id).calls_waiting)
        slept.append(seconds)

    pacer = Pacer(MemoryRateLimiter(burst_seconds=0.0), {"cheap": RateLimit(rpm=60)}, sleep=sleep)
    cheap = Named("cheap", needle_model(NEEDLE), pacer=pacer)
    rt = staged(make_runtime, {"map": cheap, "reduce": Named("strong", needle_model(NEEDLE), pacer=pacer)})
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.calls_waiting == 0
    assert seen and set(seen) == {1}
    assert done.rate_limit_wait_seconds == sum(slept) > 0
