"""Opening an output: a document that breaks loading falls back (`LoadFailed`), frees its lock, keeps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extraction.documents.structured import StructuredKind
from infra.blobstore.memory import MemoryBlobStore
from infra.query import EngineLimits, LoadFailed, open_tables, preload_tables, query_prefix
from infra.query import store as store_module
from infra.query.loaded_forms import MemoryLoadedForms
from infra.query.tools import QueryToolbox
from tests.infra.query.conftest import stored

LIMITS = EngineLimits(memory_limit_mb=256, threads=1)
COLLIDING = [
    {"root": [{"id": 1}, {"id": 2}], "total": 5},
    {"a.b": [1, 2], "a": {"b": [3]}},
    {"Items": [1], "items": [2]},
]


@pytest.mark.parametrize("doc", COLLIDING)
def test_colliding_names_load_as_unique_tables_and_the_schema_says_so(tmp_path: Path, doc: dict) -> None:
    blobs = MemoryBlobStore()
    record = stored(blobs, json.dumps(doc).encode())
    forms = MemoryLoadedForms()
    assert preload_tables(blobs, record, StructuredKind.JSON, LIMITS, forms, temp_root=str(tmp_path)) == "loaded"
    opened = open_tables(blobs, record, StructuredKind.JSON, LIMITS, temp_root=str(tmp_path), forms=forms)
    try:
        names = opened.table_names()
        assert len({n.lower() for n in names}) == len(names) and opened.how == "reused"
        schema = QueryToolbox(opened, lambda n, a: "", 10, 3000).schema()
        assert schema.startswith("NOTES\n") and ("_2" in schema or "_1" in schema), schema
        for name in names:
            assert opened.query(f'SELECT count(*) FROM "{name}"', 5).rows[0][0] >= 1
    finally:
        opened.close()


def test_a_sandbox_that_does_not_open_is_load_failed_and_frees_the_lock(tmp_path: Path, monkeypatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Catalog Error: View with name already exists")

    monkeypatch.setattr(store_module, "ChildSandbox", broken)
    blobs, forms = MemoryBlobStore(), MemoryLoadedForms()
    record = stored(blobs, b'[{"id": 1}]')
    with pytest.raises(LoadFailed):
        open_tables(blobs, record, StructuredKind.JSON, LIMITS, temp_root=str(tmp_path), forms=forms)
    lease = forms.try_hold(record.tenant, record.stats.sha256)
    assert lease is not None, "the load lock was left held: the next question would wait for it"
    lease.release()
    assert list(tmp_path.iterdir()) == []


def test_a_preload_whose_tables_do_not_open_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    """The load's child checks that its tables open (`infra.query.child`) and answers LoadFailed when not."""

    def unopenable(*args: object, **kwargs: object) -> None:
        raise LoadFailed("the load stopped: it failed (CatalogException)")

    monkeypatch.setattr(store_module, "load_in_child", unopenable)
    blobs, forms = MemoryBlobStore(), MemoryLoadedForms()
    record = stored(blobs, b'[{"id": 1}]')
    with pytest.raises(LoadFailed):
        preload_tables(blobs, record, StructuredKind.JSON, LIMITS, forms, temp_root=str(tmp_path))
    assert not blobs.exists(query_prefix(record) + "manifest.json"), "a broken loaded form was kept"
    assert forms.try_hold(record.tenant, record.stats.sha256) is not None, "the load lock was left held"
    assert list(tmp_path.iterdir()) == []


def test_a_load_that_raises_anything_is_load_failed_and_frees_the_lock(tmp_path: Path, monkeypatch) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(store_module, "load_in_child", explode)
    blobs, forms = MemoryBlobStore(), MemoryLoadedForms()
    record = stored(blobs, b'[{"id": 1}]')
    with pytest.raises((LoadFailed, MemoryError)):
        open_tables(blobs, record, StructuredKind.JSON, LIMITS, temp_root=str(tmp_path), forms=forms)
    lease = forms.try_hold(record.tenant, record.stats.sha256)
    assert lease is not None
    lease.release()
