"""`toolout_llm_*_total{tenant, model}`: what every job has spent on model calls, read from the job store.

The calls happen in the workers, which serve no `/metrics`. Counting in the API when it happens to
see a job finish would miss jobs nobody polls and usage spent after the end (a canceled job's calls
in flight). Instead the job store adds every usage it counts on a job to one set of totals per tenant
and model, in the same atomic step (a redelivered part is counted once, like on the job), and this
collector reads those totals at each scrape. They are the same on every API instance: aggregate
with `max`, not `sum`. They restart from zero with Redis, which Prometheus counters allow (a reset).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Protocol

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from extraction.errors import ToolOutError
from infra.jobstore.base import UsageTotal

log = logging.getLogger("toolout.api")

UNKNOWN_MODEL = "unknown"
"""The `model` label of jobs that recorded none (created before jobs carried their model)."""


class UsageTotals(Protocol):
    def usage_totals(self) -> list[UsageTotal]: ...


class UsageCollector(Collector):
    def __init__(self, store: UsageTotals) -> None:
        self._store = store

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield from _families()

    def collect(self) -> Iterator[CounterMetricFamily]:
        try:
            totals = self._store.usage_totals()
        except ToolOutError as exc:  # Redis down: the scrape still answers, without these series
            log.warning("metrics: usage totals unavailable: %s", exc.message)
            return
        calls, inputs, outputs, cost = _families()
        for total in totals:
            labels = [total.tenant, total.model or UNKNOWN_MODEL]
            calls.add_metric(labels, total.usage.calls)
            inputs.add_metric(labels, total.usage.input_tokens)
            outputs.add_metric(labels, total.usage.output_tokens)
            if total.usage.cost_usd is not None:
                cost.add_metric(labels, total.usage.cost_usd)
        yield from (calls, inputs, outputs, cost)


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
