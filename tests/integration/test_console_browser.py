"""The web console in a real browser (Debian's Chromium, headless, driven by Playwright) on the service stack.

It opens the console, makes a session, uploads a log as a file, starts a full-chunked job on the offline
model, watches its chunks settle live, opens the chunk that found the needle and reads its answer, clicks the
answer's source and sees the cited line highlighted in the output, then runs the same request again with
read-grep beside it. Screenshots go to `var/artifacts/console/` (CI
keeps them; `TOOLOUT_CONSOLE_SCREENSHOT` also writes the finished tree where the docs show it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.servers import unavailable
from tests.fixtures.stack import Stack, start_stack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "artifacts" / "console"
NEEDLE = "2024-03-07T10:15:00 ERROR payment gateway declined order ORD-77341 (code E_CARD_DECLINED)"
LINES = [f"2024-03-07T10:{i // 60 % 60:02d}:{i % 60:02d} INFO worker-{i % 7} processed batch {i}" for i in range(4_400)]
LINES[2_721] = NEEDLE
EXTRACT = "the payment error for order ORD-77341"


@pytest.fixture(scope="module")
def console_stack(redis_url: str, offline_model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack whose model holds 4,000 tokens: this log is 32+ chunks, one tree a screen can show."""
    root = tmp_path_factory.mktemp("console-stack")
    env = {
        "TOOLOUT_BLOB_STORE": f"file://{root / 'blobs'}",
        "TOOLOUT_MODEL_CONTEXT_TOKENS": "4000",
        "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "300",
    }
    stack = start_stack("console", redis_url, offline_model_url, env, root / "logs")
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        unavailable("no chromium to drive (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
        )
        yield launched
        launched.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_job_is_watched_live_its_chunk_opened_and_two_modes_compared(console_stack: Stack, browser, tmp_path) -> None:
    log = tmp_path / "payments.log"
    log.write_text("\n".join(LINES) + "\n")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{console_stack.api_url}/console/")
    page.click("#new-session")
    page.wait_for_selector("#session:not([hidden])")
    page.set_input_files("#upload-file", str(log))
    page.fill("#tool-name", "logs.fetch")
    page.click("#upload button")
    page.click("#outputs a")
    page.wait_for_selector("#output-stats:has-text('tokens')")
    page.fill("#extract-text", EXTRACT)
    page.select_option("#extract-mode", "full-chunked")
    page.click("#extract button")

    first = page.locator(".job").nth(0)
    first.locator(".maps .node").first.wait_for()
    first.locator(".maps .node.done, .maps .node.found").first.wait_for()  # a chunk settled while the job runs
    page.wait_for_selector(".job[data-status='succeeded']", timeout=90_000)
    job_id = first.get_attribute("data-job")
    job = httpx.get(f"{console_stack.api_url}/v1/extractions/{job_id}").json()
    nodes = first.locator(".maps .node")
    assert job["chunks_total"] >= 32 and nodes.count() == job["chunks_total"]
    first.locator(".node.answer").wait_for()  # one chunk held the needle: its answer is the job's, no reduce call
    shot(page, "full-chunked-tree")
    if os.environ.get("TOOLOUT_CONSOLE_SCREENSHOT"):
        first.screenshot(path=os.environ["TOOLOUT_CONSOLE_SCREENSHOT"])

    found = first.locator(".maps .node.found")
    assert found.count() >= 1
    found.first.click()
    detail = first.locator(".node-text").inner_text()
    assert "ORD-77341" in detail and "chunk" in detail and "bytes" in detail
    assert "ORD-77341" in first.locator(".result-text").inner_text()

    sources = first.locator(".job-sources .source")  # the answer's evidence: click a source, see its lines
    sources.first.wait_for()
    assert sources.count() == len(job["evidence"]) and all(item["verified"] for item in job["evidence"])
    cited = next(i for i, item in enumerate(job["evidence"]) if "ORD-77341" in item["quote"])
    assert sources.nth(cited).inner_text().startswith("L2722 ✓ chunk")
    sources.nth(cited).click()
    marked = first.locator(".source-lines mark.cited")
    marked.wait_for()
    assert marked.count() == 1 and marked.get_attribute("data-line") == "2722"
    assert NEEDLE in marked.inner_text() and "2721\t" in first.locator(".source-lines").inner_text()
    shot(page, "answer-sources")

    first.locator(".rerun-mode").select_option("read-grep")
    first.locator(".rerun button").click()
    second = page.locator(".job").nth(1)
    second.wait_for()
    page.wait_for_selector(".job >> nth=1 >> xpath=self::*[@data-status='succeeded']", timeout=90_000)
    assert second.locator(".job-title").inner_text().startswith("read-grep")
    assert second.locator(".steps li").count() >= 1 and "Grep" in second.locator(".steps").inner_text()
    assert "ORD-77341" in second.locator(".result-text").inner_text()
    shot(page, "two-modes-side-by-side")
    page.close()


def test_the_console_can_be_switched_off(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from tests.fixtures.api_server import api_settings, build_test_app
    from workers.testing import RecordingDispatcher

    for enabled, status in ((True, 200), (False, 404)):
        app = build_test_app(api_settings("memory://", "memory://", console=enabled), RecordingDispatcher())
        with TestClient(app) as client:
            page = client.get("/console/")
            assert page.status_code == status
            if enabled:
                assert "toolout console" in page.text and client.get("/console/console.js").status_code == 200
                assert "http" not in page.text.replace('href="console.css"', ""), "nothing fetched from elsewhere"
