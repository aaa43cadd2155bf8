"""Decide what the offline model answers to one chat request: map, reduce, read-grep, or a simple agent's turn.

Kept apart from the HTTP layer so the whole decision is a pure function of the request body and
the knobs: the same request always gets the same answer, which is what tests and benchmarks need.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from offline_model import prompt
from offline_model.agent import AgentStep, next_step, offers_read_grep
from offline_model.config import OfflineModelConfig
from offline_model.query_agent import next_step as next_query_step
from offline_model.query_agent import offers_query
from offline_model.ranking import extract_answer, merge_chunk_outputs
from offline_model.targeting import answer_shape
from offline_model.tool_agent import agent_turn, call_id

NAME = "toolout offline model (deterministic, no LLM)"
BYTES_PER_TOKEN = 3


@dataclass(frozen=True)
class Answer:
    """What to send back: final `content`, or `tool_calls` in OpenAI shape; `kind` is for logs."""

    kind: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def respond(body: dict[str, Any], config: OfflineModelConfig) -> Answer:
    """The answer to a chat-completions body, shaped by the `malformed` knob (or a targeted wrapper `fault`)."""
    config = dataclasses.replace(config, malformed=answer_shape(body, config))
    messages = body.get("messages") or []
    system = prompt.system_prompt(messages)
    extract = prompt.section(system, "WHAT TO EXTRACT")
    nonce = prompt.nonce(system)
    if extract is None and body.get("tools"):
        return agent_answer(body)
    if extract is None:
        return Answer(
            "unrecognized", shape(f"{NAME}: the system prompt has no WHAT TO EXTRACT section.", nonce, config, "")
        )
    budget = answer_budget(body, config)
    handle = prompt.handle(system)
    if offers_query(body.get("tools")):
        step = next_query_step(messages, extract)
        if step.answer is None:
            return Answer("tool-call", tool_calls=[tool_call(step)])
        return Answer("query", shape(step.answer, nonce, config, extract))
    if offers_read_grep(body.get("tools")) and handle:
        step = next_step(messages, extract, handle, budget_bytes=budget)
        if step.answer is None:
            return Answer("tool-call", tool_calls=[tool_call(step)])
        return Answer("read-grep", shape(step.answer, nonce, config, extract))
    outputs = prompt.section(system, "CHUNK OUTPUTS")
    if outputs is not None:
        return Answer(
            "reduce",
            shape(
                merge_chunk_outputs(prompt.chunk_blocks(outputs), extract, budget_bytes=budget), nonce, config, extract
            ),
        )
    document = prompt.chunk_text(_last_user_text(messages))
    return Answer("map", shape(extract_answer(document, extract, budget_bytes=budget), nonce, config, extract))


def agent_answer(body: dict[str, Any]) -> Answer:
    """Not an extraction prompt, tools offered: play a simple agent (`offline_model.tool_agent`)."""
    step, text = agent_turn(body)
    if step is None:
        return Answer("agent-answer", text)
    turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    call = {
        "id": call_id(step, turn),
        "type": "function",
        "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
    }
    return Answer("agent-call", tool_calls=[call])


def answer_budget(body: dict[str, Any], config: OfflineModelConfig) -> int:
    """Bytes of extracted lines allowed: the `answer_bytes` knob, tightened by the request's max_tokens."""
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    if not isinstance(max_tokens, int) or max_tokens <= 0:
        return config.answer_bytes
    return max(200, min(config.answer_bytes, max_tokens * BYTES_PER_TOKEN - 200))


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    """The map call's document chunk travels in the (last) user message."""
    users = [m for m in messages if m.get("role") == "user"]
    return prompt.message_text(users[-1]) if users else ""


def tool_call(step: AgentStep) -> dict[str, Any]:
    """An OpenAI `tool_calls` entry; arguments are a JSON string, as providers send them."""
    return {
        "id": step.call_id(),
        "type": "function",
        "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
    }


def shape(content: str, nonce: str | None, config: OfflineModelConfig, extract: str) -> str:
    """Wrap the content in the final-report tags, or deliberately get that wrong (`malformed` knob)."""
    if nonce is None or config.malformed == "no_wrapper":
        return content
    if config.malformed == "empty_wrapper":
        return f'<ai-agent-{nonce}-FINAL format="text"></ai-agent-{nonce}-FINAL>'
    if config.malformed == "wrong_nonce":
        nonce = other_nonce(nonce)
    if config.malformed == "lone_surrogate":
        content += "\ud800"
    opened = f'<ai-agent-{nonce}-FINAL format="text">\n{content}\n'
    if config.malformed == "no_closing_tag":
        return opened
    wrapped = f"{opened}</ai-agent-{nonce}-FINAL>"
    if config.malformed == "think_block":
        reasoning = f"The request asks for: {extract[:200].strip()}\nI compared each line with those words."
        return f"<think>\n{reasoning}\n</think>\n{wrapped}"
    return wrapped


def other_nonce(nonce: str) -> str:
    """A different nonce of the same length, derived from the real one (deterministic)."""
    digest = hashlib.sha256(nonce.encode()).hexdigest() * (len(nonce) // 64 + 1)
    candidate = digest[: len(nonce)]
    return candidate if candidate != nonce else candidate[::-1] + "x"
