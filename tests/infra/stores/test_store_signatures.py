"""Every store implementation takes exactly its protocol's parameters: same names, kinds and defaults.

mypy does not catch a renamed parameter (a Protocol subclass may rename freely, and a structural match
only checks positions), and the contract suites call methods positionally, so a store that renamed
`text` to `text_` raised `TypeError` on Redis for a keyword call that worked on the in-memory twin.
This compares signatures directly, for every method of every store family, so no rename can come back.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import infra.stores
from extraction.protocols import BlobReader
from infra.blobstore import BlobStore, LocalBlobStore, MemoryBlobStore, S3BlobStore
from infra.stores.apikeys import ApiKeyStore, MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.idempotency import IdempotencyStore, MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobAccounting, JobFanIn, JobRecords, JobTasks, JobTraces, JobWatch
from infra.stores.jobs.accounting.memory import MemoryJobAccounting
from infra.stores.jobs.accounting.redis import RedisJobAccounting
from infra.stores.jobs.fanin.memory import MemoryJobFanIn
from infra.stores.jobs.fanin.redis import RedisJobFanIn
from infra.stores.jobs.records.memory import MemoryJobRecords
from infra.stores.jobs.records.redis import RedisJobRecords
from infra.stores.jobs.tasks.memory import MemoryJobTasks
from infra.stores.jobs.tasks.redis import RedisJobTasks
from infra.stores.jobs.traces.memory import MemoryJobTraces
from infra.stores.jobs.traces.redis import RedisJobTraces
from infra.stores.jobs.watch.memory import MemoryJobWatch
from infra.stores.jobs.watch.redis import RedisJobWatch
from infra.stores.records import RecordNames, RecordOutputs, RecordPlans, RecordRetention, RecordSessions
from infra.stores.records.names.memory import MemoryRecordNames
from infra.stores.records.names.redis import RedisRecordNames
from infra.stores.records.outputs.memory import MemoryRecordOutputs
from infra.stores.records.outputs.redis import RedisRecordOutputs
from infra.stores.records.plans.memory import MemoryRecordPlans
from infra.stores.records.plans.redis import RedisRecordPlans
from infra.stores.records.retention.memory import MemoryRecordRetention
from infra.stores.records.retention.redis import RedisRecordRetention
from infra.stores.records.sessions.memory import MemoryRecordSessions
from infra.stores.records.sessions.redis import RedisRecordSessions
from infra.stores.resultcache import MemoryResultCache, RedisResultCache, ResultCache

FAMILIES: dict[type, list[type]] = {
    JobRecords: [RedisJobRecords, MemoryJobRecords],
    JobFanIn: [RedisJobFanIn, MemoryJobFanIn],
    JobAccounting: [RedisJobAccounting, MemoryJobAccounting],
    JobTraces: [RedisJobTraces, MemoryJobTraces],
    JobWatch: [RedisJobWatch, MemoryJobWatch],
    JobTasks: [RedisJobTasks, MemoryJobTasks],
    RecordSessions: [RedisRecordSessions, MemoryRecordSessions],
    RecordOutputs: [RedisRecordOutputs, MemoryRecordOutputs],
    RecordNames: [RedisRecordNames, MemoryRecordNames],
    RecordPlans: [RedisRecordPlans, MemoryRecordPlans],
    RecordRetention: [RedisRecordRetention, MemoryRecordRetention],
    ApiKeyStore: [RedisApiKeyStore, MemoryApiKeyStore],
    IdempotencyStore: [RedisIdempotencyStore, MemoryIdempotencyStore],
    ResultCache: [RedisResultCache, MemoryResultCache],
    BlobStore: [LocalBlobStore, MemoryBlobStore, S3BlobStore],
}

PAIRS = [pytest.param(proto, impl, id=impl.__name__) for proto, impls in FAMILIES.items() for impl in impls]

Shape = list[tuple[str, Any, Any]]


def protocol_methods(proto: type) -> list[str]:
    """Public methods the protocol (and the protocols it extends) declares."""
    names: set[str] = set()
    for base in proto.__mro__:
        if base is object or not getattr(base, "_is_protocol", False) or base.__module__ == "typing":
            continue
        names |= {n for n, v in vars(base).items() if not n.startswith("_") and inspect.isfunction(v)}
    return sorted(names)


def shape(function: Any) -> Shape:
    """(name, kind, default) of each parameter: what a caller can rely on, annotations aside."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def spelled(function: Any) -> str:
    """A signature without annotations, as a reader compares two: `(self, job_id, *, limit=100)`."""
    if function is None:
        return " missing"
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in inspect.signature(function).parameters.values()]
    return str(inspect.Signature(plain))


@pytest.mark.parametrize(("proto", "impl"), PAIRS)
def test_every_protocol_method_has_the_protocols_signature(proto: type, impl: type) -> None:
    wrong = [
        f"{name}{spelled(getattr(impl, name, None))}, protocol {name}{spelled(getattr(proto, name))}"
        for name in protocol_methods(proto)
        if getattr(impl, name, None) is None or shape(getattr(impl, name)) != shape(getattr(proto, name))
    ]
    assert not wrong, f"{impl.__name__} does not take {proto.__name__}'s parameters: " + "; ".join(wrong)


@pytest.mark.parametrize("proto", list(FAMILIES), ids=lambda p: p.__name__)
def test_every_implementation_of_a_store_protocol_is_checked(proto: type) -> None:
    """A new store that subclasses its protocol joins FAMILIES (blob stores match structurally: listed by hand)."""
    assert set(_subclasses(proto)) <= set(FAMILIES[proto])
    assert protocol_methods(proto), proto


JOB_STORE_PARTS = [JobRecords, JobFanIn, JobAccounting, JobTraces, JobWatch, JobTasks]
RECORD_STORE_PARTS = [RecordSessions, RecordOutputs, RecordNames, RecordPlans, RecordRetention]
MAX_PROTOCOL_METHODS = 15
"""A store protocol past this many methods mixes concerns again: split it, as the job and record stores were."""


def store_protocols() -> list[type]:
    """Every Protocol class defined in a module of `infra.stores`, found by walking the package (a new store's
    protocol is counted without being listed here)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(infra.stores.__path__, "infra.stores."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and getattr(value, "_is_protocol", False) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


def test_every_store_protocol_is_found_and_checked() -> None:
    """The walk finds the protocols the signature check covers, so the cap below cannot pass over an empty list."""
    assert set(store_protocols()) == set(FAMILIES) - {BlobStore}


@pytest.mark.parametrize("proto", store_protocols(), ids=lambda p: p.__name__)
def test_each_store_protocol_keeps_to_one_concern(proto: type) -> None:
    assert len(protocol_methods(proto)) <= MAX_PROTOCOL_METHODS, protocol_methods(proto)


@pytest.mark.parametrize("parts", [JOB_STORE_PARTS, RECORD_STORE_PARTS], ids=["jobs", "records"])
def test_no_method_is_declared_by_two_parts_of_one_store(parts: list[type]) -> None:
    """Each method has one owner, so no part re-exposes another's (a facade would be the god protocol again)."""
    declared = [name for proto in parts for name in protocol_methods(proto)]
    assert len(declared) == len(set(declared))


def test_blob_readers_signature_is_the_blob_stores() -> None:
    """`BlobStore` narrows `BlobReader.iter_range`'s default; the other reader methods are the same."""
    assert protocol_methods(BlobReader) == ["iter_range", "read_range", "size"]
    assert shape(BlobStore.size) == shape(BlobReader.size)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
