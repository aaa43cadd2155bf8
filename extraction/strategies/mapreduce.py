"""The steps of full-chunked extraction, free of any queue: ask for a report, size prompts, group reduces.

Workers call these one step per task; an in-process caller could chain them directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from extraction.documents.tokens import count_tokens
from extraction.errors import ExtractionError, ReportParseError
from extraction.evidence.citations import number_lines
from extraction.protocols import LLM, LLMReply, Message, Usage
from extraction.strategies.reduce_plan import even_groups
from extraction.texts.nonce import WIDEST_NONCE
from extraction.texts.prompts import PromptContext, map_messages, reduce_messages
from extraction.texts.report import FinalReport, parse_final_report, says_not_found

MESSAGE_OVERHEAD_TOKENS = 8
"""Chat formatting costs a few tokens per message beyond its text."""

LABEL_TOKENS = 12
"""What one output's label line (`--- chunk 3 of 40 ---`) and the blank line before it take in a reduce prompt."""


@dataclass(frozen=True)
class ModelLimits:
    """What one model call may hold: the context window and the tokens reserved for the answer."""

    context_tokens: int
    max_output_tokens: int
    encoding: str = "o200k_base"


def messages_tokens(messages: list[Message], encoding: str) -> int:
    return sum(count_tokens(str(m.get("content") or ""), encoding) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def sizing_context(ctx: PromptContext) -> PromptContext:
    """`ctx` with the widest nonce: what every budget is measured on, so no budget depends on the job's nonce."""
    return ctx.model_copy(update={"nonce": WIDEST_NONCE})


def map_prompt_tokens(
    ctx: PromptContext, limits: ModelLimits, *, overlap_percent: float, max_chunks: int = 99_999
) -> int:
    """Tokens the map prompt takes around an empty chunk, at the widest chunk numbering and the widest nonce.

    Measured with `WIDEST_NONCE` rather than the job's own: a real nonce's token count varies by up
    to ~10 tokens per occurrence, which moved the chunk budget, so the same document planned one
    chunk more or fewer from job to job, and no estimate could know which.
    """
    empty = map_messages(
        sizing_context(ctx), "", chunk_index=max_chunks, chunk_total=max_chunks, overlap_percent=overlap_percent
    )
    return messages_tokens(empty, limits.encoding)


def reduce_overhead_tokens(ctx: PromptContext, limits: ModelLimits) -> int:
    """Tokens of a reduce prompt with no chunk outputs in it (widest nonce, as for the map prompt)."""
    return messages_tokens(reduce_messages(sizing_context(ctx), []), limits.encoding)


def reduce_budget(ctx: PromptContext, limits: ModelLimits) -> int:
    """Tokens left for chunk outputs in one reduce call."""
    return limits.context_tokens - limits.max_output_tokens - reduce_overhead_tokens(ctx, limits)


def answer_slot_tokens(limits: ModelLimits) -> int:
    """The most one output can take in a reduce prompt: an answer of `max_output_tokens` plus its label."""
    return limits.max_output_tokens + LABEL_TOKENS


def output_sizes(outputs: list[str], ctx: PromptContext, limits: ModelLimits) -> list[int]:
    """Each output's cost inside a reduce prompt: its tokens plus its label line."""
    return [count_tokens(text, limits.encoding) + LABEL_TOKENS for text in outputs]


def plan_reduce_groups(outputs: list[str], ctx: PromptContext, limits: ModelLimits) -> list[list[int]]:
    """Consecutive groups of outputs that each fit one reduce call, by the outputs' real sizes (one group:
    a single final reduce).

    Planned when the outputs are there, from what they really take: short answers that fit one call
    get one call, however many there are. Planned from the count alone, with every output given a full
    answer's room, short answers would take group reduces they do not need: a model round trip and calls more.
    """
    return even_groups(output_sizes(outputs, ctx, limits), reduce_budget(ctx, limits))


def reduce_inputs(outputs: list[str]) -> list[int]:
    """Positions of the outputs a reduce reads, in order: an empty output says nothing, and once any output
    found something, the NO RELEVANT DATA FOUND answers add nothing either (they take no room). When none
    found anything, those answers stay: the reduce describes what the document holds instead."""
    present = [i for i, text in enumerate(outputs) if text.strip()]
    return [i for i in present if not says_not_found(outputs[i])] or present


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
    first_line: int = 1,
) -> tuple[FinalReport, Usage]:
    """One map call over one chunk (`index` is 0-based; the prompt shows it 1-based).

    When the job asks for evidence the chunk is shown numbered as Read numbers lines, from `first_line`
    (the document-wide number of its first line), so the numbers the model cites are the output's.
    """
    shown = number_lines(text, first_line) if ctx.cite else text
    messages = map_messages(ctx, shown, chunk_index=index + 1, chunk_total=total, overlap_percent=overlap_percent)
    return ask_for_report(llm, messages, ctx.nonce, attempts=attempts, max_tokens=limits.max_output_tokens)


def reduce_chunk_outputs(
    llm: LLM, ctx: PromptContext, outputs: list[str], *, limits: ModelLimits, attempts: int
) -> tuple[FinalReport, Usage]:
    """One reduce call synthesising several outputs into one."""
    messages = reduce_messages(ctx, outputs)
    return ask_for_report(llm, messages, ctx.nonce, attempts=attempts, max_tokens=limits.max_output_tokens)
