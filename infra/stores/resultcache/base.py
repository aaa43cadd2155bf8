"""The result cache's index: which finished jobs may answer a request again, and when they no longer may.

An entry names a job, not a result: the job record keeps the answer (and its TTL), and a job is
offered as a source as soon as it is created, whether it will succeed or not. Whoever looks a key up
checks each source it gets back (still there, succeeded with a real report, its output not deleted),
takes the first good one and drops the ones that can never answer (`forget`). That keeps the index
free of results that could go stale, and an answer can never outlive its job or its output.

Every implementation keeps these promises, checked on both by
`tests/infra/stores/test_result_cache_contract.py`:

* `sources` lists a key's jobs newest first, at most `MAX_SOURCES`, for `ttl_seconds` after the key
  was last offered a source;
* `forget_outputs` removes every source that read one of the given outputs, and only those: deleting
  an output (or its session) takes its answers out of the cache.

`RedisResultCache` runs in production; `MemoryResultCache` serves the embedded mode and unit tests.
"""

from __future__ import annotations

from typing import Protocol

MAX_SOURCES = 8
"""Sources kept per key: enough to skip a few that are still running or failed, never an unbounded list."""


class ResultCache(Protocol):
    """Offer jobs as the answer to a cache key; find them again; forget them when their output goes."""

    def remember(self, key: str, job_id: str, handle: str) -> None:
        """Offer `job_id` (a job reading the output `handle`) as a source for `key`."""
        ...

    def sources(self, key: str) -> list[str]:
        """The job ids offered for `key`, newest first."""
        ...

    def forget(self, key: str, job_id: str) -> None:
        """Drop one source (it failed, fell back, or is gone)."""
        ...

    def forget_outputs(self, handles: list[str]) -> int:
        """Drop every source that read one of `handles` (deleted outputs); returns how many went."""
        ...
