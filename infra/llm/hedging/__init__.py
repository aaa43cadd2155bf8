"""Hedged model calls ("The Tail at Scale"): a call that has waited past its model's usual latency gets a
second copy; the first valid answer wins, the other's HTTP request is cancelled, both are counted."""

from infra.llm.hedging.policy import HedgePolicy, HedgeTicket
from infra.llm.hedging.race import Attempt, HedgeOutcome, Hedger
from infra.llm.hedging.window import LatencyBook, LatencyWindow

__all__ = ["Attempt", "HedgeOutcome", "HedgePolicy", "HedgeTicket", "Hedger", "LatencyBook", "LatencyWindow"]
