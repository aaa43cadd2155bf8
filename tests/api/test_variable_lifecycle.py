"""Versions, the small-output fast path and cleanup, over real HTTP, real Redis and both blob stores.

* A version an alias left (append, replace) stays readable while a job extracts from it, and is swept
  after the grace period once no live job reads it.
* A small output lives in its record (no blob round trip) and reads like any other.
* Deleting a session, or leaving it idle, removes its names, paths, counters, versions and blobs.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from api.lifecycle import sweep_idle_sessions, sweep_retired_versions
from infra.redis import keys
from tests.api.session_client import content, new_session, stored, upload, variables
from tests.fixtures.api_server import ApiServer, assert_error

LOG = "".join(f"line {i}: INFO ok\n" for i in range(3000)) + "line 3000: ERROR disk full\n"


def test_a_job_on_a_replaced_version_keeps_it_until_the_job_ends(start_server) -> None:
    server: ApiServer = start_server(inline_output_max_bytes=0, retired_version_grace_seconds=0)
    services = server.services
    with server.client() as client:
        session = new_session(client)
        old = stored(upload(client, session, LOG, tool="logs", output="variable:log"))
        job = client.post("/v1/extractions", json={"handle": old["handle"], "extract": "the ERROR line"}).json()
        new = stored(upload(client, session, "line 3001: INFO recovered\n", tool="logs", output="variable:log"))
        assert variables(client, session)["log"]["handle"] == new["handle"]
        assert sweep_retired_versions(services, now=time.time() + 1) == 0  # the queued job still reads it
        assert content(client, old["handle"]) == LOG.encode()
        old_record = services.records.outputs.get_output(old["handle"])
        assert client.post(f"/v1/extractions/{job['id']}/cancel").json()["status"] == "canceled"
        assert sweep_retired_versions(services, now=time.time() + 1) == 1
        assert_error(client.get(f"/v1/outputs/{old['handle']}"), 404)
        assert not services.blobs.exists(old_record.blob_key)
        assert content(client, new["handle"]) == (LOG + "line 3001: INFO recovered\n").encode()


def test_a_replaced_version_is_swept_only_after_the_grace_period(start_server) -> None:
    server: ApiServer = start_server(retired_version_grace_seconds=300)
    with server.client() as client:
        session = new_session(client)
        old = stored(upload(client, session, "v1", name="x"))
        stored(upload(client, session, "v2", name="x"))
        assert sweep_retired_versions(server.services, now=time.time()) == 0
        assert content(client, old["handle"]) == b"v1"
        assert sweep_retired_versions(server.services, now=time.time() + 301) == 1
        assert_error(client.get(f"/v1/outputs/{old['handle']}/content"), 404)
        assert set(variables(client, session)) == {"x"}


def test_a_small_output_lives_in_its_record_and_reads_like_any_other(store_server: ApiServer) -> None:
    body = b'{"temperature": 72, "conditions": "sunny"}\nsecond line ERROR\n'
    with store_server.client() as client:
        session = new_session(client)
        meta = stored(upload(client, session, body, tool="weather"))
        record = store_server.services.records.outputs.get_output(meta["handle"])
        assert record.inline == body and record.lines_key is None
        assert not store_server.services.blobs.exists(record.blob_key)
        handle = meta["handle"]
        assert content(client, handle) == body
        ranged = client.get(f"/v1/outputs/{handle}/content", headers={"Range": "bytes=1-13"})
        assert ranged.status_code == 206 and ranged.content == body[1:14]
        assert client.get(f"/v1/outputs/{handle}/lines", params={"offset": 2}).text.startswith("     2\tsecond line")
        grep = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "error", "ignore_case": True})
        assert "     2:\tsecond line ERROR" in grep.text
        assert client.post("/v1/extractions", json={"handle": handle, "extract": "the error"}).status_code == 202
        assert client.delete(f"/v1/outputs/{handle}").status_code == 204
        assert variables(client, session) == {}


def test_deleting_a_session_removes_variables_files_versions_and_blobs(start_server, redis_client: redis.Redis) -> None:
    server: ApiServer = start_server(inline_output_max_bytes=64)
    with server.client() as client:
        session = new_session(client)
        handles = stored_everything(client, session)
        records = [server.services.records.outputs.get_output(h) for h in handles]
        assert client.delete(f"/v1/sessions/{session}").status_code == 204
        assert_error(client.get(f"/v1/sessions/{session}/variables"), 404)
    assert_gone(server, redis_client, session, records)


def test_an_idle_session_is_swept_with_everything_it_holds(start_server, redis_client: redis.Redis) -> None:
    server: ApiServer = start_server(inline_output_max_bytes=64)
    with server.client() as client:
        session = new_session(client)
        handles = stored_everything(client, session)
        records = [server.services.records.outputs.get_output(h) for h in handles]
    redis_client.zadd(keys.sessions_by_last_use(session), {session: 1.0})  # last used long ago
    assert sweep_idle_sessions(server.services) == 1
    assert_gone(server, redis_client, session, records)


def stored_everything(client: Any, session: str) -> list[str]:
    """A named inline output, a default-named blob, an appended variable (with a retired version), a file."""
    handles = [stored(upload(client, session, "tiny", name="tiny"))["handle"]]
    handles.append(stored(upload(client, session, LOG, tool="logs"))["handle"])
    handles.append(stored(upload(client, session, LOG, output="variable:log"))["handle"])
    handles.append(stored(upload(client, session, "more", output="variable:log"))["handle"])
    handles.append(stored(upload(client, session, LOG, output="file:out/{today}.log"))["handle"])
    return handles


def assert_gone(server: ApiServer, redis_client: redis.Redis, session: str, records: list[Any]) -> None:
    assert redis_client.keys(f"*{session}*") == []
    for record in records:
        assert redis_client.get(keys.output(record.handle)) is None
        assert redis_client.zscore(keys.retired_outputs(record.handle), record.handle) is None
        assert not server.services.blobs.exists(record.blob_key)
