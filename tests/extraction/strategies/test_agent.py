"""The sub-agent loop: only a real final report succeeds; every bound ends in a failure with its reason."""

from __future__ import annotations

import json

import pytest

from extraction.errors import NotFound
from extraction.protocols import LLMReply, ToolCall, Usage
from extraction.strategies.agent import AgentBounds, run_agent
from extraction.testing import ScriptedLLM
from extraction.texts.nonce import wrap

NONCE = "n0nce1234"
START = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]


def grep_call(i: int = 0, handle: str = "file-1") -> LLMReply:
    args = json.dumps({"handle": handle, "pattern": "ERROR"})
    return LLMReply(
        tool_calls=[ToolCall(id=f"c{i}", name="Grep", arguments=args)],
        usage=Usage(calls=1, input_tokens=50, output_tokens=5),
    )


def final(text: str = "line 7: ERROR pool exhausted") -> LLMReply:
    return LLMReply(content=wrap(NONCE, text), usage=Usage(calls=1, input_tokens=60, output_tokens=9))


def executor(log: list):
    def execute(name: str, arguments: dict) -> str:
        log.append((name, arguments))
        if arguments.get("handle") != "file-1":
            raise NotFound("no such file: only file-1")
        return "     7:\tERROR pool exhausted"

    return execute


def test_tool_results_reach_the_model_and_the_report_wins() -> None:
    calls: list = []
    turns: list[int] = []
    llm = ScriptedLLM([grep_call(), final()])
    outcome = run_agent(llm, START, tools=[], execute=executor(calls), nonce=NONCE, on_turn=turns.append)
    assert outcome.report.content == "line 7: ERROR pool exhausted" and outcome.failure is None
    assert (outcome.turns, outcome.tool_calls, turns) == (2, 1, [1, 0])
    assert outcome.usage == Usage(calls=2, input_tokens=110, output_tokens=14)
    second_request = llm.calls[1]["messages"]
    assert second_request[-2]["tool_calls"][0]["function"]["name"] == "Grep"
    assert second_request[-1] == {"role": "tool", "tool_call_id": "c0", "content": "     7:\tERROR pool exhausted"}


def test_another_filename_is_a_tool_error_not_access() -> None:
    llm = ScriptedLLM([grep_call(handle="../../etc/passwd"), final()])
    outcome = run_agent(llm, START, tools=[], execute=executor([]), nonce=NONCE)
    assert llm.calls[1]["messages"][-1]["content"] == "Error: no such file: only file-1"
    assert outcome.report is not None


def test_bad_json_arguments_are_reported_to_the_model() -> None:
    bad = LLMReply(tool_calls=[ToolCall(id="x", name="Read", arguments="{not json")])
    llm = ScriptedLLM([bad, final()])
    run_agent(llm, START, tools=[], execute=executor([]), nonce=NONCE)
    assert llm.calls[1]["messages"][-1]["content"].startswith("Error: invalid arguments for Read")


def test_turn_limit_is_a_failure() -> None:
    outcome = run_agent(
        ScriptedLLM(lambda m, t: grep_call()),
        START,
        tools=[],
        execute=executor([]),
        nonce=NONCE,
        bounds=AgentBounds(max_turns=3),
    )
    assert outcome.report is None and outcome.turns == 3
    assert outcome.failure == "turn limit reached (3 turns) without a final report"


def test_token_budget_is_a_failure() -> None:
    outcome = run_agent(
        ScriptedLLM(lambda m, t: grep_call()),
        START,
        tools=[],
        execute=executor([]),
        nonce=NONCE,
        bounds=AgentBounds(max_total_tokens=120),
    )
    assert outcome.turns == 3 and outcome.failure.startswith("token budget exhausted (165 > 120 tokens)")


def test_stopping_without_the_wrapper_or_with_a_forged_nonce_is_a_failure() -> None:
    forged = LLMReply(content=wrap("guessed", "the answer"))
    for reply in (LLMReply(content="The answer is 42."), forged):
        outcome = run_agent(ScriptedLLM([reply]), START, tools=[], execute=executor([]), nonce=NONCE)
        assert outcome.report is None and outcome.failure.startswith("the model stopped without a final report")


def test_extra_tool_calls_in_one_turn_are_refused() -> None:
    many = LLMReply(
        tool_calls=[
            ToolCall(id=f"c{i}", name="Grep", arguments='{"handle": "file-1", "pattern": "x"}') for i in range(4)
        ]
    )
    ran: list = []
    llm = ScriptedLLM([many, final()])
    outcome = run_agent(
        llm, START, tools=[], execute=executor(ran), nonce=NONCE, bounds=AgentBounds(max_tool_calls_per_turn=2)
    )
    answers = [m["content"] for m in llm.calls[1]["messages"] if m["role"] == "tool"]
    assert len(ran) == 2 and outcome.tool_calls == 2
    assert answers[2:] == ["Error: not run — at most 2 tool calls per turn."] * 2


def test_cancel_stops_the_loop_before_the_next_call() -> None:
    llm = ScriptedLLM(lambda m, t: grep_call())
    outcome = run_agent(
        llm, START, tools=[], execute=executor([]), nonce=NONCE, should_stop=lambda: len(llm.calls) >= 2
    )
    assert len(llm.calls) == 2 and outcome.failure == "the job was canceled"


def test_any_exception_from_a_tool_is_a_tool_error_the_model_reads(caplog) -> None:
    def broken(name: str, arguments: dict) -> str:
        raise RecursionError("maximum recursion depth exceeded at /srv/secret/path")

    llm = ScriptedLLM([grep_call(), final()])
    with caplog.at_level("WARNING", logger="toolout.agent"):
        outcome = run_agent(llm, START, tools=[], execute=broken, nonce=NONCE)
    seen = llm.calls[1]["messages"][-1]["content"]
    assert seen == "Error: Grep failed (RecursionError); try a different, simpler call."
    assert "/srv/secret" not in seen, "an exception's text stays in the log"
    assert outcome.report is not None and outcome.failure is None
    assert "RecursionError" in caplog.text


def test_the_task_time_limit_is_not_swallowed() -> None:
    class SoftTimeLimitExceeded(Exception):
        pass

    def slow(name: str, arguments: dict) -> str:
        raise SoftTimeLimitExceeded

    with pytest.raises(SoftTimeLimitExceeded):
        run_agent(ScriptedLLM([grep_call(), final()]), START, tools=[], execute=slow, nonce=NONCE)
