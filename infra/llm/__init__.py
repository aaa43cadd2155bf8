"""Model access: the litellm client and Router, the per-stage model catalog, model limits and prices,
the readiness probe, provider rate limits."""
