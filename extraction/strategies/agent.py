"""The read-grep sub-agent's tool loop, independent of where the file lives or which model answers.

The loop only succeeds with a real final report carrying this job's nonce. A tool that raises
anything is a tool error the model reads (a `ToolOutError` with its message; any other exception by
its type only, logged with its traceback — its text may hold paths or settings), so no tool can fail
the job; only the task's soft time limit passes through, to end the task as Celery means it to. Hitting a bound
(turns, tokens), the model stopping without the wrapper, a model call that fails (an
`ExtractionError` from the LLM), or a cancel all end as a failure with its reason — the caller
then falls back to truncate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extraction.errors import ExtractionError, ToolOutError
from extraction.protocols import LLM, Message, ToolCall, Usage
from extraction.texts.report import FinalReport, parse_final_report

log = logging.getLogger("toolout.agent")

PASS_THROUGH = frozenset({"SoftTimeLimitExceeded", "TimeLimitExceeded"})
"""Exceptions (by class name: extraction does not import Celery) that end the task, not the tool call."""

ToolExecutor = Callable[[str, dict[str, Any]], str]
"""Runs one tool call (name, parsed arguments) and returns the text the model sees; raises ToolOutError on misuse."""


@dataclass(frozen=True)
class AgentBounds:
    max_turns: int = 15
    max_tool_calls_per_turn: int = 10
    max_total_tokens: int = 200_000
    max_output_tokens: int | None = None


@dataclass
class AgentOutcome:
    report: FinalReport | None = None
    failure: str | None = None
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0


@dataclass
class _Loop:
    llm: LLM
    tools: list[dict[str, Any]]
    execute: ToolExecutor
    nonce: str
    bounds: AgentBounds
    on_turn: Callable[[int], None]
    should_stop: Callable[[], bool]
    outcome: AgentOutcome = field(default_factory=AgentOutcome)

    def run(self, messages: list[Message]) -> AgentOutcome:
        conversation = list(messages)
        while self.outcome.report is None and self.outcome.failure is None:
            self.outcome.failure = self._stop_reason()
            if self.outcome.failure is None:
                self._turn(conversation)
        return self.outcome

    def _stop_reason(self) -> str | None:
        if self.should_stop():
            return "the job was canceled"
        if self.outcome.turns >= self.bounds.max_turns:
            return f"turn limit reached ({self.bounds.max_turns} turns) without a final report"
        spent = self.outcome.usage.input_tokens + self.outcome.usage.output_tokens
        if spent > self.bounds.max_total_tokens:
            return f"token budget exhausted ({spent} > {self.bounds.max_total_tokens} tokens) without a final report"
        return None

    def _turn(self, conversation: list[Message]) -> None:
        try:
            reply = self.llm.complete(conversation, tools=self.tools, max_tokens=self.bounds.max_output_tokens)
        except ExtractionError as exc:  # provider failure after retries, spent call budget, job ended
            self.outcome.failure = f"model call failed: {exc.message}"
            return
        self.outcome.turns += 1
        self.outcome.usage = self.outcome.usage + reply.usage
        self.on_turn(min(len(reply.tool_calls), self.bounds.max_tool_calls_per_turn))
        if reply.tool_calls:
            conversation += self._run_tools(reply.content, reply.tool_calls)
            return
        parsed = parse_final_report(reply.content or "", self.nonce)
        if isinstance(parsed, FinalReport):
            self.outcome.report = parsed
        else:
            self.outcome.failure = f"the model stopped without a final report ({parsed.reason})"

    def _run_tools(self, content: str | None, calls: list[ToolCall]) -> list[Message]:
        allowed = calls[: self.bounds.max_tool_calls_per_turn]
        self.outcome.tool_calls += len(allowed)
        messages: list[Message] = [assistant_tool_message(content, calls)]
        for i, call in enumerate(calls):
            text = (
                self._call(call)
                if i < len(allowed)
                else (f"Error: not run — at most {self.bounds.max_tool_calls_per_turn} tool calls per turn.")
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        return messages

    def _call(self, call: ToolCall) -> str:
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
            return self.execute(call.name, arguments)
        except ValueError as exc:
            return f"Error: invalid arguments for {call.name}: {exc}"
        except ToolOutError as exc:
            return f"Error: {exc.message}"
        except Exception as exc:
            if type(exc).__name__ in PASS_THROUGH:
                raise
            log.warning("tool %s raised %s", call.name, type(exc).__name__, exc_info=True)
            return f"Error: {call.name} failed ({type(exc).__name__}); try a different, simpler call."


def assistant_tool_message(content: str | None, calls: list[ToolCall]) -> Message:
    """The assistant turn that requested tools, in the OpenAI shape providers expect back."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ],
    }


def run_agent(
    llm: LLM,
    messages: list[Message],
    *,
    tools: list[dict[str, Any]],
    execute: ToolExecutor,
    nonce: str,
    bounds: AgentBounds = AgentBounds(),
    on_turn: Callable[[int], None] = lambda calls: None,
    should_stop: Callable[[], bool] = lambda: False,
) -> AgentOutcome:
    """Run the tool loop until a real final report, a bound, or a stop.

    `on_turn` gets each turn's executed tool calls.
    """
    return _Loop(llm, tools, execute, nonce, bounds, on_turn, should_stop).run(messages)
