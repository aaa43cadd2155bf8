"""What finding secrets costs the store: the store-time pass over an NDJSON file with and without the scan.

    python -m bench.micro.redaction [--mb 1000]

One run, one generated file (the ingest bench's NDJSON, no secret in it, so no redacted view is written:
the cost measured is the scan every upload pays). Printed:
  store      the store-time pass (`Meter`: stats, token index, line index, characters), without the scan,
             then with it (each the best of three, alternated; wall and CPU seconds), and the overhead as
             a ratio of the two (target: at most 15 %);
  engines    each multi-pattern engine alone over the same bytes, MB/s: Hyperscan (the store's) and an RE2
             set, both running every rule of `infra.privacy.rules`;
  corpus     the detector over every file of the shared corpus: MB/s, and what it redacted, by kind.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from bench.micro.ingest import MB, blocks, generated_ndjson
from bench.report import print_table, verdict
from extraction.documents.tokens import DEFAULT_ENCODING
from infra.outputs.metering import Meter
from infra.privacy.scanner import HyperscanScanner, Re2Scanner, SecretScanner
from infra.privacy.streaming import Detector, redacted_blocks
from toolout.devstack.datasets import corpus_dir

TARGET_OVERHEAD = 0.15


def store_pass(path: Path, *, scan: bool) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of this process) of one store-time pass over the file."""
    started, cpu, meter = time.perf_counter(), time.process_time(), Meter(DEFAULT_ENCODING, scan=scan)
    for block in blocks(path):
        meter.feed(block)
    known = meter.finish()
    assert known.holds_secret is (False if scan else None), "the bench's NDJSON holds no secret"
    return time.perf_counter() - started, time.process_time() - cpu


def engine_rate(path: Path, scanner: SecretScanner) -> float:
    started, detector, size = time.perf_counter(), Detector(scanner), 0
    for block in blocks(path):
        detector.feed(block)
        size += len(block)
    return size / MB / (time.perf_counter() - started)


def corpus_rows(scanner: SecretScanner) -> list[tuple[str, str, str, str, str]]:
    rows = []
    corpus = corpus_dir(Path(__file__).resolve().parents[2])
    if corpus is None:
        return [("corpus", "not found", "", "", "")]
    for file in sorted(p for p in corpus.iterdir() if p.is_file()):
        counts: Counter[str] = Counter()
        started = time.perf_counter()
        for _ in redacted_blocks(blocks(file), scanner, counts):
            pass
        rate = file.stat().st_size / MB / (time.perf_counter() - started)
        found = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"
        rows.append((f"corpus {file.name}", f"{rate:.0f} MB/s", found, "", ""))
    return rows


def main() -> int:
    with generated_ndjson(parse_args().mb) as path:
        return report(path)


def report(path: Path) -> int:
    size = path.stat().st_size
    print(f"redaction bench: {size / MB:.0f} MB NDJSON\n")
    store_pass(path, scan=True)  # warms the page cache and both engines: neither pass is first
    runs = [(store_pass(path, scan=False), store_pass(path, scan=True)) for _ in range(3)]
    (plain, plain_cpu), (scanned, scanned_cpu) = (min(r[i] for r in runs) for i in (0, 1))
    overhead, cpu_overhead = scanned / plain - 1, scanned_cpu / plain_cpu - 1
    hyperscan, re2_set = HyperscanScanner(), Re2Scanner()
    rows = [
        ("measure", "value", "detail", "target", "result"),
        ("store-time pass, no scan", f"{size / MB / plain:.1f} MB/s", f"{plain:.2f} s, {plain_cpu:.2f} cpu-s", "", ""),
        (
            "store-time pass, with the scan",
            f"{size / MB / scanned:.1f} MB/s",
            f"{scanned:.2f} s, {scanned_cpu:.2f} cpu-s",
            "",
            "",
        ),
        (
            "    overhead, wall",
            f"{overhead:+.1%}",
            "",
            f"<= {TARGET_OVERHEAD:.0%}",
            verdict(overhead <= TARGET_OVERHEAD),
        ),
        ("    overhead, cpu", f"{cpu_overhead:+.1%}", "", "", ""),
        ("engine: hyperscan", f"{engine_rate(path, hyperscan):.0f} MB/s", "", "", ""),
        ("engine: re2 set", f"{engine_rate(path, re2_set):.0f} MB/s", "", "", ""),
        *corpus_rows(hyperscan),
    ]
    print_table(rows)
    return 0 if all(row[4] != "MISS" for row in rows) else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of the generated NDJSON file, MB")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
