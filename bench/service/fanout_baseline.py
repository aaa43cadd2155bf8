"""The baseline of the fan-out bench: a job's map and reduce calls as a user writes them with asyncio.gather.

`bench.service.fanout` (the latency cases) and `bench.service.fanout_tails` (the tail case) both measure
toolout against it, so it sits apart from either.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from bench.service.jobs import Plan, chunk_messages, litellm_client
from extraction.documents.tokens import count_tokens
from extraction.strategies.mapreduce import ModelLimits
from extraction.texts.prompts import reduce_messages
from extraction.texts.report import FinalReport, parse_final_report
from toolout.devstack.stack import Stack


def map_calls(doc: bytes, plan: Plan) -> list[list[dict[str, Any]]]:
    """Each chunk's map prompt, as the worker builds it: what every baseline sends for the job's chunks."""
    return chunk_messages(doc, plan)


@dataclass
class GatherRun:
    """What one baseline run did: its wall time, model calls and reduce depth (levels of group reduces)."""

    seconds: float
    calls: int
    reduce_level: int
    input_tokens: int
    output_tokens: int


class Gather:
    """One job's model calls with no queue around them: litellm.acompletion under a semaphore, in one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stack: Stack, limits: ModelLimits, concurrency: int) -> None:
        from infra.llm.client import _litellm

        self.litellm = _litellm()
        self.loop = loop
        self.client = litellm_client(stack)
        self.limits = limits
        self.concurrency = concurrency
        self.calls = self.input_tokens = self.output_tokens = 0

    def run(self, doc: bytes, plan: Plan) -> GatherRun:
        self.calls = self.input_tokens = self.output_tokens = 0
        started = time.perf_counter()
        level = self.loop.run_until_complete(self._job(doc, plan))
        return GatherRun(time.perf_counter() - started, self.calls, level, self.input_tokens, self.output_tokens)

    async def _job(self, doc: bytes, plan: Plan) -> int:
        slots = asyncio.Semaphore(self.concurrency)
        maps = map_calls(doc, plan)
        outputs = await asyncio.gather(*(self._report(slots, m, plan) for m in maps))
        return await self._reduce_tree(slots, list(outputs), plan)

    async def _reduce_tree(self, slots: asyncio.Semaphore, outputs: list[str], plan: Plan) -> int:
        """The reduce as a user writes it: one call when every answer fits, else collapse in groups that
        fit (greedy, in order, as LangChain's `split_list_of_docs`) until they do; returns the levels of groups."""
        level = 0
        while len(outputs) > 1 and not self._fits(outputs, plan):
            groups = self._split(outputs, plan)
            outputs = list(await asyncio.gather(*(self._group(slots, g, plan) for g in groups)))
            level += 1
        if len(outputs) > 1:
            await self._report(slots, reduce_messages(plan.ctx, outputs), plan)
        return level

    def _fits(self, outputs: list[str], plan: Plan) -> bool:
        """The reduce prompt over `outputs` and the answer it may write fit the model's window."""
        prompt = sum(
            count_tokens(str(m["content"]), self.limits.encoding) + 4 for m in reduce_messages(plan.ctx, outputs)
        )
        return prompt + 3 + self.limits.max_output_tokens <= self.limits.context_tokens

    def _split(self, outputs: list[str], plan: Plan) -> list[list[str]]:
        groups: list[list[str]] = [[]]
        for output in outputs:
            if groups[-1] and not self._fits([*groups[-1], output], plan):
                groups.append([])
            groups[-1].append(output)
        return groups

    async def _group(self, slots: asyncio.Semaphore, outputs: list[str], plan: Plan) -> str:
        if len(outputs) == 1:
            return outputs[0]
        return await self._report(slots, reduce_messages(plan.ctx, outputs), plan)

    async def _report(self, slots: asyncio.Semaphore, messages: list[dict[str, Any]], plan: Plan) -> str:
        """One model call, its answer parsed as the worker parses it (a missing wrapper stops the bench)."""
        request = self.client._request(messages, None, self.limits.max_output_tokens)
        async with slots:
            response = await self.litellm.acompletion(**request)
        self.calls += 1
        self.input_tokens += response.usage.prompt_tokens
        self.output_tokens += response.usage.completion_tokens
        parsed = parse_final_report(response.choices[0].message.content or "", plan.ctx.nonce)
        if not isinstance(parsed, FinalReport):
            raise RuntimeError(f"baseline call returned no final report: {parsed.reason}")
        return parsed.content


def check_same_work(job: dict[str, Any], baseline: GatherRun, chunks: int) -> None:
    """The job and the baseline must have mapped the same chunks; each reduces its own way (both are printed)."""
    if job["status"] != "succeeded" or job["mode_used"] != "full-chunked":
        raise RuntimeError(f"job {job['id']} ended {job['status']} / {job['mode_used']}: {job.get('fallback_reason')}")
    if job["chunks_total"] != chunks:
        raise RuntimeError(f"job {job['id']} mapped {job['chunks_total']} chunks, the baseline {chunks}")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"
