"""The query strategy on a 1 GB NDJSON: load within the memory limit, answer a count, reuse the loaded form.

    python -m bench.micro.query [--mb 1024] [--dir /tmp/toolout-bench-query] [--memory-mb 512]

Generates an NDJSON of --mb MB (event records, nested objects and arrays, deterministic) as a blob
in a local blob store, then runs two phases, each in a fresh process so its peak RSS is its own:

1. `load`: download to a temp file, load with DuckDB (memory_limit --memory-mb, spilling to disk),
   keep the Parquet next to the blob, answer `SELECT count(*) … WHERE status = 'failed'`;
2. `reuse`: a second question from a new process (another worker): the loaded form is fetched from
   the blob store, no load runs; `SELECT sum(amount_cents) …`.

Prints each phase's time, bytes read from the blob store and peak RSS, checks both answers against
the counts kept while generating, and exits 1 when an answer is wrong, the reuse phase loaded
again, or a phase's peak RSS exceeds the worker budget (--memory-mb + 400 MB of Python and DuckDB).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench import REPO_ROOT
from extraction.documents.stats import DocumentStats
from extraction.documents.structured import StructuredKind
from infra.blobstore.local import LocalBlobStore
from infra.query import EngineLimits, open_tables
from infra.stores.records import OutputRecord

KEY = "sessions/bench/events"
STATUSES = ["ok", "ok", "ok", "failed", "retried"]
OVERHEAD_MB = 400


def generate(path: Path, mb: int) -> dict[str, int]:
    """Write the NDJSON and return the expected answers."""
    rng, failed, amount, written, n = random.Random(5), 0, 0, 0, 0
    with path.open("w") as f:
        while written < mb << 20:
            status = rng.choice(STATUSES)
            cents = rng.randrange(100, 100_000)
            failed += status == "failed"
            amount += cents if status == "failed" else 0
            row = {
                "id": f"EV-{n:09d}",
                "status": status,
                "amount_cents": cents,
                "user": {"name": f"user-{rng.randrange(10**6):06d}", "country": rng.choice(["EE", "DE", "US", "JP"])},
                "tags": rng.sample(["web", "api", "batch", "mobile", "retry"], k=2),
                "message": "request handled by gateway " + "x" * rng.randrange(20, 120),
            }
            line = json.dumps(row, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)
            n += 1
    return {"rows": n, "failed": failed, "failed_amount": amount, "bytes": written}


def record(blobs: LocalBlobStore) -> OutputRecord:
    digest = hashlib.sha256()
    for block in blobs.iter_range(KEY):
        digest.update(block)
    size = blobs.size(KEY)
    stats = DocumentStats(bytes=size, lines=0, tokens=size // 4, avg_line_bytes=250, sha256=digest.hexdigest())
    return OutputRecord(handle="events", session_id="bench", stats=stats, blob_key=KEY, index_key=KEY + ".tokidx")


def phase(root: Path, name: str, memory_mb: int) -> None:
    """One phase in this process: print a JSON line with its numbers."""
    blobs = LocalBlobStore(root / "blobs")
    rec = json.loads((root / "record.json").read_text())
    output = OutputRecord.model_validate(rec)
    limits = EngineLimits(memory_limit_mb=memory_mb, threads=2, statement_timeout_seconds=600)
    started = time.perf_counter()
    opened = open_tables(blobs, output, StructuredKind.NDJSON, limits, temp_root=str(root))
    loaded = time.perf_counter() - started
    sql = (
        "SELECT count(*) FROM records WHERE status = 'failed'"
        if name == "load"
        else "SELECT sum(amount_cents) FROM records WHERE status ILIKE 'FAILED'"
    )
    asked = time.perf_counter()
    answer = opened.query(sql, 5).rows[0][0]
    took = time.perf_counter() - asked
    opened.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        json.dumps(
            {
                "phase": name,
                "open_s": loaded,
                "query_s": took,
                "answer": answer,
                "reused": opened.reused,
                "bytes_read": opened.bytes_read,
                "peak_rss_mb": peak,
            }
        )
    )


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--mb", type=int, default=1024)
    args.add_argument("--dir", default="/tmp/toolout-bench-query")
    args.add_argument("--memory-mb", type=int, default=512)
    args.add_argument("--phase", choices=["load", "reuse"])
    opts = args.parse_args()
    root = Path(opts.dir)
    if opts.phase:
        phase(root, opts.phase, opts.memory_mb)
        return 0
    return run(root, opts.mb, opts.memory_mb)


def run(root: Path, mb: int, memory_mb: int) -> int:
    root.mkdir(parents=True, exist_ok=True)
    blobs = LocalBlobStore(root / "blobs")
    blobs.delete_prefix("sessions/bench/")
    source = root / "events.ndjson"
    started = time.perf_counter()
    expected = generate(source, mb)
    blobs.put_file(KEY, source)
    print(
        f"generated {expected['bytes'] / 2**20:.0f} MB, {expected['rows']:,} rows "
        f"in {time.perf_counter() - started:.0f} s"
    )
    (root / "record.json").write_text(record(blobs).model_dump_json())
    results = [_child(root, name, memory_mb) for name in ("load", "reuse")]
    for r in results:
        print(
            f"{r['phase']:>5}: open {r['open_s']:7.1f} s  query {r['query_s']:6.2f} s  "
            f"read {r['bytes_read'] / 2**20:7.0f} MB"
            f"  peak RSS {r['peak_rss_mb']:5d} MB  reused={r['reused']}  answer={r['answer']}"
        )
    ok = results[0]["answer"] == expected["failed"] and results[1]["answer"] == expected["failed_amount"]
    ok = ok and results[1]["reused"] and not results[0]["reused"]
    budget = memory_mb + OVERHEAD_MB
    ok = ok and all(r["peak_rss_mb"] <= budget for r in results)
    print(
        f"expected count {expected['failed']:,}, sum {expected['failed_amount']:,}; worker budget {budget} MB; "
        f"{'OK' if ok else 'FAILED'}"
    )
    blobs.delete_prefix("sessions/bench/")
    return 0 if ok else 1


def _child(root: Path, name: str, memory_mb: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.micro.query", "--dir", str(root), "--phase", name, "--memory-mb", str(memory_mb)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    raise SystemExit(main())
