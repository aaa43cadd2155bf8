"""JSON objects real APIs return: objects keyed by id become tables with a key column; arrays of arrays
get an index or are summarised, never exploded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extraction.documents.structured import StructuredKind
from infra.blobstore.memory import MemoryBlobStore
from infra.query import EngineLimits, open_tables
from infra.query.loading import load_tables
from infra.query.tools import QueryToolbox
from tests.infra.query.catalog import FIRST_EVENT, catalog_bytes, ticket_catalog
from tests.infra.query.conftest import stored
from tests.infra.query.test_loading import loaded, rows

LIMITS = EngineLimits(memory_limit_mb=256, threads=1)
CANADA = Path("/work/shared/corpus/canada.json")


def test_the_catalog_through_the_toolbox_finds_by_key_and_counts(tmp_path: Path) -> None:
    blobs = MemoryBlobStore()
    catalog = ticket_catalog()
    opened = open_tables(blobs, stored(blobs, catalog_bytes()), StructuredKind.JSON, LIMITS, temp_root=str(tmp_path))
    try:
        box = QueryToolbox(opened, lambda n, a: "", max_rows=50, max_tokens=4000)
        schema = box.schema()
        assert f"- events: one row per key of $.events ({len(catalog['events'])} keys)" in schema, schema
        assert f"performances: one row per key of $.performances ({len(catalog['performances'])} keys)" in schema
        assert f"TABLE events ({len(catalog['events'])} rows)" in schema and "  key VARCHAR" in schema
        blank = sum(1 for e in catalog["events"].values() if e["description"] is None)
        assert f"description VARCHAR ({blank} NULL)" in schema, schema
        found = box.query(f"SELECT name FROM events WHERE key = '{FIRST_EVENT}'")
        assert catalog["events"][str(FIRST_EVENT)]["name"] in found
        assert str(len(catalog["performances"])) in box.query("SELECT count(*) AS n FROM performances")
    finally:
        opened.close()


def test_keyed_values_that_differ_in_shape_share_one_table(tmp_path: Path) -> None:
    doc = {"users": {"u-1": {"name": "ann", "age": 3}, "u-2": {"name": "bob", "nick": "b"}, "u-3": {"name": "cy"}}}
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert box.names == {"users"}
    got = rows(box, "SELECT key, name, age, nick FROM users ORDER BY key")
    assert got == [("u-1", "ann", 3, None), ("u-2", "bob", None, "b"), ("u-3", "cy", None, None)]


def test_the_key_column_takes_a_free_name_when_values_hold_key(tmp_path: Path) -> None:
    doc = {"data": {"items": {"17": {"key": "a", "v": 1}, "18": {"key": "b", "v": 2}}}, "page": 1}
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert box.names == {"data.items", "root"}
    assert rows(box, 'SELECT _key, key, v FROM "data.items" ORDER BY v') == [("17", "a", 1), ("18", "b", 2)]


def test_many_same_shaped_keys_duckdb_reads_as_a_map_are_a_table_too(tmp_path: Path) -> None:
    doc = {"byName": {f"name{i:04d}x": {"score": i} for i in range(300)}, "total": 300}
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert rows(box, "SELECT count(*), sum(score) FROM byName") == [(300, sum(range(300)))]
    assert rows(box, "SELECT total FROM root") == [(300,)]


@pytest.mark.parametrize(
    "doc",
    [
        {"order": {"billing": {"city": "Oslo"}, "shipping": {"city": "Oslo"}}, "items": [1]},
        {"labels": {"1": "a", "2": "b"}, "items": [1]},
    ],
)
def test_records_and_objects_of_scalars_are_not_keyed_tables(tmp_path: Path, doc: dict) -> None:
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert box.names == {"items", "root"}


def test_an_array_of_arrays_is_a_table_with_an_index(tmp_path: Path) -> None:
    doc = {"matrix": [[1, 2], [3], [4, 5, 6]]}
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert rows(box, 'SELECT "index", len(value) FROM matrix ORDER BY "index"') == [(1, 2), (2, 1), (3, 3)]


def test_canada_geojson_loads_and_its_coordinates_are_summarised_not_exploded(tmp_path: Path) -> None:
    doc = json.loads(CANADA.read_text())
    rings = [ring for f in doc["features"] for ring in f["geometry"]["coordinates"]]
    points = [p for ring in rings for p in ring]
    tables = load_tables(CANADA, StructuredKind.JSON, tmp_path / "out", LIMITS)
    features = next(t for t in tables if t.name == "features")
    assert features.rows == len(doc["features"])
    sizes = f"{len(rings):,} → {len(points):,} → {sum(len(p) for p in points):,} elements by depth"
    assert "geometry.coordinates holds arrays nested 3 deep" in features.note and sizes in features.note
    box = loaded(tmp_path / "q", CANADA.read_text(), StructuredKind.JSON)
    sql = "SELECT count(*) FROM (SELECT unnest(geometry.coordinates, recursive := true) FROM features)"
    assert rows(box, sql) == [(sum(len(p) for p in points),)]


def test_the_key_column_falls_back_to_a_numbered_name_and_an_empty_object_is_no_table(tmp_path: Path) -> None:
    values = {"key": 1, "_key": 2, "key_": 3}
    doc = {"t": {"7": values, "8": values}, "empty": {}, "list": [1]}
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert box.names == {"t", "list", "root"}
    assert rows(box, "SELECT key_3, key, _key, key_ FROM t ORDER BY key_3") == [("7", 1, 2, 3), ("8", 1, 2, 3)]
