"""CSV as people export it: NA and its kin are NULL, so numbers stay numbers; `-` only where it must be."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from extraction.documents.structured import StructuredKind
from infra.blobstore.memory import MemoryBlobStore
from infra.query import EngineLimits, open_tables
from infra.query.tools import QueryToolbox
from tests.infra.query.conftest import stored
from tests.infra.query.test_loading import loaded, rows

LIMITS = EngineLimits(memory_limit_mb=256, threads=1)
WEATHER = Path("/work/shared/corpus/weather.csv")


def _column(name: str) -> list[str]:
    with WEATHER.open(newline="") as f:
        return [row[name] for row in csv.DictReader(f)]


@pytest.mark.parametrize("column", ["temp", "pressure", "wind_gust"])
def test_weather_averages_match_the_file_and_the_columns_are_numbers(tmp_path: Path, column: str) -> None:
    values = _column(column)
    present = [float(v) for v in values if v != "NA"]
    blobs = MemoryBlobStore()
    opened = open_tables(
        blobs, stored(blobs, WEATHER.read_bytes()), StructuredKind.CSV, LIMITS, temp_root=str(tmp_path)
    )
    try:
        assert dict(opened.columns("records"))[column] == "DOUBLE"
        got = opened.query(f"SELECT avg({column}), count(*) - count({column}) FROM records", 5).rows
        assert got[0][0] == pytest.approx(sum(present) / len(present), rel=1e-12)
        assert got[0][1] == len(values) - len(present)
        schema = QueryToolbox(opened, lambda n, a: "", 10, 4000).schema()
        assert f"  {column} DOUBLE ({len(values) - len(present):,} NULL)" in schema, schema
        assert "NA, N/A, n/a, NULL, null and empty fields are NULL" in schema
    finally:
        opened.close()


def test_every_marker_is_null(tmp_path: Path) -> None:
    content = "id,amount,day\n1,NA,2024-01-02\n2,N/A,NULL\n3,null,\n4,n/a,2024-01-05\n5,7.5,NA\n"
    box = loaded(tmp_path, content, StructuredKind.CSV)
    assert box.columns("records") == [("id", "BIGINT"), ("amount", "DOUBLE"), ("day", "DATE")]
    assert rows(box, "SELECT count(amount), sum(amount), count(day) FROM records") == [(1, 7.5, 2)]


def test_a_dash_is_null_only_where_every_other_value_is_a_number_or_a_date(tmp_path: Path) -> None:
    content = "id,score,when,middle\n1,-,2024-01-02,-\n2,12,-,Ann\n3,-,2024-03-04,-\n4,30,2024-05-06,Bo\n"
    box = loaded(tmp_path, content, StructuredKind.CSV)
    types = dict(box.columns("records"))
    assert (types["score"], types["when"], types["middle"]) == ("BIGINT", "DATE", "VARCHAR")
    assert rows(box, 'SELECT sum(score), count(score), count("when") FROM records') == [(42, 2, 3)]
    assert rows(box, "SELECT count(*) FROM records WHERE middle = '-'") == [(2,)]


def test_a_column_of_dashes_alone_stays_text(tmp_path: Path) -> None:
    box = loaded(tmp_path, "id,sep\n1,-\n2,-\n", StructuredKind.CSV)
    assert rows(box, "SELECT count(*) FROM records WHERE sep = '-'") == [(2,)]
