"""The loaded-form pointer on both twins: forgotten only by the output it points at, and by a reader that finds
its tables gone (then the content loads again instead of being read from a deleted path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extraction.documents.structured import StructuredKind
from infra.blobstore.memory import MemoryBlobStore
from infra.query import EngineLimits, preload_tables, query_prefix
from infra.query.loaded_forms import LoadedForms, MemoryLoadedForms, RedisLoadedForms
from tests.infra.query.conftest import stored

LIMITS = EngineLimits(memory_limit_mb=256, threads=1)
GONE = "sessions/deleted/output.duckdb/"


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])])
def forms(request: pytest.FixtureRequest) -> Iterator[LoadedForms]:
    if request.param == "memory":
        yield MemoryLoadedForms()
        return
    client = request.getfixturevalue("redis_client")
    yield RedisLoadedForms(client, kept_ttl_seconds=60)


def test_only_the_output_pointed_at_forgets_the_pointer(forms: LoadedForms) -> None:
    forms.remember("acme", "sha", "sessions/a/one.duckdb/")
    forms.forget("acme", "sha", "sessions/b/two.duckdb/")  # another output of the same content goes
    assert forms.kept_at("acme", "sha") == "sessions/a/one.duckdb/"
    forms.forget("other-tenant", "sha", "sessions/a/one.duckdb/")
    assert forms.kept_at("acme", "sha") == "sessions/a/one.duckdb/"
    forms.forget("acme", "sha", "sessions/a/one.duckdb/")
    assert forms.kept_at("acme", "sha") is None
    forms.forget("acme", "sha", "sessions/a/one.duckdb/")  # twice: nothing to drop, no error
    assert forms.kept_at("acme", "sha") is None


def test_a_pointer_whose_tables_are_gone_is_forgotten_and_the_content_loads(forms: LoadedForms, tmp_path: Path) -> None:
    blobs = MemoryBlobStore()
    record = stored(blobs, b'[{"id": 1}, {"id": 2}]')
    forms.remember(record.tenant, record.stats.sha256, GONE)
    seen: list[str] = []
    forget = forms.forget

    def spy(tenant: str, sha256: str, prefix: str, _forget: Any = forget) -> None:
        seen.append(prefix)
        _forget(tenant, sha256, prefix)

    forms.forget = spy  # type: ignore[method-assign]
    assert preload_tables(blobs, record, StructuredKind.JSON, LIMITS, forms, temp_root=str(tmp_path)) == "loaded"
    assert seen == [GONE]
    assert forms.kept_at(record.tenant, record.stats.sha256) == query_prefix(record)
    lease = forms.try_hold(record.tenant, record.stats.sha256)
    assert lease is not None, "the load lock was left behind"  # checked by its key: other tests share the db
    lease.release()
