"""HashCodec: a list of scalars is a JSON field, not text (the query strategy's `queries` on a job)."""

from __future__ import annotations

from infra.redis.hash_codec import HashCodec
from infra.stores.jobs import JobRecord


def test_lists_of_strings_round_trip_as_json() -> None:
    codec = HashCodec(JobRecord, flatten=("usage",))
    job = JobRecord(id="j", session_id="s", handle="h", extract="x", query_tables=["records (3 rows)"], queries=[])
    fields = codec.encode(job)
    assert fields["query_tables"] == '["records (3 rows)"]' and fields["queries"] == "[]"
    assert codec.decode(fields).query_tables == ["records (3 rows)"]
    assert codec.fields(queries=["SELECT 1"]) == {"queries": '["SELECT 1"]'}
