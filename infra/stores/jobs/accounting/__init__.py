"""Accounting: call and hedge budgets, usage and model-call counts, and the store-wide totals behind `/metrics`
(`accounting.redis`, and its in-memory twin `accounting.memory`)."""

from infra.stores.jobs.accounting.base import HEDGE_COUNTS, JobAccounting, UsageTotal

__all__ = ["HEDGE_COUNTS", "JobAccounting", "UsageTotal"]
