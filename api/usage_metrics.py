"""`toolout_llm_*_total{tenant, model}`: what every job has spent on model calls, read from the job store.

The calls happen in the workers, which serve no `/metrics`. Counting in the API when it happens to
see a job finish would miss jobs nobody polls and usage spent after the end (a canceled job's calls
in flight). Instead the job store adds every usage it counts on a job to one set of totals per tenant
and model, in the same atomic step (a redelivered part is counted once, like on the job), and this
collector reads those totals at each scrape. They are the same on every API instance: aggregate
with `max`, not `sum`. They restart from zero with Redis, which Prometheus counters allow (a reset).

`toolout_model_*_total{tenant, model, stage}` count every model call as it was made, under the model that
answered it and the stage that made it (`JobAccounting.count_model_call`): a cheap map model and a strong
reduce model (or a fallback) each show their own calls, tokens and cost.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Protocol

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from extraction.errors import ToolOutError
from extraction.protocols import Usage
from infra.stores.jobs.accounting import UsageTotal
from infra.stores.jobs.model_calls import ModelUsageTotal

log = logging.getLogger("toolout.api")

UNKNOWN_MODEL = "unknown"
"""The `model` label of jobs that recorded none (created before jobs carried their model)."""


class UsageTotals(Protocol):
    def usage_totals(self) -> list[UsageTotal]: ...

    def model_usage_totals(self) -> list[ModelUsageTotal]: ...


class UsageCollector(Collector):
    def __init__(self, store: UsageTotals) -> None:
        self._store = store

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield from (*_families(), *_model_families())

    def collect(self) -> Iterator[CounterMetricFamily]:
        try:
            totals = self._store.usage_totals()
            by_model = self._store.model_usage_totals()
        except ToolOutError as exc:  # Redis down: the scrape still answers, without these series
            log.warning("metrics: usage totals unavailable: %s", exc.message)
            return
        families = _families()
        for total in totals:
            _add(families, [total.tenant, total.model or UNKNOWN_MODEL], total.usage)
        per_model = _model_families()
        for found in by_model:
            _add(per_model, [found.tenant, found.model, found.stage], found.usage)
        yield from (*families, *per_model)


def _add(families: tuple[CounterMetricFamily, ...], labels: list[str], usage: Usage) -> None:
    calls, inputs, outputs, cost = families
    calls.add_metric(labels, usage.calls)
    inputs.add_metric(labels, usage.input_tokens)
    outputs.add_metric(labels, usage.output_tokens)
    if usage.cost_usd is not None:
        cost.add_metric(labels, usage.cost_usd)


def _model_families() -> tuple[CounterMetricFamily, ...]:
    labels = ["tenant", "model", "stage"]
    return (
        CounterMetricFamily("toolout_model_calls", "Model calls made, by the model that answered", labels=labels),
        CounterMetricFamily("toolout_model_input_tokens", "Input tokens of those calls", labels=labels),
        CounterMetricFamily("toolout_model_output_tokens", "Output tokens of those calls", labels=labels),
        CounterMetricFamily(
            "toolout_model_cost_usd", "Their cost by litellm's cost map (priced models only)", labels=labels
        ),
    )


def _families() -> tuple[CounterMetricFamily, ...]:
    labels = ["tenant", "model"]
    return (
        CounterMetricFamily("toolout_llm_calls", "Model calls counted on extraction jobs", labels=labels),
        CounterMetricFamily(
            "toolout_llm_input_tokens", "Input tokens of those calls, as the provider counted them", labels=labels
        ),
        CounterMetricFamily("toolout_llm_output_tokens", "Output tokens of those calls", labels=labels),
        CounterMetricFamily(
            "toolout_llm_cost_usd",
            "Their cost by litellm's cost map (no series for models it has no price for)",
            labels=labels,
        ),
    )
