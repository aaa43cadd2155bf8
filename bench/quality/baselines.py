"""Two ways peers handle an oversized tool output, played against the same model as toolout's strategies.

* **head+tail** (Codex CLI): the output is cut to its first and last halves of a 10,000-token
  budget, with a marker saying how much was left out, and one model call answers from that.
* **preview+Read/Grep** (Claude Code, deepagents): the model sees the first 2 KB and the file's
  name, and may call Read and Grep on the file in a small agent loop until it answers.

Both use toolout's own prompt texts and tool schemas (the map prompt; the read-grep prompt and
Read/Grep tools), so the comparison is about what the model gets to see, not about wording — and
the offline model, which only understands toolout's prompts, can play them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from extraction.protocols import Usage
from extraction.strategies.agent import run_agent
from extraction.texts.nonce import new_nonce
from extraction.texts.prompts import PromptContext, map_messages, render_read_grep_system
from extraction.texts.report import FinalReport, parse_final_report
from extraction.texts.tools import sub_agent_tools
from infra.outputs.stored import PinnedTools, StoredOutput
from infra.planning.plans import agent_bounds
from toolout.local import LocalToolOut

HEAD_TAIL_TOKENS = 10_000
PREVIEW_BYTES = 2048


@dataclass(frozen=True)
class Outcome:
    """What one strategy or baseline answered, and what it cost."""

    answer: str
    usage: Usage
    seconds: float
    used: str
    quotes: int = 0
    verified: int = 0
    items: int = 0


@lru_cache(maxsize=2)
def _encoding(name: str) -> Any:
    import tiktoken

    return tiktoken.get_encoding(name)


def head_tail(text: str, total: int, budget: int = HEAD_TAIL_TOKENS, encoding_name: str = "o200k_base") -> str:
    """Codex's cut: the first and last budget/2 tokens, and how many of the `total` were left out between them."""
    if total <= budget:
        return text
    encoding = _encoding(encoding_name)
    half = budget // 2
    head = encoding.encode(text[: half * 8], disallowed_special=())[:half]
    tail = encoding.encode(text[-half * 8 :], disallowed_special=())[-half:]
    return f"{encoding.decode(head)}\n…{total - len(head) - len(tail)} tokens truncated…\n{encoding.decode(tail)}"


def _context(local: LocalToolOut, handle: str, request: str) -> PromptContext:
    record = local.stores.records.outputs.get_output(handle, local.session.tenant)
    stats = record.stats
    return PromptContext(
        tool_name=record.tool_name,
        tool_args_json=record.tool_args or "{}",
        extract=request,
        nonce=new_nonce(),
        doc_bytes=stats.bytes,
        doc_lines=stats.lines,
        doc_tokens=stats.tokens,
    )


def _answer(reply: str | None, nonce: str) -> str:
    parsed = parse_final_report(reply or "", nonce)
    return parsed.content if isinstance(parsed, FinalReport) else f"(no final report: {parsed.reason})\n{reply or ''}"


def run_head_tail(local: LocalToolOut, handle: str, content: bytes, request: str) -> Outcome:
    """One model call over the head and tail of the output (toolout's map prompt, as one chunk of one)."""
    started = time.perf_counter()
    ctx = _context(local, handle, request)
    cut = head_tail(content.decode("utf-8", "replace"), ctx.doc_tokens, encoding_name=local.settings.tokenizer_encoding)
    reply = local.runtime.llm.complete(map_messages(ctx, cut, chunk_index=1, chunk_total=1, overlap_percent=0))
    return Outcome(_answer(reply.content, ctx.nonce), reply.usage, time.perf_counter() - started, "head+tail")


def preview_message(handle: str, content: bytes) -> str:
    """What Claude Code's model sees in place of a large tool result: where it is, and its beginning."""
    preview = content[:PREVIEW_BYTES].decode("utf-8", "ignore")
    return (
        f"The tool output was too large ({len(content):,} bytes) and was saved to the file {handle!r}. "
        f"Preview (first {PREVIEW_BYTES:,} bytes):\n{preview}\n…\n\n"
        f'Use Grep and Read on the file "{handle}" to find what WHAT TO EXTRACT asks for, '
        "then emit your answer inside the final-report wrapper."
    )


def run_preview_agent(local: LocalToolOut, handle: str, content: bytes, request: str) -> Outcome:
    """The 2 KB preview, then Read/Grep turns within read-grep's own bounds, until a final report."""
    started = time.perf_counter()
    ctx = _context(local, handle, request)
    record = local.stores.records.outputs.get_output(handle, local.session.tenant)
    messages = [
        {"role": "system", "content": render_read_grep_system(ctx, handle, "/")},
        {"role": "user", "content": preview_message(handle, content)},
    ]
    tools = PinnedTools(StoredOutput(local.stores.blobs, record))
    bounds = agent_bounds(local.settings, local.runtime.map_limits())
    outcome = run_agent(
        local.runtime.llm, messages, tools=sub_agent_tools(), execute=tools, nonce=ctx.nonce, bounds=bounds
    )
    answer = outcome.report.content if outcome.report else f"(no answer: {outcome.failure})"
    return Outcome(answer, outcome.usage, time.perf_counter() - started, "preview+Read/Grep")
