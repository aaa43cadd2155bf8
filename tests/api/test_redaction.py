"""Secrets in an upload over REST: the bytes kept as sent (`/content`), everything a model reads redacted
(`/lines`, `/grep`, buffer_ops, previews, `/content?redacted=true`), the counts in the record and the job,
and `redact: false` only with a reason. Inline, blob and HTML outputs alike."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.fixtures.planted_secrets import Planted, planted

pytestmark = pytest.mark.twin(
    "which text a model is handed and what the owner gets; the redacted copy's round trip through file:// and S3"
    " is tests/api/test_retention.py's and the live recording test's"
)

LOG = {"Content-Type": "text/plain", "X-Tool-Name": "logs.fetch"}


def upload(client: TestClient, data: bytes, headers: dict[str, str]) -> tuple[str, dict]:
    session = client.post("/v1/sessions").json()["id"]
    response = client.post(f"/v1/sessions/{session}/outputs", content=data, headers=headers)
    assert response.status_code == 201, response.text
    return session, response.json()


def log_of(items: list[Planted], filler: int = 0) -> bytes:
    pad = "".join(f"INFO heartbeat {n} ok\n" for n in range(filler))
    return (pad + "".join(f"ERROR {item.line}\n" for item in items)).encode()


def leaked(text: str, items: list[Planted]) -> list[str]:
    return [item.kind for item in items if item.secret in text]


def test_what_models_read_is_redacted_and_the_owner_gets_the_bytes(client: TestClient) -> None:
    items = planted()
    for data in (log_of(items), log_of(items, filler=3000)):  # inline, then a blob with its own indexes
        session, body = upload(client, data, LOG)
        handle = body["handle"]
        assert body["redaction"]["counts"] == dict(sorted(_kinds(items).items()))
        assert client.get(f"/v1/outputs/{handle}/content").content == data
        shown = [
            client.get(f"/v1/outputs/{handle}/content", params={"redacted": "true"}).text,
            client.get(f"/v1/outputs/{handle}/lines", params={"offset": 1, "limit": 5000}).text,
            client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "ERROR"}).text,
            json.dumps(client.get(f"/v1/sessions/{session}/variables").json()),
            client.post(f"/v1/sessions/{session}/buffer_ops", json={"operation": "read", "target": body["name"],
                        "start_line": 1, "end_line": 4000}).text,
        ]  # fmt: skip
        assert leaked("\n".join(shown), items) == []
        assert "[REDACTED:jwt]" in shown[0] and shown[2].count("\tERROR ") == len(items)


def test_an_html_page_is_read_as_its_redacted_text_view(client: TestClient) -> None:
    items = planted()
    page = "<html><body>" + "".join(f"<p>{item.line}</p>" for item in items) + "</body></html>"
    _, body = upload(client, page.encode(), {"Content-Type": "text/html", "X-Tool-Name": "web.fetch"})
    assert body["kind"] == "html" and body["text_view"] is not None
    lines = client.get(f"/v1/outputs/{body['handle']}/lines", params={"offset": 1, "limit": 500}).text
    assert leaked(lines, items) == [] and "[REDACTED:" in lines
    assert leaked(client.get(f"/v1/outputs/{body['handle']}/lines", params={"view": "raw"}).text, items) == []


def test_an_output_without_secrets_has_no_redacted_view(client: TestClient) -> None:
    _, body = upload(client, b"INFO all quiet\n" * 10, LOG)
    assert body["redaction"] is None


def test_a_job_counts_what_was_redacted_and_turning_it_off_needs_a_reason(client: TestClient) -> None:
    items = planted()
    _, body = upload(client, log_of(items), LOG)
    ask = {"handle": body["handle"], "extract": "the keys", "mode": "truncate"}
    job = client.post("/v1/extractions", json=ask).json()
    assert job["redact"] is True and job["redactions"] == body["redaction"]["counts"]
    refused = client.post("/v1/extractions", json={**ask, "redact": False})
    assert refused.status_code == 400 and "redact_reason" in refused.text
    unredacted = client.post("/v1/extractions", json={**ask, "redact": False, "redact_reason": "rotating keys"}).json()
    assert unredacted["redact"] is False and unredacted["redactions"] == {}


def _kinds(items: list[Planted]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return counts
