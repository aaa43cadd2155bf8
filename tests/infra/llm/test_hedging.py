"""Hedged calls without a model: the trigger and budget arithmetic, the latency windows, and the race
(scripted coroutines decide which copy answers, so no assertion depends on timing)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from extraction.protocols import LLMReply, Usage
from infra.errors import LLMCallError
from infra.llm.hedging import HedgePolicy, Hedger, HedgeTicket, LatencyBook, LatencyWindow
from infra.llm.hedging.race import BackgroundLoop


def window_of(*seconds: float) -> LatencyWindow:
    window = LatencyWindow(100)
    for s in seconds:
        window.add(s)
    return window


# --- the trigger and the budget ---------------------------------------------------------------------
def test_the_trigger_waits_for_the_window_then_takes_the_largest_of_percentile_medians_and_floor() -> None:
    policy = HedgePolicy(initial_delay_seconds=3.0)
    assert policy.delay(None) == 3.0
    body = window_of(*[0.55] * 95, *[5.5] * 5)  # 5 % slow: the p90 is in the fast body
    assert policy.delay(body) == pytest.approx(1.1)  # 2 x the median, not the p90 (0.55)
    assert policy.delay(window_of(*[0.1] * 100)) == 1.0  # the floor
    assert policy.delay(window_of(*[1.0] * 80, *[4.0] * 20)) == 4.0  # a wide body: its p90


def test_the_budget_is_a_share_of_the_planned_calls_rounded_up_at_least_one_and_none_when_off() -> None:
    policy = HedgePolicy()
    assert [policy.budget(n) for n in (33, 30, 1, 0)] == [4, 3, 1, 1]
    assert HedgePolicy(enabled=False).budget(33) == 0


def test_a_stage_borrows_its_models_window_until_it_has_samples_of_its_own() -> None:
    book = LatencyBook(10)
    assert book.window("m", "reduce", 2) is None
    for _ in range(3):
        book.add("m", "map", 0.5)
    assert len(book.window("m", "reduce", 2)) == 3  # the model's window (its maps)
    book.add("m", "reduce", 2.0)
    book.add("m", "reduce", 2.0)
    assert book.window("m", "reduce", 2).percentile(50) == 2.0
    with pytest.raises(ValueError, match="no latency samples"):
        LatencyWindow(3).percentile(50)


# --- the race -----------------------------------------------------------------------------------------
class Script:
    """Copies of a call: copy n answers when `release[n]` is set (or fails with `fail[n]`); records cancellations."""

    def __init__(self, copies: int, fail: dict[int, Exception] | None = None) -> None:
        self.release = [threading.Event() for _ in range(copies)]
        self.cancelled = [threading.Event() for _ in range(copies)]
        self.fail = fail or {}
        self.started = 0

    def attempt(self):
        n, self.started = self.started, self.started + 1

        async def copy() -> LLMReply:
            try:
                while not self.release[n].is_set():
                    await asyncio.sleep(0.001)
            except asyncio.CancelledError:
                self.cancelled[n].set()
                raise
            if n in self.fail:
                raise self.fail[n]
            return LLMReply(content=f"copy {n}", usage=Usage(calls=1, input_tokens=100, output_tokens=10), model="m")

        return copy()


def ticket(budget: int = 1, reserved: list[int] | None = None) -> HedgeTicket:
    granted = reserved if reserved is not None else []

    def reserve() -> bool:
        granted.append(1)
        return len(granted) <= budget

    return HedgeTicket("map", reserve, prompt_tokens=lambda: 90)


def hedger(**policy) -> Hedger:
    return Hedger(HedgePolicy(initial_delay_seconds=0.0, **policy), loop=BackgroundLoop())


def test_a_hedge_that_answers_first_wins_the_original_is_cancelled_and_its_prompt_counted() -> None:
    script, t, paced = Script(2), ticket(), []
    script.release[1].set()  # the hedge answers at once; the original never would
    reply = hedger(per_call=1).run("m", t, script.attempt, before_hedge=lambda: paced.append(1))
    assert reply.content == "copy 1" and (t.sent, t.won, paced) == (1, True, [1])
    assert script.cancelled[0].wait(5)
    assert t.cost == Usage(calls=1, input_tokens=90)  # the cancelled copy: its prompt, as sent
    assert reply.usage == Usage(calls=2, input_tokens=190, output_tokens=10)


def test_when_both_copies_answered_the_loser_is_billed_what_it_answered() -> None:
    script, t = Script(2), ticket()
    hedger_ = hedger(per_call=1)

    def both_answer() -> None:
        script.release[0].set()
        script.release[1].set()

    reply = hedger_.run("m", t, script.attempt, before_hedge=both_answer)
    assert reply.usage.calls == 2 and t.cost.calls == 1 and t.cost.output_tokens in (0, 10)


def test_no_hedge_goes_past_the_jobs_budget_and_the_original_still_answers() -> None:
    script, reserved = Script(1), []
    t = ticket(budget=0, reserved=reserved)
    threading.Timer(0.05, script.release[0].set).start()
    reply = hedger().run("m", t, script.attempt, before_hedge=lambda: pytest.fail("no hedge may be paced"))
    assert reply.content == "copy 0" and t.sent == 0 and reserved == [1] and reply.usage.calls == 1


def test_a_failed_copy_leaves_the_race_to_the_other_and_costs_a_call_of_no_tokens() -> None:
    script = Script(2, fail={0: LLMCallError("boom", retryable=True)})
    t = ticket()

    def fail_original_then_answer() -> None:
        script.release[0].set()
        threading.Timer(0.05, script.release[1].set).start()

    reply = hedger(per_call=1).run("m", t, script.attempt, before_hedge=fail_original_then_answer)
    assert reply.content == "copy 1" and t.won and t.cost == Usage(calls=1)


def test_when_every_copy_fails_the_originals_error_is_raised() -> None:
    script = Script(2, fail={0: LLMCallError("first", retryable=True), 1: LLMCallError("second", retryable=True)})

    def release_both() -> None:
        script.release[0].set()
        script.release[1].set()

    with pytest.raises(LLMCallError, match="first"):
        hedger(per_call=1).run("m", ticket(), script.attempt, before_hedge=release_both)


def test_the_winners_latency_teaches_the_window() -> None:
    script, h = Script(1), hedger()
    script.release[0].set()
    h.run("m", ticket(budget=0), script.attempt, before_hedge=lambda: None)
    assert len(h.book.window("m", "map", 1)) == 1
