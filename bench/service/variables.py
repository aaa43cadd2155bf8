"""V1, V2: session variables — a field of a big JSON output, and what a small output costs to store.

    python -m bench.service.variables [--only v1,v2] [--mb 100] [--runs 3] [--small 300] [--redis-url URL]

Each part starts the API as its own process (real Redis, a local blob store under var/bench; V2 also S3
through moto's server when moto is installed) and compares against a baseline measured in the same run:

  V1  `$big.items[N].id` resolved by `POST /v1/sessions/{id}/resolve` from a --mb MB JSON output stored
      with `Content-Type: application/json`, N the last item (the whole document streams by), vs
      `json.load` of the same file plus the same lookup, in a child interpreter:
        resolve time / json.load time                  target <= 3.0x (events walked in Python vs json in C)
        API peak RSS growth during the resolve         target <= 64 MB (json.load's own growth beside it)
  V2  a 200-byte upload: median latency with the inline fast path (the content lives in its Redis record)
      vs `TOOLOUT_INLINE_OUTPUT_MAX_BYTES=0` (a blob plus two index blobs, as every output was stored
      before), per blob store                         target: inline <= blob

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench import BENCH_ROOT
from bench.report import run_parts, verdict
from bench.service.harness import proc_status_kb, running_stack
from toolout.devstack import processes

MB = 1_000_000
PARTS = ("v1", "v2")
TARGET_V1_RATIO = 3.0
TARGET_V1_RSS_MB = 64
SMALL = (
    b'{"temperature": 72, "humidity": 45, "conditions": "sunny", "wind": {"mph": 5, "dir": "NW"}, "note": "'
    + b"x" * 200
)[:198] + b'"}'
Row = tuple[str, str, str, str]


# --- V1 ----------------------------------------------------------------------------------------------
def big_json(path: Path, size: int) -> int:
    """Write a JSON document of about `size` bytes, `{"source", "items": [...], "count"}`; returns the item count."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"source": "bench", "items": [')
        written = 0
        while written < size:
            item = {
                "id": f"item-{count:07d}",
                "name": f"Product {count} — édition spéciale",
                "price": round(count * 0.37 % 500, 2),
                "tags": ["a", "b", f"t{count % 13}"],
                "note": "lorem ipsum dolor sit amet, consectetur adipiscing elit",
            }
            text = ("," if count else "") + json.dumps(item, ensure_ascii=False)
            out.write(text)
            written += len(text.encode())
            count += 1
        out.write(f'], "count": {count}}}')
    return count


def json_load_baseline(path: Path, index: int) -> tuple[float, float, str]:
    """(seconds, peak RSS growth MB, the value) of `json.load` + the lookup, in a fresh interpreter."""
    code = f"""
import json, resource, time
def rss_kb():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))
before = rss_kb()
t = time.perf_counter()
with open({str(path)!r}, encoding='utf-8') as f:
    value = json.load(f)['items'][{index}]['id']
seconds = time.perf_counter() - t
print(json.dumps([seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024, value]))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    seconds, growth, value = json.loads(out)
    return seconds, growth, value


def v1(args: argparse.Namespace) -> list[Row]:
    path = BENCH_ROOT / f"big-{args.mb}mb.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    count = big_json(path, args.mb * MB)
    last = count - 1
    with (
        running_stack(args.redis_url, model=None, worker=None) as stack,
        httpx.Client(base_url=stack.api_url or "", timeout=600) as client,
    ):
        session = client.post("/v1/sessions").raise_for_status().json()["id"]
        upload_file(client, session, path)
        pid = stack.pid("api")
        runs = [timed_resolve(client, session, f"$big.items[{last}].id", pid) for _ in range(args.runs)]
    baselines = [json_load_baseline(path, last) for _ in range(args.runs)]
    return v1_rows(path.stat().st_size, runs, baselines, f"item-{last:07d}")


def upload_file(client: httpx.Client, session: str, path: Path) -> None:
    def blocks() -> Iterator[bytes]:
        with open(path, "rb") as file:
            while block := file.read(1 << 20):
                yield block

    headers = {"Content-Type": "application/json", "X-Tool-Name": "catalog", "X-Variable-Name": "big"}
    client.post(f"/v1/sessions/{session}/outputs", content=blocks(), headers=headers).raise_for_status()


def timed_resolve(client: httpx.Client, session: str, ref: str, pid: int) -> tuple[float, float, str]:
    """(seconds, API peak RSS growth MB, resolved value); the API's peak is reset first."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = proc_status_kb(pid, "VmRSS")
    started = time.perf_counter()
    value = client.post(f"/v1/sessions/{session}/resolve", json={"value": ref}).raise_for_status().json()["value"]
    seconds = time.perf_counter() - started
    return seconds, (proc_status_kb(pid, "VmHWM") - before) / 1024, value


def v1_rows(size: int, runs: list, baselines: list, expected: str) -> list[Row]:
    best, base = min(r[0] for r in runs), min(b[0] for b in baselines)
    growth, base_growth = max(r[1] for r in runs), max(b[1] for b in baselines)
    ratio = best / base
    correct = all(r[2] == expected for r in runs) and all(b[2] == expected for b in baselines)
    return [
        ("measure", "value", "target", "result"),
        (
            f"json.load of the {size / MB:.0f} MB file + lookup (best of {len(baselines)})",
            f"{base:.2f} s",
            "baseline",
            "",
        ),
        ("    its peak RSS growth", f"{base_growth:.0f} MB", "", ""),
        (f"resolve $big.items[N].id through the API (best of {len(runs)})", f"{best:.2f} s", "", ""),
        (
            "    ratio resolve / json.load",
            f"{ratio:.2f}x",
            f"<= {TARGET_V1_RATIO:.1f}x",
            verdict(ratio <= TARGET_V1_RATIO),
        ),
        (
            "API peak RSS growth during the resolve (worst)",
            f"{growth:.1f} MB",
            f"<= {TARGET_V1_RSS_MB} MB",
            verdict(growth <= TARGET_V1_RSS_MB),
        ),
        ("both found the last item's id", "yes" if correct else "NO", "yes", verdict(correct)),
    ]


# --- V2 ----------------------------------------------------------------------------------------------
def v2(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = [("measure", "value", "target", "result")]
    stores: dict[str, dict[str, str]] = {"local": {}}
    with moto_store() as s3_env:
        if s3_env is not None:
            stores["s3/moto"] = s3_env
        for label, env in stores.items():
            inline = small_upload_latency(args, {**env})
            blob = small_upload_latency(args, {**env, "TOOLOUT_INLINE_OUTPUT_MAX_BYTES": "0"})
            rows += v2_rows(label, inline, blob)
    if "s3/moto" not in stores:
        rows.append(("s3/moto", "skipped: moto[server] is not installed", "", ""))
    return rows


def small_upload_latency(args: argparse.Namespace, env: dict[str, str]) -> list[float]:
    with (
        running_stack(args.redis_url, model=None, worker=None, extra=env) as stack,
        httpx.Client(base_url=stack.api_url or "", timeout=60) as client,
    ):
        session = client.post("/v1/sessions").raise_for_status().json()["id"]
        url, headers = f"/v1/sessions/{session}/outputs", {"X-Tool-Name": "weather"}
        for _ in range(20):  # warm-up: connections, tokenizer, spool dir
            client.post(url, content=SMALL, headers=headers).raise_for_status()
        times = []
        for _ in range(args.small):
            started = time.perf_counter()
            client.post(url, content=SMALL, headers=headers).raise_for_status()
            times.append(time.perf_counter() - started)
    return sorted(times)


def v2_rows(label: str, inline: list[float], blob: list[float]) -> list[Row]:
    med_inline, med_blob = statistics.median(inline), statistics.median(blob)
    p90 = lambda times: times[int(len(times) * 0.9)]  # noqa: E731  # a one-line helper for two rows
    return [
        (
            f"{label}: {len(SMALL)}-byte upload, every output a blob (median)",
            f"{med_blob * 1000:.2f} ms",
            "baseline",
            "",
        ),
        ("    p90", f"{p90(blob) * 1000:.2f} ms", "", ""),
        (f"{label}: the same, inline in its record (median)", f"{med_inline * 1000:.2f} ms", "", ""),
        ("    p90", f"{p90(inline) * 1000:.2f} ms", "", ""),
        (
            "    inline / blob",
            f"{med_inline / med_blob:.2f}x ({(med_blob - med_inline) * 1000:.2f} ms saved)",
            "<= 1.0x",
            verdict(med_inline <= med_blob),
        ),
    ]


@contextmanager
def moto_store() -> Iterator[dict[str, str] | None]:
    """S3 settings for a moto server started for this bench (None when moto is not installed)."""
    if importlib.util.find_spec("moto.server") is None:
        yield None
        return
    port = processes.free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    moto = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        processes.wait_for(lambda: _answers(url), timeout=20)
        from infra.blobstore import S3BlobStore

        S3BlobStore(
            "toolout-bench", endpoint_url=url, access_key_id="bench", secret_access_key="bench", region="us-east-1"
        ).ensure_bucket()
        yield {
            "TOOLOUT_BLOB_STORE": f"s3://toolout-bench/v2-{uuid.uuid4().hex[:8]}",
            "TOOLOUT_S3_ENDPOINT_URL": url,
            "TOOLOUT_S3_ACCESS_KEY_ID": "bench",
            "TOOLOUT_S3_SECRET_ACCESS_KEY": "bench",
        }
    finally:
        moto.terminate()
        moto.wait(10)


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/moto-api/", timeout=1)
    except httpx.HTTPError:
        return False
    return True


# --- report --------------------------------------------------------------------------------------------
TITLES = {
    "v1": "V1 $big.items[N].id from a big JSON output vs json.load: time and API memory",
    "v2": "V2 a 200-byte upload: inline in its record vs blobs",
}
RUNNERS = {"v1": v1, "v2": v2}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run (v1,v2)")
    parser.add_argument("--mb", type=int, default=100, help="V1 JSON document size, MB")
    parser.add_argument("--runs", type=int, default=3, help="V1 timed resolves (and json.load baselines)")
    parser.add_argument("--small", type=int, default=300, help="V2 timed uploads per configuration")
    parser.add_argument(
        "--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database this bench may flush"
    )
    args = parser.parse_args()
    args.only = [p.strip().lower() for p in args.only.split(",") if p.strip()]
    unknown = set(args.only) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from {','.join(PARTS)}")
    return args


def main() -> int:
    args = parse_args()
    processes.ensure_redis(args.redis_url)
    print(f"toolout variables bench: {os.cpu_count()} cores, Redis {args.redis_url}\n")
    return run_parts(args.only, RUNNERS, TITLES, args)


if __name__ == "__main__":
    sys.exit(main())
