"""When to hedge a model call, and how many hedges a job may send: the defaults come from arithmetic.

The case they are sized for (F1 with tails): 33 calls a job (32 maps and a reduce) of ~0.55 s, 5 % of calls
10x slow (5 s). Without hedging 1 - 0.95^33 = 82 % of jobs wait for a slow call, so the median job takes
~5.6 s; the target is <= 0.6x, ~3.3 s. A hedged slow call ends at trigger + 0.55 s, its job at about
trigger + 1.1 s (the reduce after it): the trigger must stay under ~2 s, i.e. ~2-4x the median.

* Why not the plain p90 (The Tail at Scale's example): with 5 % slow calls the p90 lies in the fast body
  (~0.55 s), so 10 % of all calls pass it: 3.3 hedges a job, nearly all wasted, and a 10 % budget spent
  before the slow calls come. So the trigger is max(p90, 2 x p50, 1 s floor): 1.1 s here; a distribution
  whose body is wider than 2x its median is still hedged at its p90.
* Budget: ceil(10 % of the job's planned calls), at least 1 (4 for 33 calls). The job holds 1.65 slow calls
  on average; P(more than 4 of 33) = 2 %. Expected calls 33 + 1.65 = 1.05x.
* Two hedges per call at most: a hedge is itself slow 5 % of the time, so with one hedge 1.65 x 5 % = 8 %
  of jobs would still wait 5 s (the job's p95 would be a slow job); a second copy after another trigger
  makes that 0.4 % for 0.08 extra calls a job.
* The 1 s floor keeps fast calls (the offline model answering at once, scheduling noise on a busy worker) from being
  hedged at all; `min_samples` (20) before a window is trusted, and `initial_delay` (3 s) until then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from extraction.protocols import Usage

if TYPE_CHECKING:
    from collections.abc import Callable

    from infra.llm.hedging.window import LatencyWindow


@dataclass(frozen=True)
class HedgePolicy:
    """The trigger (percentile, median multiple, floor, warm-up) and the budget (fraction of calls, hedges a call)."""

    enabled: bool = True
    percentile: float = 90.0
    median_multiple: float = 2.0
    floor_seconds: float = 1.0
    min_samples: int = 20
    initial_delay_seconds: float = 3.0
    window: int = 200
    budget_fraction: float = 0.10
    per_call: int = 2

    def delay(self, window: LatencyWindow | None) -> float:
        """Seconds a call waits before its (next) hedge: `initial_delay` until the window is trusted."""
        if window is None:
            return self.initial_delay_seconds
        median = window.percentile(50)
        return max(self.floor_seconds, window.percentile(self.percentile), self.median_multiple * median)

    def budget(self, planned_calls: int) -> int:
        """Hedges a job may send: `budget_fraction` of its planned calls, rounded up, at least 1; 0 when off."""
        if not self.enabled:
            return 0
        return max(1, math.ceil(self.budget_fraction * max(planned_calls, 0) - 1e-9))


@dataclass
class HedgeTicket:
    """What a job's gate hands its client for one call (in the pacer's `CallScope`): the stage, the job's
    hedge budget (`reserve`: True when one more hedge may go), and what the call's hedging came to."""

    stage: str
    reserve: Callable[[], bool]
    prompt_tokens: Callable[[], int] = lambda: 0
    sent: int = 0
    won: bool = False
    cost: Usage = field(default_factory=Usage)
    """The losing copies' usage: what hedging cost this call."""
