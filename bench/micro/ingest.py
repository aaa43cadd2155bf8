"""Ingest at the speed of the disk? An NDJSON file measured and stored, against sha256 and a plain copy of it.

    python -m bench.micro.ingest [--mb 200] [--check-mb 20] [--no-api] [--redis-url URL]

One run, one file (generated under the temp dir, deleted at the end), so every ratio shares the box's load:
  baselines  a plain copy of the file (`shutil.copyfile`, as `cp`) and its sha256 (8 MiB blocks);
  measure    `measure()` with the store-time counter (`infra.outputs.tokenizers.store_counter`), and the whole
             store-time pass of an upload (`Meter`: stats, token index, line index, characters);
  reference  tiktoken's `measure()` on the first `--check-mb` MB: its speed, and its token index, which
             must equal the fast counter's piece for piece (else the bench fails);
  API        the file stored through the API (`POST` streamed in 1 MiB blocks; local blob store).

Target (issue 30): the upload through the API at >= 25 MB/s on 2 cores, token counts equal to tiktoken's.
Wall clock is what counts here: the store-time pass uses every core (`default_threads()`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from bench.report import print_table, verdict
from extraction.documents.stats import default_threads, measure
from extraction.documents.tokens import DEFAULT_ENCODING
from extraction.tokenizer_files import ensure_offline_encodings
from infra.outputs.metering import Known, Meter
from infra.outputs.tokenizers import store_counter, warm_up
from infra.outputs.versions import FileSource

T = TypeVar("T")
MB = 1_000_000
BLOCK = 8 << 20
TARGET_API_MB_S = 25.0


def ndjson_rows(seed: int = 30) -> list[bytes]:
    """A pool of tool-output rows (ids, names, numbers, a little unicode); about 150 bytes each."""
    rnd = random.Random(seed)
    words = ["ok", "timeout", "retry", "région", "東京", "статус", "✓", "payment", "shipped", "p99"]
    rows = []
    for i in range(4096):
        row = {"id": i, "user": f"user_{rnd.getrandbits(24):06x}", "ms": round(rnd.random() * 900, 3)}
        row |= {"status": rnd.choice(words), "msg": " ".join(rnd.choices(words, k=rnd.randint(3, 12)))}
        rows.append(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return rows


def write_ndjson(path: Path, size: int) -> Counter[str]:
    """The file (the same bytes for the same size), and how many of its rows have each `status`."""
    rnd, rows, written, picked = random.Random(1), ndjson_rows(), 0, Counter[int]()
    with open(path, "wb") as file:
        while written < size:
            chosen = rnd.choices(range(len(rows)), k=8192)  # the rows `rnd.choices(rows, …)` would pick
            picked.update(chosen)
            block = b"".join(rows[i] for i in chosen)
            file.write(block)
            written += len(block)
    statuses = Counter[str]()
    for i, n in picked.items():
        statuses[json.loads(rows[i])["status"]] += n
    return statuses


def blocks(path: Path, limit: int | None = None) -> Iterator[bytes]:
    with open(path, "rb") as file:
        left = limit if limit is not None else os.path.getsize(path)
        while left > 0 and (block := file.read(min(BLOCK, left))):
            left -= len(block)
            yield block


CPU: dict[str, float] = {}
"""CPU seconds of each measure (this process's, or the API's), beside its wall seconds: the box is shared."""


def timed(run: Callable[[], T], name: str = "") -> tuple[float, T]:
    started, cpu = time.perf_counter(), time.process_time()
    result = run()
    CPU[name] = time.process_time() - cpu
    return time.perf_counter() - started, result


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def copy_seconds(path: Path) -> float:
    target = path.with_suffix(".copy")
    try:
        seconds, _ = timed(lambda: shutil.copyfile(path, target), "copy")
    finally:
        target.unlink(missing_ok=True)
    return seconds


def sha256_seconds(path: Path) -> float:
    def digest() -> str:
        sha = hashlib.sha256()
        for block in blocks(path):
            sha.update(block)
        return sha.hexdigest()

    return timed(digest, "sha256")[0]


def meter_seconds(path: Path) -> float:
    def run() -> Known:
        meter = Meter(DEFAULT_ENCODING)
        for block in FileSource(path).blocks(1 << 20):
            meter.feed(block)
        return meter.finish()

    return timed(run, "meter")[0]


def wait_idle(pid: int, limit: float = 120.0) -> None:
    """Until the API's start-up work (litellm import, tokenizer load, in background threads) is done."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = process_cpu_seconds(pid)
        time.sleep(1.0)
        if process_cpu_seconds(pid) - before < 0.05:
            return


def api_seconds(path: Path, redis_url: str) -> tuple[float, dict]:
    from bench.service.harness import running_stack
    from toolout.devstack.processes import ensure_redis

    ensure_redis(redis_url)
    with running_stack(redis_url, model=None, worker=None) as stack, stack.client() as client:
        session = client.create_session()
        client.store(session, iter([b'{"warm": "up"}\n' * 1000]))  # the API's counter is loaded and run once
        pid = stack.pid("api")
        wait_idle(pid)
        started, cpu = time.perf_counter(), process_cpu_seconds(pid)
        meta = client.store(session, blocks(path, None), tool_name="bench.ndjson", content_type="application/x-ndjson")
        CPU["api"] = process_cpu_seconds(pid) - cpu
        return time.perf_counter() - started, meta


def rate(size: int, seconds: float, name: str) -> str:
    """Wall MB/s, and MB per CPU second of the process that did it (what the load of the box changes least)."""
    return f"{size / MB / seconds:.1f} MB/s ({seconds:.2f} s; {size / MB / max(CPU[name], 1e-3):.0f} MB/cpu-s)"


def main() -> int:
    args = parse_args()
    with generated_ndjson(args.mb) as path:
        return report(path, args)


@contextmanager
def generated_ndjson(mb: int) -> Iterator[Path]:
    """The bench's NDJSON file of `mb` MB under a fresh temp dir (removed after), the tokenizer warmed up."""
    ensure_offline_encodings()
    warm_up(DEFAULT_ENCODING)
    directory = Path(tempfile.mkdtemp(prefix="toolout-ingest-"))
    path = directory / "bench.ndjson"
    try:
        write_ndjson(path, mb * MB)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def report(path: Path, args: argparse.Namespace) -> int:
    size, threads = os.path.getsize(path), default_threads()
    print(f"ingest bench: {size / MB:.0f} MB NDJSON, {os.cpu_count()} cores, {threads} counting threads\n")
    copy, sha = copy_seconds(path), sha256_seconds(path)
    counter = store_counter(DEFAULT_ENCODING)
    fast_s, fast = timed(lambda: measure(blocks(path), count_batch=counter), "fast")
    meter = meter_seconds(path)
    check = min(size, args.check_mb * MB)
    ref_s, ref = timed(lambda: measure(blocks(path, check)), "tiktoken")
    prefix = measure(blocks(path, check), count_batch=counter)
    equal = prefix.index == ref.index
    rows = [
        ("measure", "value", "vs copy", "target", "result"),
        ("plain copy (shutil.copyfile, as cp)", rate(size, copy, "copy"), "1.00x", "baseline", ""),
        ("sha256", rate(size, sha, "sha256"), f"{copy / sha:.2f}x", "", ""),
        ("measure(), store-time counter", rate(size, fast_s, "fast"), f"{copy / fast_s:.2f}x", "", ""),
        ("store-time pass (Meter: + lines, chars)", rate(size, meter, "meter"), f"{copy / meter:.2f}x", "", ""),
        (f"measure(), tiktoken, first {check / MB:.0f} MB", rate(check, ref_s, "tiktoken"), "", "", ""),
        ("    per-piece counts equal to tiktoken", "yes" if equal else "NO", "", "equal", verdict(equal)),
        ("    tokens / lines", f"{fast.stats.tokens:,} / {fast.stats.lines:,}", "", "", ""),
    ]
    if args.api:
        api_s, meta = api_seconds(path, args.redis_url)
        ok = size / MB / api_s >= TARGET_API_MB_S and meta["tokens"] == fast.stats.tokens
        target = f">= {TARGET_API_MB_S:.0f} MB/s"
        rows.append(("store through the API", rate(size, api_s, "api"), f"{copy / api_s:.2f}x", target, verdict(ok)))
    print_table(rows)
    return 0 if all(row[4] != "MISS" for row in rows) else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=200, help="size of the generated NDJSON file, MB")
    parser.add_argument("--check-mb", type=int, default=20, help="prefix tiktoken measures too (it is slow)")
    parser.add_argument("--no-api", dest="api", action="store_false", help="skip the store through the API")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database it may flush")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
