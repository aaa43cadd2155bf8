"""What the pipeline's steps need, built once per process by its entry point: stores, model, limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from extraction.protocols import LLM
from extraction.strategies.mapreduce import ModelLimits
from infra.blobstore import BlobStore
from infra.jobstore import JobStore
from infra.model_info import model_limits_for
from infra.records import RecordStore
from infra.settings import Settings
from infra.stores import Stores


@dataclass
class Runtime:
    """The steps' dependencies; tests build one with in-memory stores and a scripted model."""

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


def build_runtime(
    settings: Settings, stores: Stores, llm: LLM | None = None, *, limits: ModelLimits | None = None
) -> Runtime:
    """The runtime over `stores`: the litellm client and model limits `settings` describe, unless given."""
    return Runtime(
        settings=settings,
        jobs=stores.jobs,
        records=stores.records,
        blobs=stores.blobs,
        llm=llm if llm is not None else _litellm_client(settings),
        limits=limits if limits is not None else model_limits_for(settings),
    )


def _litellm_client(settings: Settings) -> LLM:
    from infra.llm import client_from_settings  # litellm's client: imported when a process needs it

    return client_from_settings(settings)
