"""The seams through which the pure engine reaches the outside world.

Implementations live in `infra/` (litellm, blob stores); test doubles live beside them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

Message = dict[str, Any]
"""An OpenAI-style chat message: {"role": ..., "content": ..., maybe "tool_calls"/"tool_call_id"}."""


class ToolCall(BaseModel):
    """One function call requested by the model; `arguments` is the raw JSON string it produced."""

    id: str
    name: str
    arguments: str


class Usage(BaseModel):
    """Token and cost accounting of one or more LLM calls; adds up with `+`."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Usage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
        )


class LLMReply(BaseModel):
    """What a model answered: text, tool calls, and what the call cost."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str = ""


@runtime_checkable
class LLM(Protocol):
    """Anything that can complete a chat: litellm in production, scripted doubles in tests."""

    def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply: ...


@runtime_checkable
class BlobReader(Protocol):
    """Read access to one stored blob by key, in byte ranges, so no caller needs it whole."""

    def size(self, key: str) -> int: ...

    def read_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the blob; `end` is clipped to the size."""
        ...

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int = 8 << 20
    ) -> Iterator[bytes]:
        """Stream bytes [start, end) in blocks of at most `block_size`."""
        ...
