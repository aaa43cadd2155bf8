"""The read-grep strategy over a stored output: pinned tools, progress, failure → truncate fallback."""

from __future__ import annotations

import json
import re

import pytest

from extraction.protocols import LLMReply, ToolCall, Usage
from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus
from tests.workers.conftest import NONCE_RE, store_output, submit
from workers.job import context
from workers.job.agent import run_read_grep
from workers.job.steps import ReadGrep

LOG = "".join(f"2026-11-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z INFO served request {i}\n" for i in range(20_000))
LOG = LOG.replace(
    "served request 12345\n", "served request 12345\n2026-11-01T03:25:46Z ERROR billing: connection pool exhausted\n"
)

pytestmark = pytest.mark.twin(
    "the read-grep agent's turns; read-grep jobs run on file:// and S3 in tests/integration (stack)"
)


def grepping_model(target_handle: str | None = None) -> ScriptedLLM:
    """Greps once for the incident, then reports the tool result inside the wrapper."""

    def respond(messages, tools):
        system = messages[0]["content"]
        nonce = NONCE_RE.search(system).group(1)
        handle = target_handle or re.search(r"Handle/filename: (\S+)", system).group(1)
        tool_results = [m["content"] for m in messages if m["role"] == "tool"]
        if not tool_results:
            args = json.dumps({"handle": handle, "pattern": "pool exhausted", "before": 1})
            return LLMReply(
                tool_calls=[ToolCall(id="g1", name="Grep", arguments=args)], usage=Usage(calls=1, input_tokens=300)
            )
        return LLMReply(
            content=f'<ai-agent-{nonce}-FINAL format="text">{tool_results[-1]}</ai-agent-{nonce}-FINAL>',
            usage=Usage(calls=1, input_tokens=400, output_tokens=30),
        )

    return ScriptedLLM(respond)


def test_read_grep_reports_the_grepped_lines_with_line_numbers(make_runtime) -> None:
    rt = make_runtime(grepping_model())
    output = store_output(rt, LOG.encode())
    job = submit(rt, output, "connection pool incidents", mode="read-grep")
    assert isinstance(context.start(rt, job.id), ReadGrep)
    run_read_grep(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "read-grep"
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:read-grep:\n\n"
    )
    assert " 12347:\t2026-11-01T03:25:46Z ERROR billing: connection pool exhausted" in done.result
    assert (done.agent_turns, done.agent_tool_calls, done.usage.calls) == (2, 1, 2)
    assert done.usage.input_tokens < output.stats.tokens * 0.05


def test_grep_on_another_file_is_a_tool_error_never_access(make_runtime) -> None:
    rt = make_runtime(grepping_model(target_handle="../other-session/secret"))
    output = store_output(rt, LOG.encode())
    job = submit(rt, output, "connection pool incidents", mode="read-grep")
    context.start(rt, job.id)
    run_read_grep(rt, job.id)
    done = rt.jobs.records.get(job.id)
    tool_answer = next(m for m in rt.llm.calls[1]["messages"] if m["role"] == "tool")["content"]
    assert tool_answer.startswith("Error: no such file '../other-session/secret'")
    assert "connection pool exhausted" not in tool_answer and "connection pool exhausted" not in done.result


def test_exhausted_bounds_end_in_the_warning_fallback(make_runtime) -> None:
    looping = ScriptedLLM(
        lambda m, t: LLMReply(
            tool_calls=[
                ToolCall(
                    id="r",
                    name="Read",
                    arguments=json.dumps(
                        {
                            "handle": re.search(r"Handle/filename: (\S+)", m[0]["content"]).group(1),
                            "offset": 1,
                            "limit": 5,
                        }
                    ),
                )
            ]
        )
    )
    rt = make_runtime(looping, agent_max_turns=4)
    output = store_output(rt, LOG.encode())
    job = submit(rt, output, "anything", mode="read-grep")
    context.start(rt, job.id)
    run_read_grep(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:truncate:\n\n"
        "WARNING: tool_output fallback to truncate (read-grep failed: turn limit reached (4 turns) without a "
        "final report)."
    )
    assert done.agent_turns == 4 and done.agent_tool_calls == 4


def test_the_agents_grep_stops_at_the_time_budget_and_tells_the_model_where(make_runtime) -> None:
    """A budget of a nanosecond is spent at the first clock reading, after the first 64 KiB block."""
    rt = make_runtime(grepping_model(), grep_time_budget_seconds=1e-9, blob_read_block_bytes=64 << 10)
    output = store_output(rt, LOG.encode())
    job = submit(rt, output, "connection pool incidents", mode="read-grep")
    context.start(rt, job.id)
    run_read_grep(rt, job.id)
    tool_answer = next(m for m in rt.llm.calls[1]["messages"] if m["role"] == "tool")["content"]
    stopped_at = LOG.encode()[: 64 << 10].count(b"\n") + 1
    assert re.search(rf"Stopped after [\d.]+ seconds at line {stopped_at:,} \(the grep time budget", tool_answer)
    assert tool_answer.endswith("Narrow the pattern.") and "connection pool exhausted" not in tool_answer
