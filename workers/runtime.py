"""What a worker process needs, built once per process from settings: stores, model, limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from extraction.mapreduce import ModelLimits
from extraction.protocols import LLM
from infra.blobstore import BlobStore, open_blob_store_from_settings
from infra.jobstore import JobStore
from infra.records import RecordStore
from infra.redis_client import connect
from infra.settings import Settings, get_settings


@dataclass
class Runtime:
    """The worker's dependencies; tests build one with in-memory stores and a scripted model."""

    settings: Settings
    jobs: JobStore
    records: RecordStore
    blobs: BlobStore
    llm: LLM
    limits: ModelLimits
    _warm: bool = field(default=False, repr=False)

    def llm_ready(self) -> None:
        """Touch the model client so its heavy import happens now, not in the first task."""
        warm = getattr(self.llm, "warm_up", None)
        if callable(warm) and not self._warm:
            warm()
            self._warm = True


def build_runtime(settings: Settings) -> Runtime:
    from infra.llm import client_from_settings, model_limits

    client = connect(settings.redis_url)
    context, max_output = model_limits(
        settings.model,
        default_context=settings.model_context_tokens,
        default_max_output=settings.model_max_output_tokens,
    )
    return Runtime(
        settings=settings,
        jobs=JobStore(client, ttl_seconds=settings.job_ttl_seconds, deadline_seconds=settings.job_deadline_seconds),
        records=RecordStore(client, session_ttl_seconds=settings.session_ttl_seconds),
        blobs=open_blob_store_from_settings(settings),
        llm=client_from_settings(settings),
        limits=ModelLimits(context_tokens=context, max_output_tokens=max_output, encoding=settings.tokenizer_encoding),
    )


@lru_cache(maxsize=1)
def runtime() -> Runtime:
    return build_runtime(get_settings())
