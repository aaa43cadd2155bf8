"""Run one model call as a race of copies: the original, then a hedge each time the call waits past the
trigger (within the job's budget); the first valid answer wins and every other copy is cancelled.

Why an event loop: the workers call litellm synchronously from pool threads, and a blocking
`litellm.completion` cannot be stopped from outside, so a losing copy would keep its HTTP request (and the
provider's meter) running to the end. Each copy is instead a `litellm.acompletion` task on one event loop
thread per process (`BackgroundLoop`): the calling thread waits on their futures, and cancelling the
loser's task makes httpx close its connection, which the provider sees as the client going away. One
loop for the process, never closed, because litellm keeps its async HTTP clients bound to the loop that
made them.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, cast

from extraction.protocols import LLMReply, Usage
from infra.llm.hedging.policy import HedgePolicy, HedgeTicket
from infra.llm.hedging.window import LatencyBook

Attempt = Callable[[], Coroutine[Any, Any, LLMReply]]
"""One copy of the call: a fresh coroutine each time it is called."""


class BackgroundLoop:
    """An asyncio loop on a daemon thread, started on first use (and again in a forked child)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._running())

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="toolout-hedge-loop", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


SHARED_LOOP = BackgroundLoop()


@dataclass
class HedgeOutcome:
    """The winning reply (its usage: every copy's) and what the race cost beyond the winner."""

    reply: LLMReply
    sent: int
    won: bool
    cost: Usage


@dataclass
class _Copy:
    future: futures.Future[tuple[LLMReply, float]]
    hedge: bool


@dataclass
class _Race:
    """The copies of one call in flight; `wait` returns the first that answered, or None at the timeout."""

    loop: BackgroundLoop
    attempt: Attempt
    copies: list[_Copy] = field(default_factory=list)

    def start(self) -> None:
        self.copies.append(_Copy(self.loop.submit(_timed(self.attempt())), hedge=bool(self.copies)))

    def wait(self, timeout: float | None) -> _Copy | None:
        """The first copy with an answer; None once `timeout` passes; the first copy's error when all failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            answered = [c for c in self.copies if c.future.done() and c.future.exception() is None]
            if answered:
                return answered[0]
            pending = [c.future for c in self.copies if not c.future.done()]
            if not pending:
                raise self.copies[0].future.exception()  # type: ignore[misc]
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            futures.wait(pending, timeout=remaining, return_when=futures.FIRST_COMPLETED)


async def _timed(coroutine: Coroutine[Any, Any, LLMReply]) -> tuple[LLMReply, float]:
    started = time.monotonic()
    reply = await coroutine
    return reply, time.monotonic() - started


class Hedger:
    """Races copies of a call under a `HedgePolicy`, learning each model's latency as calls answer."""

    def __init__(self, policy: HedgePolicy, book: LatencyBook | None = None, loop: BackgroundLoop | None = None):
        self.policy = policy
        self.book = book or LatencyBook(policy.window)
        self._loop = loop or SHARED_LOOP

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> futures.Future[Any]:
        """Run `coroutine` on the loop the copies run on (a warm-up's: it must load what theirs load)."""
        return self._loop.submit(coroutine)

    def run(self, model: str, ticket: HedgeTicket, attempt: Attempt, before_hedge: Callable[[], object]) -> LLMReply:
        """The first valid answer among the original and its hedges; the ticket says what hedging cost.

        `before_hedge` runs in the calling thread before each hedge leaves (the pacer: the provider's rate
        limits count a hedge like any call). A hedge goes only when the job's budget grants it (`ticket.reserve`).
        """
        delay = self.policy.delay(self.book.window(model, ticket.stage, self.policy.min_samples))
        race = _Race(self._loop, attempt)
        race.start()
        winner = race.wait(delay)
        while winner is None and ticket.sent < self.policy.per_call and ticket.reserve():
            before_hedge()
            race.start()
            ticket.sent += 1
            winner = race.wait(delay)
        return self._settle(model, ticket, race, winner or cast(_Copy, race.wait(None)))

    def _settle(self, model: str, ticket: HedgeTicket, race: _Race, winner: _Copy) -> LLMReply:
        reply, seconds = winner.future.result()
        self.book.add(model, ticket.stage, seconds)
        for copy in race.copies:
            if copy is not winner:
                ticket.cost += self._loser_usage(model, ticket, copy)
        ticket.won = winner.hedge
        return reply.model_copy(update={"usage": reply.usage + ticket.cost})

    def _loser_usage(self, model: str, ticket: HedgeTicket, copy: _Copy) -> Usage:
        """What a losing copy was billed: its usage if it answered too; its prompt tokens, sent, if it was
        cancelled before an answer (providers bill a prompt they started on; its output is unknown, so 0);
        one call of no tokens if it failed (an error answer is not billed)."""
        if copy.future.cancel() or copy.future.cancelled():
            return Usage(calls=1, input_tokens=ticket.prompt_tokens())
        if copy.future.exception() is not None:
            return Usage(calls=1)
        reply, seconds = copy.future.result()
        self.book.add(model, ticket.stage, seconds)
        return reply.usage
