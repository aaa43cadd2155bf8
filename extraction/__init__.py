"""The pure extraction engine: stats, chunk planning, mode choice, prompts, report parsing, truncation.

Nothing in this package touches the network, Redis, S3, Celery or FastAPI (a test enforces it).
Outside effects enter through the small protocols in `extraction.protocols`.
"""
