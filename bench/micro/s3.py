"""S3 blob-store throughput: SeaweedFS and moto's server side by side, through `S3BlobStore` over loopback HTTP.

    python -m bench.micro.s3 [--mb 64] [--reads 200] [--runs 3]

Both servers are started here as processes (SeaweedFS by `toolout.devstack.seaweedfs`, as the tests and `toolout dev
--s3` start it; moto by `python -m moto.server`), so each is measured in the same run on the same bytes:
  upload  — `put_stream` of `--mb` MB in 1 MiB blocks (multipart, 16 MiB parts, the service's default),
  ranged  — `--reads` reads of 1 MiB at random offsets of that blob (the read-grep agent's access pattern).
The best of `--runs` is kept. No target: the numbers say what the tests' switch from moto to SeaweedFS costs or
saves, and they are this machine's (docs/performance.md has a run).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.report import print_table
from infra.blobstore import S3BlobStore
from toolout.devstack import processes, seaweedfs

MiB = 1 << 20


@contextmanager
def seaweedfs_endpoint(root: Path) -> Iterator[tuple[str, str, str]]:
    server = seaweedfs.server(root / "seaweedfs", root / "logs")
    with processes.running(server.service, timeout=60):
        yield server.endpoint_url, server.access_key_id, server.secret_access_key


def _moto_answers(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
    except urllib.error.HTTPError:
        return True
    return True


@contextmanager
def moto_endpoint(root: Path) -> Iterator[tuple[str, str, str]]:
    port = processes.free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    service = processes.Service("moto", argv, {}, root / "logs" / "moto.log", ready=lambda: _moto_answers(url))
    with processes.running(service, timeout=60):
        yield url, "testing", "testing"


def store_on(endpoint: tuple[str, str, str]) -> S3BlobStore:
    url, key, secret = endpoint
    store = S3BlobStore(f"bench-{uuid.uuid4().hex[:8]}", endpoint_url=url, access_key_id=key, secret_access_key=secret)
    store.ensure_bucket()
    return store


def best_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(store: S3BlobStore, data: bytes, reads: int, runs: int) -> tuple[float, float]:
    """(upload MB/s, ranged-read MB/s) on one server."""
    blocks = [data[i : i + MiB] for i in range(0, len(data), MiB)]
    upload = best_seconds(lambda: store.put_stream("bench/blob", iter(blocks)), runs)
    offsets = random.Random(5).sample(range(len(data) - MiB), reads)
    ranged = best_seconds(lambda: [store.read_range("bench/blob", at, at + MiB) for at in offsets], runs)
    return len(data) / MiB / upload, reads / ranged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=64, help="size of the blob uploaded and read")
    parser.add_argument("--reads", type=int, default=200, help="1 MiB ranged reads per run")
    parser.add_argument("--runs", type=int, default=3, help="repetitions; the best is kept")
    args = parser.parse_args(argv)
    data = random.Random(7).randbytes(args.mb * MiB)
    results = {}
    with tempfile.TemporaryDirectory(prefix="toolout-bench-s3-") as tmp:
        for name, endpoint in (("SeaweedFS", seaweedfs_endpoint), ("moto", moto_endpoint)):
            with endpoint(Path(tmp) / name) as reached:
                results[name] = measure(store_on(reached), data, args.reads, args.runs)
    return report(results, args.mb)


def report(results: dict[str, tuple[float, float]], mb: int) -> int:
    (weed_up, weed_read), (moto_up, moto_read) = results["SeaweedFS"], results["moto"]
    print_table(
        [
            ("measure", "SeaweedFS", "moto", "SeaweedFS / moto"),
            (f"upload {mb} MB, MB/s", f"{weed_up:.0f}", f"{moto_up:.0f}", f"{weed_up / moto_up:.2f}x"),
            ("1 MiB ranged reads, MB/s", f"{weed_read:.0f}", f"{moto_read:.0f}", f"{weed_read / moto_read:.2f}x"),
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
