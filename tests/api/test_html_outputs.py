"""An HTML upload over REST: its kind and text view in the stats, the message, /lines and /grep on the text
view (raw on request), and binary content refused for extraction, on the memory twins and over HTTP on file://
and S3. Expected values come from the corpus files."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from extraction.documents.tokens import count_tokens
from extraction.evidence.citations import NUMBER_TOKENS
from infra.outputs.views import TEXT_VIEW_HEADER
from tests.fixtures.api_server import ApiServer
from tests.html_pages import MAX_TEXT_RATIO, PAGES, a_sentence, visible_tokens

HTML = {"Content-Type": "text/html; charset=utf-8", "X-Tool-Name": "web.fetch"}
JSON_ACCEPT = {"Accept": "application/json"}


@pytest.fixture()
def client(store_client: httpx.Client) -> httpx.Client:
    """Every test here on each blob store: the view is derived from the upload, then read from the store."""
    return store_client


def upload(client: httpx.Client, data: bytes, headers: dict[str, str]) -> dict:
    session = client.post("/v1/sessions").json()["id"]
    response = client.post(f"/v1/sessions/{session}/outputs", content=data, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_an_html_page_is_measured_and_announced_as_its_text(client: httpx.Client, page: Path) -> None:
    data = page.read_bytes()
    body = upload(client, data, HTML)
    view = body["text_view"]
    assert body["kind"] == "html" and body["bytes"] == len(data) and body["tokens"] == count_tokens(data.decode())
    assert view["converter"].startswith("html-to-markdown ") and view["bytes"] < len(data)
    assert view["tokens"] <= MAX_TEXT_RATIO * visible_tokens(page) < body["tokens"]
    assert f"({len(data)} bytes, {view['lines']} lines, {view['tokens']} tokens)" in body["message"]
    shown = client.get(f"/v1/outputs/{body['handle']}").json()
    assert (shown["kind"], shown["text_view"]) == ("html", view)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_grep_and_read_answer_with_the_text_view_and_say_so(client: httpx.Client, page: Path) -> None:
    handle = upload(client, page.read_bytes(), HTML)["handle"]
    sentence = a_sentence(page)
    grep = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": sentence})
    assert grep.status_code == 200 and grep.text.startswith(TEXT_VIEW_HEADER + "\n")
    number, _, line = grep.text.splitlines()[1].partition(":\t")
    read = client.get(f"/v1/outputs/{handle}/lines", params={"offset": int(number), "limit": 1}, headers=JSON_ACCEPT)
    assert read.json()["view"] == "text" and read.json()["text"].endswith(line)
    assert sentence in line and "<" not in line


def test_the_raw_markup_stays_available(client: httpx.Client) -> None:
    page = PAGES[0]
    handle = upload(client, page.read_bytes(), HTML)["handle"]
    raw = client.get(f"/v1/outputs/{handle}/lines", params={"view": "raw", "limit": 1}, headers=JSON_ACCEPT).json()
    assert raw["view"] == "raw" and raw["text"].endswith(page.read_text().splitlines()[0])
    grep = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": 'class="reference internal"', "view": "raw"})
    assert grep.status_code == 200 and not grep.text.startswith(TEXT_VIEW_HEADER)
    assert 'class="reference internal"' in grep.text
    assert client.get(f"/v1/outputs/{handle}/content").content == page.read_bytes()
    assert client.get(f"/v1/outputs/{handle}/lines", params={"view": "markup"}).status_code == 422


def test_a_job_on_the_text_view_is_estimated_at_its_tokens(client: httpx.Client) -> None:
    body = upload(client, PAGES[1].read_bytes(), HTML)
    ask = {"handle": body["handle"], "extract": "json.dumps arguments", "mode": "full-chunked"}
    text = client.post("/v1/extractions/estimate", json=ask).json()
    raw = client.post("/v1/extractions/estimate", json={**ask, "view": "raw"}).json()
    assert text["input_tokens"] < raw["input_tokens"]
    view_lines = body["text_view"]["lines"]  # each shown line-numbered for evidence: its number costs tokens too
    assert text["input_tokens"] <= MAX_TEXT_RATIO * visible_tokens(PAGES[1]) + NUMBER_TOKENS * view_lines


def test_binary_content_is_stored_but_never_extracted(client: httpx.Client) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 200
    body = upload(client, png, {"Content-Type": "image/png", "X-Tool-Name": "screenshot"})
    assert (body["kind"], body["text_view"]) == ("binary", None)
    refused = client.post("/v1/extractions", json={"handle": body["handle"], "extract": "what is shown"})
    assert refused.status_code == 400, refused.text
    assert "is binary (image/png" in refused.json()["error"]["message"]


def test_a_small_page_keeps_its_view_inline_in_its_record(client: httpx.Client) -> None:
    page = b"<html><body><h1>Hi</h1><nav>menu</nav><p>text</p></body></html>"
    handle = upload(client, page, HTML)["handle"]
    read = client.get(f"/v1/outputs/{handle}/lines")
    assert read.text.startswith(f"{TEXT_VIEW_HEADER}\n     1\t# Hi\n     2\t\n     3\ttext")


def test_plain_text_has_no_text_view_and_no_header(client: httpx.Client) -> None:
    body = upload(client, b"one\ntwo\n" * 5000, {"X-Tool-Name": "logs"})
    assert (body["kind"], body["text_view"]) == ("text", None)
    read = client.get(f"/v1/outputs/{body['handle']}/lines", params={"limit": 1})
    assert read.text.startswith("     1\tone")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_uploaded_over_http_keeps_its_text_view_on_every_blob_store(store_server: ApiServer, page: Path) -> None:
    """The real API on `file://` (where storing the spool file is a rename) and on S3: the view is derived first."""
    data = page.read_bytes()
    with store_server.client() as client:
        body = upload(client, data, HTML)
        assert body["kind"] == "html" and body["text_view"] is not None, body
        assert body["text_view"]["tokens"] <= MAX_TEXT_RATIO * visible_tokens(page)
        lines = client.get(f"/v1/outputs/{body['handle']}/lines", params={"limit": 50}, headers=JSON_ACCEPT).json()
    assert lines["view"] == "text" and "<li><a" not in lines["text"]
