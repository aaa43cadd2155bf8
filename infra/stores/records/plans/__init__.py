"""Chunk plans kept with their output, a cache for `infra.planning.plans` (`plans.redis`, and its twin
`plans.memory`)."""

from infra.stores.records.plans.base import MAX_PLANS, RecordPlans

__all__ = ["MAX_PLANS", "RecordPlans"]
