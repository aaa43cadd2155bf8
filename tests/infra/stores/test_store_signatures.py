"""Every store implementation takes exactly its protocol's parameters: same names, kinds and defaults.

mypy does not catch a renamed parameter (a Protocol subclass may rename freely, and a structural match
only checks positions), and the contract suites call methods positionally, so a store that renamed
`text` to `text_` raised `TypeError` on Redis for a keyword call that worked on the in-memory twin.
This compares signatures directly, for every method of every store family, so no rename can come back.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from extraction.protocols import BlobReader
from infra.blobstore import BlobStore, LocalBlobStore, MemoryBlobStore, S3BlobStore
from infra.stores.apikeys import ApiKeyStore, MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.idempotency import IdempotencyStore, MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobStore, MemoryJobStore, RedisJobStore
from infra.stores.records import MemoryRecordStore, RecordStore, RedisRecordStore
from infra.stores.resultcache import MemoryResultCache, RedisResultCache, ResultCache

FAMILIES: dict[type, list[type]] = {
    JobStore: [RedisJobStore, MemoryJobStore],
    RecordStore: [RedisRecordStore, MemoryRecordStore],
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


def test_blob_readers_signature_is_the_blob_stores() -> None:
    """`BlobStore` narrows `BlobReader.iter_range`'s default; the other reader methods are the same."""
    assert protocol_methods(BlobReader) == ["iter_range", "read_range", "size"]
    assert shape(BlobStore.size) == shape(BlobReader.size)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
