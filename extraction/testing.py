"""Test doubles that ship with the engine, so every layer's tests can script a model.

`ScriptedLLM` answers from a list (or a function of the messages) and records every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extraction.protocols import LLMReply, Message, Usage

Responder = Callable[[list[Message], list[dict[str, Any]] | None], LLMReply | str]


class ScriptedLLM:
    """An `LLM` whose answers are given up front; each call is kept in `calls` for assertions."""

    def __init__(self, replies: list[LLMReply | str] | Responder) -> None:
        self._replies = replies
        self.calls: list[dict[str, Any]] = []

    def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        self.calls.append({"messages": messages, "tools": tools, "max_tokens": max_tokens})
        reply = self._next(messages, tools)
        return reply if isinstance(reply, LLMReply) else LLMReply(content=reply, usage=Usage(calls=1))

    def _next(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> LLMReply | str:
        if callable(self._replies):
            return self._replies(messages, tools)
        if not self._replies:
            raise AssertionError("ScriptedLLM ran out of scripted replies")
        return self._replies.pop(0)
