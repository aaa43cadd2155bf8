"""Loading: each structured form becomes tables with nested objects as STRUCT and arrays as LIST."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from extraction.documents.structured import StructuredKind
from infra.query import EngineLimits, LoadFailed, Sandbox, TableFile
from infra.query.loading import SAMPLE_ROWS, NotSampled, load_tables
from infra.query.process import load_in_child

LIMITS = EngineLimits(memory_limit_mb=256, threads=1)


def loaded(tmp_path: Path, content: str, kind: StructuredKind) -> Sandbox:
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "content"
    source.write_text(content)
    tables = load_tables(source, kind, tmp_path / "out", LIMITS)
    return Sandbox([TableFile(t.name, tmp_path / "out" / t.file, t.rows) for t in tables], LIMITS, tmp_path / "spill")


def rows(box: Sandbox, sql: str) -> list[tuple]:
    return box.query(sql, 100).rows


def test_an_object_gives_a_table_per_array_path_and_a_root(tmp_path: Path) -> None:
    doc = {
        "total": 2,
        "items": [
            {"id": 1, "customer": {"city": "Tallinn"}, "tags": ["a", "b"]},
            {"id": 2, "customer": {"city": "Oslo"}, "tags": []},
        ],
        "data": {"results": [10, 20, 30], "meta": {"page": 1}},
    }
    box = loaded(tmp_path, json.dumps(doc), StructuredKind.JSON)
    assert box.names == {"items", "data.results", "root"}
    assert rows(box, "SELECT id, customer.city FROM items ORDER BY id") == [(1, "Tallinn"), (2, "Oslo")]
    assert rows(box, "SELECT count(*) FROM (SELECT unnest(tags) FROM items)") == [(2,)]
    assert rows(box, 'SELECT sum(value) FROM "data.results"') == [(60,)]
    assert rows(box, "SELECT total, data.meta.page FROM root") == [(2, 1)]


def test_a_key_seen_once_deep_in_an_array_is_a_column(tmp_path: Path) -> None:
    records = [{"id": i} for i in range(30_000)]
    records[25_000]["failure_reason"] = "card declined"
    box = loaded(tmp_path, json.dumps(records), StructuredKind.JSON)
    assert rows(box, "SELECT id FROM records WHERE failure_reason IS NOT NULL") == [(25_000,)]


def test_ndjson_csv_and_tsv(tmp_path: Path) -> None:
    nd = loaded(tmp_path / "nd", '{"a": 1, "b": {"c": "x"}}\n{"a": 2, "b": {"c": "y"}}\n', StructuredKind.NDJSON)
    assert rows(nd, "SELECT sum(a), max(b.c) FROM records") == [(3, "y")]
    csv = loaded(tmp_path / "csv", "id,name,total\n1,ann,10\n2,bob,20\n", StructuredKind.CSV)
    assert rows(csv, "SELECT sum(total) FROM records WHERE name ILIKE 'B%'") == [(20,)]
    tsv = loaded(tmp_path / "tsv", "id\tname\n1\tann, jr\n", StructuredKind.TSV)
    assert rows(tsv, "SELECT name FROM records") == [("ann, jr",)]


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("[INFO] not json at all\n", StructuredKind.JSON),
        ('{"a": 1}', StructuredKind.JSON),
        ("{oops\n{x\n", StructuredKind.NDJSON),
    ],
)
def test_what_does_not_load_is_load_failed(tmp_path: Path, content: str, kind: StructuredKind) -> None:
    source = tmp_path / "content"
    source.write_text(content)
    with pytest.raises(LoadFailed) as caught:
        load_tables(source, kind, tmp_path, LIMITS)
    assert str(tmp_path) not in caught.value.message, "the job's reason shows no worker path"


@pytest.mark.parametrize(
    ("content", "names"),
    [
        ('{"root": [1, 2], "total": 5}', {"root", "root_2"}),
        ('{"a.b": [1], "a": {"b": [2]}}', {"a.b", "a.b_2", "root"}),
        ('{"Items": [1], "items": [2]}', {"Items", "items_1"}),
        ('{"root": {"x": [1]}, "root.x": [2], "n": 1}', {"root.x", "root.x_2", "root"}),
    ],
)
def test_names_are_unique_ignoring_case_and_say_where_they_come_from(
    tmp_path: Path, content: str, names: set[str]
) -> None:
    source = tmp_path / "content"
    source.write_text(content)
    tables = load_tables(source, StructuredKind.JSON, tmp_path / "out", LIMITS)
    assert {t.name for t in tables} == names
    assert all(t.note for t in tables if t.name[-2:] in ("_1", "_2")), tables
    assert all("." not in t.name or t.note or t.name == "root.x" for t in tables), tables


def test_valid_json_loads_however_much_whitespace_comes_first(tmp_path: Path) -> None:
    box = loaded(tmp_path, " \n" * 5000 + '[{"id": 1}, {"id": 2}]', StructuredKind.JSON)
    assert rows(box, "SELECT sum(id) FROM records") == [(3,)]


def test_a_repeated_key_keeps_its_last_value_as_json_readers_do(tmp_path: Path) -> None:
    box = loaded(tmp_path / "a", '[{"id": 1, "id": 2, "v": "x"}]', StructuredKind.JSON)
    assert rows(box, "SELECT id, v FROM records") == [(2, "x")]
    obj = loaded(tmp_path / "b", '{"x": [1], "x": [2, 3]}', StructuredKind.JSON)
    assert rows(obj, "SELECT sum(value) FROM x") == [(5,)]
    nd = loaded(tmp_path / "c", '{"a": 1, "a": 4}\n{"a": 2}\n', StructuredKind.NDJSON)
    assert rows(nd, "SELECT sum(a) FROM records") == [(6,)]


def test_keys_differing_only_in_case_are_columns_and_the_rename_is_said(tmp_path: Path) -> None:
    source = tmp_path / "content"
    source.write_text('{"items": [{"k": {"q": 1, "Q": 2}, "name": "a", "Name": "b"}]}')
    tables = load_tables(source, StructuredKind.JSON, tmp_path / "out", LIMITS)
    assert "'Q' is the column 'Q_1'" in tables[0].note and "'Name' is the column 'Name_1'" in tables[0].note


def test_a_load_past_its_time_limit_is_load_failed(tmp_path: Path) -> None:
    source = tmp_path / "content"
    source.write_text("\n".join(json.dumps({"id": i, "s": "x" * 50}) for i in range(300_000)))
    slow = EngineLimits(memory_limit_mb=256, threads=1, load_timeout_seconds=0.05)
    with pytest.raises(LoadFailed, match=r"longer than 0\.05 s"):
        load_tables(source, StructuredKind.NDJSON, tmp_path / "out", slow)


SAMPLE_MISSES = {
    "a key after the sample": [{"a": 1}] * SAMPLE_ROWS + [{"a": 2, "late": "x"}],
    "a type after the sample": [{"a": 1}] * SAMPLE_ROWS + [{"a": "two"}],
    "NULL in every sampled row": [{"a": None}] * SAMPLE_ROWS + [{"a": 3}],
    "an empty array in every sampled row": [{"a": []}] * SAMPLE_ROWS + [{"a": [1]}],
}


@pytest.mark.parametrize("case", SAMPLE_MISSES)
@pytest.mark.parametrize("kind", [StructuredKind.NDJSON, StructuredKind.JSON])
def test_a_sample_that_does_not_hold_is_loaded_again_with_every_row(
    tmp_path: Path, case: str, kind: StructuredKind
) -> None:
    records = SAMPLE_MISSES[case]
    source = tmp_path / "content"
    source.write_text(
        "".join(json.dumps(r) + "\n" for r in records) if kind is StructuredKind.NDJSON else json.dumps(records)
    )
    with pytest.raises(NotSampled):
        load_tables(source, kind, tmp_path / "sampled", LIMITS, sampled=True)
    tables = load_in_child(source, kind, tmp_path / "out", LIMITS)
    box = Sandbox([TableFile(t.name, tmp_path / "out" / t.file, t.rows) for t in tables], LIMITS, tmp_path / "spill")
    assert rows(box, "SELECT count(*) FROM records") == [(len(records),)]
    last = rows(box, "SELECT * FROM records LIMIT 1 OFFSET " + str(len(records) - 1))[0]
    assert None not in last and last[-1] not in ("", [])


def test_a_sample_that_holds_loads_what_every_row_would(tmp_path: Path) -> None:
    records = [{"id": i, "user": {"name": f"u{i}", "tags": ["a"] * (i % 3)}, "ms": i / 7} for i in range(30_000)]
    source = tmp_path / "content"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    sampled = load_tables(source, StructuredKind.NDJSON, tmp_path / "sampled", LIMITS, sampled=True)
    every = load_tables(source, StructuredKind.NDJSON, tmp_path / "every", LIMITS)
    assert [(t.name, t.rows, t.note, t.nulls) for t in sampled] == [(t.name, t.rows, t.note, t.nulls) for t in every]
    one, other = (
        duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / d / 't0.parquet'}')") for d in ("sampled", "every")
    )
    assert [str(t) for t in one.dtypes] == [str(t) for t in other.dtypes]
    assert one.except_(other).fetchall() == [] and other.except_(one).fetchall() == []
