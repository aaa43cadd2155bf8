"""The bundle of stores a process works on, as its entry point hands it to everything else.

The type lives here, beside the stores it bundles; opening one from settings is the wiring's job
(`infra.wiring.stores.open_stores`), which only entry points call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from infra.blobstore import BlobStore
from infra.llm.ratelimit import MemoryRateLimiter, RateLimiter
from infra.query.loaded_forms import LoadedForms, MemoryLoadedForms
from infra.stores.apikeys import ApiKeyStore
from infra.stores.idempotency import IdempotencyStore
from infra.stores.jobs import JobStores
from infra.stores.records import RecordStores
from infra.stores.resultcache import ResultCache

EndListener = Callable[[str], None]
"""Called with a job id as the job ends, from a thread of the store's choosing."""


@dataclass
class Stores:
    """The state a process works on; `ping` checks the state backend, `close` releases it."""

    records: RecordStores
    jobs: JobStores
    api_keys: ApiKeyStore
    idempotency: IdempotencyStore
    cache: ResultCache
    blobs: BlobStore
    ping: Callable[[], object]
    close: Callable[[], None]
    follow_ends: Callable[[EndListener], Callable[[], None]]
    """Start calling the listener with every job that ends, in any process; returns the function that stops it."""
    limiter: RateLimiter = field(default_factory=MemoryRateLimiter)
    """Provider limits (rpm/tpm per model) shared by every process on the same Redis."""
    loaded: LoadedForms = field(default_factory=MemoryLoadedForms)
    """The query strategy's load locks and kept-tables pointers (`infra.query.loaded_forms`)."""
