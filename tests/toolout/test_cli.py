"""The `toolout` command itself: its commands are listed, and server commands explain the light install."""

from __future__ import annotations

import importlib.util
import json
import uuid

import pytest
from typer.testing import CliRunner

from tests.workers.job.test_pipeline import NEEDLE, document
from toolout import cli
from toolout.cli import client as client_commands

pytestmark = pytest.mark.twin(
    "the CLI's commands, flags and exit codes; the stores behind the API are not what it tests"
)


def test_help_lists_the_commands() -> None:
    result = CliRunner().invoke(cli.app, ["--help"])
    assert result.exit_code == 0
    for command in ("api", "worker", "flower", "offline-model", "demo", "keys", "migrate-keys"):
        assert command in result.stdout


@pytest.mark.parametrize("argv", [["api"], ["worker"], ["flower"], ["demo"], ["keys", "list"], ["migrate-keys"]])
def test_a_server_command_on_the_light_install_says_what_to_install(monkeypatch, argv: list[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("celery", "litellm") else real(name, *a)
    )
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 2
    assert "pip install 'toolout[server]'" in result.stderr and "missing: celery, litellm" in result.stderr


# --- the client commands, against a live API (in-process jobs, no Redis) ---------------------------
def run(live_api, *argv: str, stdin: bytes | None = None):
    return CliRunner().invoke(cli.app, [*argv, "--api-url", live_api.url], input=stdin)


def test_store_then_extract_prints_the_message_then_the_abstract(live_api, tmp_path) -> None:
    path = tmp_path / "out.log"
    path.write_bytes(document())
    stored = run(live_api, "store", str(path), "--tool-name", "logs.fetch", "--json")
    assert stored.exit_code == 0, stored.output
    meta = json.loads(stored.stdout)
    assert meta["oversized"] and meta["message"].startswith("Tool output is too large (")
    extracted = run(live_api, "extract", meta["handle"], "database pool errors", "--mode", "full-chunked")
    assert extracted.exit_code == 0, extracted.output
    assert extracted.stdout.startswith(f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}, ")
    assert NEEDLE in extracted.stdout


def test_store_reads_stdin_and_prints_handle_and_message_for_people(live_api) -> None:
    stored = run(live_api, "store", "-", stdin=document())
    assert stored.exit_code == 0, stored.output
    lines = stored.stdout.splitlines()
    assert lines[0].startswith("session  ") and lines[1].startswith("handle   ") and "tokens" in lines[2]
    assert lines[4].startswith("Tool output is too large (")


def test_jobs_lists_a_sessions_jobs_and_shows_one(live_api) -> None:
    meta = json.loads(run(live_api, "store", "-", "--json", stdin=document()).stdout)
    job = json.loads(run(live_api, "extract", meta["handle"], "errors", "--mode", "truncate", "--json").stdout)
    listed = json.loads(run(live_api, "jobs", meta["session_id"], "--json").stdout)
    assert [item["id"] for item in listed] == [job["id"]]
    shown = run(live_api, "jobs", job["id"])
    assert shown.exit_code == 0 and shown.stdout.startswith("ABSTRACT FROM TOOL OUTPUT unknown WITH HANDLE")


def test_jobs_trace_prints_each_step_and_its_answer(live_api) -> None:
    meta = json.loads(run(live_api, "store", "-", "--json", stdin=document()).stdout)
    job = json.loads(
        run(live_api, "extract", meta["handle"], "database pool errors", "--mode", "full-chunked", "--json").stdout
    )
    shown = run(live_api, "jobs", job["id"], "--trace")
    assert shown.exit_code == 0, shown.output
    steps = shown.stdout.splitlines()
    assert len([s for s in steps if " chunk " in s]) == job["chunks_total"] > 1
    assert any(NEEDLE in s for s in steps if " chunk " in s) and " answer " in steps[-1]
    traced = json.loads(run(live_api, "jobs", job["id"], "--trace", "--json").stdout)
    assert traced["status"] == "succeeded" and traced["next"] == len(steps)


def test_read_and_grep(live_api) -> None:
    handle = json.loads(run(live_api, "store", "-", "--json", stdin=b"alpha\nbeta ERROR\ngamma\n").stdout)["handle"]
    assert run(live_api, "read", handle, "--offset", "2", "--limit", "1").stdout.startswith("     2\tbeta ERROR\n")
    assert run(live_api, "grep", handle, "error", "-i").stdout.startswith("     2:\tbeta ERROR")


def test_exit_codes_tell_refused_from_unavailable_from_no_wait(live_api) -> None:
    unknown = run(live_api, "read", str(uuid.uuid4()))
    assert unknown.exit_code == 3 and "404 not_found" in unknown.stderr
    down = CliRunner().invoke(cli.app, ["read", str(uuid.uuid4()), "--api-url", "http://127.0.0.1:9"])
    assert down.exit_code == 4 and "cannot reach the toolout API" in down.stderr
    handle = json.loads(run(live_api, "store", "-", "--json", stdin=document()).stdout)["handle"]
    queued = run(live_api, "extract", handle, "errors", "--no-wait")
    assert queued.exit_code == 0 and len(queued.stdout.strip()) == 36


def test_a_failed_job_exits_1() -> None:
    assert client_commands._job_exit({"id": "j", "status": "failed"}) == 1
    assert client_commands._job_exit({"id": "j", "status": "succeeded"}) == 0
    assert client_commands._job_exit({"id": "j", "status": "running"}) == 5


def test_extract_again_is_answered_from_the_cache_unless_told_not_to(live_api) -> None:
    meta = json.loads(run(live_api, "store", "-", "--json", stdin=document()).stdout)
    argv = ("extract", meta["handle"], "database pool errors", "--mode", "full-chunked", "--json")
    first = json.loads(run(live_api, *argv).stdout)
    again = json.loads(run(live_api, *argv).stdout)
    fresh = json.loads(run(live_api, *argv, "--no-cache").stdout)
    assert (again["cached"], again["cached_from"], again["result"]) == (True, first["id"], first["result"])
    assert fresh["cached"] is False and fresh["usage"]["calls"] == first["usage"]["calls"] > 0


def test_vars_lists_the_sessions_variables_and_shows_one(live_api) -> None:
    stored = json.loads(run(live_api, "store", "-", "--tool-name", "weather", "--json", stdin=b'{"temp": 72}').stdout)
    session = stored["session_id"]
    listed = run(live_api, "vars", session)
    assert listed.exit_code == 0, listed.output
    assert "$weather_1" in listed.stdout and '{"temp":72}' in listed.stdout
    one = json.loads(run(live_api, "vars", session, "weather_1").stdout)
    assert (one["name"], one["handle"]) == ("weather_1", stored["handle"])
    missing = run(live_api, "vars", session, "nope")
    assert missing.exit_code == 3 and "unknown_variable" in missing.stderr
