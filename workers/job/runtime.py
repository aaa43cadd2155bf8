"""What the pipeline's steps need, built once per process by its entry point: stores, models, limits.

`llm` and `limits` are the map stage's (what tests replace with a scripted model, for every stage);
`models` gives each stage of a job its own client and limits (`stage_llm`, `stage_limits`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extraction.protocols import LLM
from extraction.strategies.mapreduce import ModelLimits
from infra.blobstore import BlobStore
from infra.llm.catalog import ModelCatalog, pacer_for
from infra.llm.info import model_limits_for
from infra.query.loaded_forms import LoadedForms, MemoryLoadedForms
from infra.settings import Settings
from infra.stores.bundle import Stores
from infra.stores.jobs import JobRecord, JobStore
from infra.stores.records import RecordStore


@dataclass
class Runtime:
    """The steps' dependencies; tests build one with in-memory stores and a scripted model."""

    settings: Settings
    jobs: JobStore
    records: RecordStore
    blobs: BlobStore
    llm: LLM
    limits: ModelLimits | None = None
    """The map stage's; None until `map_limits` looks them up (litellm's model map: seconds to import, which a
    worker then pays in its warm-up or first job, not before it answers pings)."""
    models: ModelCatalog | None = None
    """None when the runtime was given one model for everything (tests, `toolout.local` with an `llm`)."""
    loaded: LoadedForms = field(default_factory=MemoryLoadedForms)
    """Who loads which output as tables now, where it was kept (`infra.query.loaded_forms`); shared via Redis."""
    _warm: bool = field(default=False, repr=False)

    def llm_ready(self) -> None:
        """Touch the model client so its heavy import happens now, not in the first task."""
        warm = getattr(self.llm, "warm_up", None)
        if callable(warm) and not self._warm:
            warm()
            self._warm = True

    def map_limits(self) -> ModelLimits:
        """The map stage's limits: the ones given, else the map model's, looked up once."""
        if self.limits is None:
            self.limits = model_limits_for(self.settings, self.settings.stage_model("map"))
        return self.limits


def build_runtime(
    settings: Settings, stores: Stores, llm: LLM | None = None, *, limits: ModelLimits | None = None
) -> Runtime:
    """The runtime over `stores`: each stage's litellm client and limits as `settings` describe, unless
    one `llm` (and `limits`) is given for every stage."""
    map_model = settings.stage_model("map")
    models = None
    if llm is None:
        models = ModelCatalog(settings, pacer_for(settings, stores.limiter))
        llm = models.llm("map", map_model)
    return Runtime(
        settings=settings,
        jobs=stores.jobs,
        records=stores.records,
        blobs=stores.blobs,
        llm=llm,
        limits=limits,
        models=models,
        loaded=stores.loaded,
    )


def job_model(rt: Runtime, job: JobRecord, stage: str) -> str:
    """The model `stage` of `job` calls first: as recorded when the job was created, else the stage's own."""
    return job.stage_models.get(stage) or rt.settings.stage_model(stage)


def stage_llm(rt: Runtime, job: JobRecord, stage: str) -> LLM:
    return rt.llm if rt.models is None else rt.models.llm(stage, job_model(rt, job, stage))


def stage_limits(rt: Runtime, job: JobRecord, stage: str) -> ModelLimits:
    """The stage's limits; a runtime given one model (or limits) uses them for every stage."""
    if rt.models is None or (stage == "map" and job_model(rt, job, stage) == rt.settings.stage_model("map")):
        return rt.map_limits()
    return rt.models.limits(job_model(rt, job, stage))
