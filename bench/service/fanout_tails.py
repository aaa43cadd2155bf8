"""F1 with a latency tail (issue 30): 5 % of calls 10x slow, 32 chunks at 500 ms, toolout vs gather vs LCEL.

The offline model draws each call's tail per call (`offline_model/tails.py`: by request and arrival, so a
hedge of a slow request draws afresh), and all three sides call the same model in the same run:

  toolout   a full-chunked job (hedging on, its defaults: `infra/llm/hedging/policy.py`)
  gather    `Gather` of `bench.service.fanout`: litellm.acompletion under a semaphore, the user's reduce
  LCEL      the same calls as a LangChain runnable: a `RunnableLambda` over litellm.acompletion (every call
            goes through litellm), the maps with `abatch(max_concurrency=32)`, then the same reduce

A job's wall time is its slowest map plus its reduce, so the tail decides the median and the p95: printed
over `--runs-tail` jobs (>= 20), with each side's calls and tokens (toolout's hedges included, and apart).
Targets: toolout's median and p95 <= 0.6x gather's, its calls (median per job) <= 1.10x gather's.
"""

from __future__ import annotations

import asyncio
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from bench.report import print_table, verdict
from bench.service.fanout_baseline import Gather, GatherRun, check_same_work, map_calls, ms
from bench.service.fanout_docs import EVERY_CHUNK_REQUEST, plan_like, sized_doc
from bench.service.harness import SHORT_ANSWERS, SMALL_WINDOW, running_stack
from bench.service.idle import settle, stack_pids
from bench.service.jobs import Plan, small_limits, timed_job, upload

CHUNKS, LATENCY_MS = 32, 500
TIME_TARGET, CALLS_TARGET = 0.6, 1.10


class Lcel(Gather):
    """The baseline's calls as LCEL: one runnable per call, the maps batched under `max_concurrency`."""

    async def _job(self, doc: bytes, plan: Plan) -> int:
        from langchain_core.runnables import RunnableLambda

        slots = asyncio.Semaphore(self.concurrency)  # the reduce's; the maps are bounded by abatch

        async def report(messages: list[dict[str, Any]]) -> str:
            return await self._report(slots, messages, plan)

        maps = map_calls(doc, plan)
        call = RunnableLambda(self._invoke_sync, afunc=report)
        outputs = await call.abatch(maps, config={"max_concurrency": self.concurrency})
        return await self._reduce_tree(slots, list(outputs), plan)

    @staticmethod
    def _invoke_sync(messages: list[dict[str, Any]]) -> str:
        raise RuntimeError("the LCEL side runs async only")


@dataclass
class TailCase:
    toolout: list[float] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    gather: list[GatherRun] = field(default_factory=list)
    lcel: list[GatherRun] = field(default_factory=list)


def p95(values: list[float]) -> float:
    """Nearest rank: with 20 jobs, the 19th fastest."""
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


HEDGING_ON = {"TOOLOUT_HEDGE_ENABLED": "true"}
"""The tail case measures toolout with hedging on (the default) whatever the environment says: the test suite
turns it off for its own processes (tests/conftest.py)."""


def run_tails(
    redis_url: str, loop: asyncio.AbstractEventLoop, runs: int, fraction: float, multiplier: float, concurrency: int
) -> TailCase:
    model = {
        "TOOLOUT_OFFLINE_LATENCY_MS": str(LATENCY_MS),
        "TOOLOUT_OFFLINE_TAIL_FRACTION": str(fraction),
        "TOOLOUT_OFFLINE_TAIL_MULTIPLIER": str(multiplier),
        **SHORT_ANSWERS,
    }
    with (
        running_stack(
            redis_url, model=model, worker={"concurrency": concurrency}, extra={**SMALL_WINDOW, **HEDGING_ON}
        ) as st,
        st.client() as client,
    ):
        limits = small_limits()
        gather, lcel = Gather(loop, st, limits, concurrency), Lcel(loop, st, limits, concurrency)
        doc = sized_doc(CHUNKS, EVERY_CHUNK_REQUEST, limits)
        handle = upload(client, doc)["handle"]
        case, pids, plan = TailCase(), stack_pids(st), None
        for run in range(runs + 1):  # run 0 warms every side up (and fills the hedger's window) and is discarded
            settle(pids)
            seconds, job = timed_job(client, handle, EVERY_CHUNK_REQUEST, "full-chunked")
            plan = plan or plan_like(doc, EVERY_CHUNK_REQUEST, limits, job["chunks_total"])
            settle(pids)
            gathered = gather.run(doc, plan)
            settle(pids)
            batched = lcel.run(doc, plan)
            check_same_work(job, gathered, len(plan.chunks))
            if run:
                case.toolout.append(seconds)
                case.records.append(job)
                case.gather.append(gathered)
                case.lcel.append(batched)
        return case


def calls_of(case: TailCase) -> float:
    return statistics.median(job["usage"]["calls"] for job in case.records)


def passed(case: TailCase) -> bool:
    base = [g.seconds for g in case.gather]
    median_ok = statistics.median(case.toolout) <= TIME_TARGET * statistics.median(base)
    p95_ok = p95(case.toolout) <= TIME_TARGET * p95(base)
    return median_ok and p95_ok and calls_of(case) <= CALLS_TARGET * statistics.median(g.calls for g in case.gather)


def ratios(walls: list[float], base: list[float]) -> str:
    return f"{statistics.median(walls) / statistics.median(base):.2f}x / {p95(walls) / p95(base):.2f}x"


def report(case: TailCase, fraction: float, multiplier: float) -> None:
    base = [g.seconds for g in case.gather]
    rows = [("side", "median", "p95", "calls (median)", "input / output tokens (median)", "vs gather")]
    for name, walls, calls, tokens in (
        (
            "toolout job (hedged)",
            case.toolout,
            [j["usage"]["calls"] for j in case.records],
            [(j["usage"]["input_tokens"], j["usage"]["output_tokens"]) for j in case.records],
        ),
        (
            "gather baseline",
            base,
            [g.calls for g in case.gather],
            [(g.input_tokens, g.output_tokens) for g in case.gather],
        ),
        (
            "LCEL (RunnableLambda.abatch)",
            [g.seconds for g in case.lcel],
            [g.calls for g in case.lcel],
            [(g.input_tokens, g.output_tokens) for g in case.lcel],
        ),
    ):
        rows.append(
            (
                name,
                ms(statistics.median(walls)),
                ms(p95(walls)),
                f"{statistics.median(calls):g}",
                f"{statistics.median(t[0] for t in tokens):,.0f} / {statistics.median(t[1] for t in tokens):,.0f}",
                ratios(walls, base),
            )
        )
    print(
        f"F1 with tails: {CHUNKS} chunks @ {LATENCY_MS} ms, {fraction:.0%} of calls {multiplier:g}x slow, "
        f"{len(case.toolout)} jobs a side"
    )
    print_table(rows)
    sent = [j["hedges_sent"] for j in case.records]
    won = [j["hedges_won"] for j in case.records]
    cost = [j["hedge_input_tokens"] + j["hedge_output_tokens"] for j in case.records]
    print(
        f"toolout hedges: sent {sum(sent)} (per job {min(sent)}-{max(sent)}), won {sum(won)}, cost {sum(cost):,} "
        f"tokens in all; job walls (s): {' '.join(f'{s:.1f}' for s in case.toolout)}"
    )
    print(f"gather walls (s): {' '.join(f'{s:.1f}' for s in base)}")
    print_table(
        [
            ("target", "value", "result"),
            (
                f"toolout median / p95 <= {TIME_TARGET}x gather's",
                ratios(case.toolout, base),
                verdict(passed(case)),
            ),
            (
                f"toolout calls <= {CALLS_TARGET}x gather's",
                f"{calls_of(case):g} / {statistics.median(g.calls for g in case.gather):g}",
                "",
            ),
        ]
    )
