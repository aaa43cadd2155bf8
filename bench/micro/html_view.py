"""Benchmark deriving an HTML page's text view: streamed in pieces against converting the page whole.

    python -m bench.micro.html_view [--mb 50] [--page /work/shared/corpus/re.html]

A page of `--mb` MB is built by repeating the body of a real documentation page (the corpus file when it
exists, else a generated one) and written to a temporary file. Each way runs in a fresh child process, so
its peak RSS is its own:
  (a) baseline: read the file, decode it, convert it whole (`infra.outputs.html_text.to_markdown`) — the
      page is then held as bytes, as text, and by the converter;
  (b) streamed: `markdown_blocks` over 8 MB blocks of the file, as the store does.
Targets: (b)'s peak RSS growth under the page's size (the page is never held twice), and (b) at least half
as fast as (a).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import REPO_ROOT
from bench.micro.stats import peak_rss_growth_mb
from bench.report import print_table, verdict
from infra.outputs.html_text import markdown_blocks, to_markdown

MB = 1_000_000
BLOCK_BYTES = 8 << 20
CORPUS_PAGE = Path("/work/shared/corpus/re.html")
TARGET_SPEED_RATIO = 0.5
TARGET_RSS_OF_PAGE = 1.0

FALLBACK_BODY = "".join(
    f"<h2>Section {n}</h2><p>Paragraph {n} with <a href='#s{n}' title='tip'>a link</a> and <code>code()</code>.</p>"
    f"<ul><li>item {n}.1</li><li>item {n}.2</li></ul><pre>print({n})</pre>"
    for n in range(200)
)


def page_body(path: Path) -> str:
    """What is inside `<body>` of the page (a generated one when the corpus file is missing)."""
    if not path.exists():
        return FALLBACK_BODY
    html = path.read_text(encoding="utf-8")
    start = html.find(">", html.lower().find("<body")) + 1
    return html[start : html.lower().rfind("</body>")]


def build_page(body: str, size: int, target: Path) -> int:
    with open(target, "w", encoding="utf-8") as file:
        file.write("<!DOCTYPE html><html><head><title>bench</title></head><body>")
        written = 0
        while written < size:
            written += file.write(body)
        file.write("</body></html>")
    return target.stat().st_size


def child(way: str, path: Path) -> None:
    """One way in this (fresh) process: seconds, Markdown bytes and peak RSS growth, as JSON."""
    to_markdown("<p>warm up</p>")
    result: dict[str, float] = {}

    def whole() -> None:
        result["out_bytes"] = len(to_markdown(path.read_bytes().decode("utf-8", "replace")).encode())

    def streamed() -> None:
        with open(path, "rb") as file:
            blocks = iter(lambda: file.read(BLOCK_BYTES), b"")
            result["out_bytes"] = sum(len(piece) for piece in markdown_blocks(blocks))

    started = time.perf_counter()
    result["delta_mb"] = peak_rss_growth_mb(whole if way == "whole" else streamed)
    result["seconds"] = time.perf_counter() - started
    print(json.dumps(result))


def run_child(way: str, path: Path) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.micro.html_view", "--child", way, "--path", str(path)]
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO_ROOT).stdout
    result: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return result


def report(size: int, whole: dict[str, float], streamed: dict[str, float]) -> bool:
    page_mb = size / MB
    speed = {name: page_mb / run["seconds"] for name, run in (("whole", whole), ("streamed", streamed))}
    speed_ok = speed["streamed"] >= TARGET_SPEED_RATIO * speed["whole"]
    rss_ok = streamed["delta_mb"] < TARGET_RSS_OF_PAGE * page_mb
    print(f"page: {page_mb:.1f} MB of HTML")
    print_table(
        [
            ("measure", "whole (baseline)", "streamed", "target", "result"),
            ("MB/s", f"{speed['whole']:.1f}", f"{speed['streamed']:.1f}", f">= {TARGET_SPEED_RATIO} x baseline",
             verdict(speed_ok)),
            ("peak RSS growth MB", f"{whole['delta_mb']:.0f}", f"{streamed['delta_mb']:.0f}",
             f"< {TARGET_RSS_OF_PAGE} x page", verdict(rss_ok)),
            ("Markdown MB", f"{whole['out_bytes'] / MB:.1f}", f"{streamed['out_bytes'] / MB:.1f}", "", ""),
        ]
    )  # fmt: skip
    return speed_ok and rss_ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=50, help="size of the page to derive (MB)")
    parser.add_argument("--page", type=Path, default=CORPUS_PAGE, help="the page whose body is repeated")
    parser.add_argument("--child", choices=["whole", "streamed"], help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "page.html"
        size = build_page(page_body(args.page), args.mb * MB, path)
        whole, streamed = run_child("whole", path), run_child("streamed", path)
    sys.exit(0 if report(size, whole, streamed) else 1)


if __name__ == "__main__":
    main()
