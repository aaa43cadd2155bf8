"""The steps of full-chunked extraction, free of any queue: ask for a report, size prompts, group reduces.

Workers call these one step per task; an in-process caller could chain them directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from extraction.errors import ExtractionError, ReportParseError
from extraction.prompts import PromptContext, map_messages, reduce_messages
from extraction.protocols import LLM, LLMReply, Message, Usage
from extraction.reduce_plan import group_for_reduce
from extraction.report import FinalReport, parse_final_report
from extraction.tokens import count_tokens

MESSAGE_OVERHEAD_TOKENS = 8
"""Chat formatting costs a few tokens per message beyond its text."""


@dataclass(frozen=True)
class ModelLimits:
    """What one model call may hold: the context window and the tokens reserved for the answer."""

    context_tokens: int
    max_output_tokens: int
    encoding: str = "o200k_base"


def messages_tokens(messages: list[Message], encoding: str) -> int:
    return sum(count_tokens(str(m.get("content") or ""), encoding) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def map_prompt_tokens(
    ctx: PromptContext, limits: ModelLimits, *, overlap_percent: float, max_chunks: int = 99_999
) -> int:
    """Tokens the map prompt takes around an empty chunk, at the widest chunk numbering."""
    empty = map_messages(ctx, "", chunk_index=max_chunks, chunk_total=max_chunks, overlap_percent=overlap_percent)
    return messages_tokens(empty, limits.encoding)


def reduce_budget(ctx: PromptContext, limits: ModelLimits) -> int:
    """Tokens left for chunk outputs in one reduce call."""
    overhead = messages_tokens(reduce_messages(ctx, []), limits.encoding)
    return limits.context_tokens - limits.max_output_tokens - overhead


def output_sizes(outputs: list[str], ctx: PromptContext, limits: ModelLimits) -> list[int]:
    """Each output's cost inside a reduce prompt: its tokens plus its label line."""
    return [count_tokens(text, limits.encoding) + 12 for text in outputs]


def plan_reduce_groups(outputs: list[str], ctx: PromptContext, limits: ModelLimits) -> list[list[int]]:
    """Consecutive groups of outputs that each fit one reduce call (one group: a single final reduce)."""
    return group_for_reduce(output_sizes(outputs, ctx, limits), reduce_budget(ctx, limits))


def ask_for_report(
    llm: LLM, messages: list[Message], nonce: str, *, attempts: int, max_tokens: int | None
) -> tuple[FinalReport, Usage]:
    """Call the model until it produces a real final report, at most `attempts` times.

    Raises `ReportParseError` carrying the usage spent, so failed attempts are still accounted for.
    """
    usage, reason = Usage(), "no attempt made"
    for _ in range(max(1, attempts)):
        reply = _complete(llm, messages, max_tokens, usage)
        usage = usage + reply.usage
        parsed = parse_final_report(reply.content or "", nonce)
        if isinstance(parsed, FinalReport):
            return parsed, usage
        reason = parsed.reason
    raise ReportParseError(
        f"no valid final report after {max(1, attempts)} attempt(s): {reason}", usage=usage.model_dump()
    )


def _complete(llm: LLM, messages: list[Message], max_tokens: int | None, spent: Usage) -> LLMReply:
    """One model call; a failure carries the usage of the earlier attempts, so it is still charged."""
    try:
        return llm.complete(messages, max_tokens=max_tokens)
    except ExtractionError as exc:
        exc.details.setdefault("usage", spent.model_dump())
        raise


def map_chunk(
    llm: LLM,
    ctx: PromptContext,
    text: str,
    *,
    index: int,
    total: int,
    overlap_percent: float,
    limits: ModelLimits,
    attempts: int,
) -> tuple[FinalReport, Usage]:
    """One map call over one chunk (`index` is 0-based; the prompt shows it 1-based)."""
    messages = map_messages(ctx, text, chunk_index=index + 1, chunk_total=total, overlap_percent=overlap_percent)
    return ask_for_report(llm, messages, ctx.nonce, attempts=attempts, max_tokens=limits.max_output_tokens)


def reduce_chunk_outputs(
    llm: LLM, ctx: PromptContext, outputs: list[str], *, limits: ModelLimits, attempts: int
) -> tuple[FinalReport, Usage]:
    """One reduce call synthesising several outputs into one."""
    messages = reduce_messages(ctx, outputs)
    return ask_for_report(llm, messages, ctx.nonce, attempts=attempts, max_tokens=limits.max_output_tokens)
