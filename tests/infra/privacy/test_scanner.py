"""Every credential format is found and replaced, by both engines alike; documents stay well formed."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.privacy.rules import RULES
from infra.privacy.scanner import HyperscanScanner, Re2Scanner, SecretScanner
from tests.fixtures.planted_secrets import planted

SCANNERS = [HyperscanScanner(), Re2Scanner()]
REQUIRED = {
    "aws_access_key", "aws_secret_key", "gcp_api_key", "azure_storage_key", "azure_client_secret", "github_token",
    "gitlab_token", "slack_token", "npm_token", "stripe_key", "sendgrid_key", "twilio_key", "openai_key", "jwt",
    "pem_private_key", "basic_auth_url", "password", "authorization",
}  # fmt: skip


def test_the_rules_cover_every_kind_the_privacy_page_names() -> None:
    assert {rule.kind for rule in RULES} >= REQUIRED
    assert {item.kind for item in planted()} >= REQUIRED


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: s.name)
def test_each_planted_secret_is_found_and_replaced_by_its_kind(scanner: SecretScanner) -> None:
    for item in planted():
        counts: Counter[str] = Counter()
        line = item.line.encode()
        out = scanner.redact(line, counts).decode()
        assert scanner.holds_secret(line), item.kind
        assert item.secret not in out, (item.kind, out)
        assert f"[REDACTED:{item.kind}]" in out and counts[item.kind] == 1, (item.kind, out, counts)


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: s.name)
def test_ordinary_identifiers_are_not_secrets(scanner: SecretScanner) -> None:
    ordinary = [
        "request 3f2b8c1e-9a4d-4c2e-8f1a-0b9c8d7e6f5a took 12 ms",
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "AKIA is a prefix; AKIA123 is too short",
        "password=\"\" and password: ''",
        "the password field must be at least 8 characters",
        "Authorization: [REDACTED:jwt]",
        "git@github.com:org/repo.git and https://example.com/a:b",
        "sk-this-is-not-a-key",
    ]
    for text in ordinary:
        counts: Counter[str] = Counter()
        assert scanner.redact(text.encode(), counts) == text.encode() and not counts, (text, counts)


def test_a_json_document_stays_valid_with_its_secrets_replaced() -> None:
    items = planted()
    document = json.dumps([{"id": n, "kind": item.kind, "config": item.line} for n, item in enumerate(items)])
    counts: Counter[str] = Counter()
    redacted = json.loads(HyperscanScanner().redact(document.encode(), counts))
    assert [row["id"] for row in redacted] == list(range(len(items)))
    assert not any(item.secret in json.dumps(redacted) for item in items)
    assert sum(counts.values()) >= len(items)


def test_a_csv_keeps_its_rows_and_columns() -> None:
    items = planted()
    out = io.StringIO()
    csv.writer(out).writerows([[n, item.kind, item.line] for n, item in enumerate(items)])
    redacted = HyperscanScanner().redact(out.getvalue().encode(), Counter()).decode()
    rows = list(csv.reader(io.StringIO(redacted)))
    assert [len(row) for row in rows] == [3] * len(items)
    assert [row[1] for row in rows] == [item.kind for item in items]
    assert not any(item.secret in redacted for item in items)


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: s.name)
def test_one_scanner_serves_several_threads_at_once(scanner: SecretScanner) -> None:
    """The API stores uploads on several threads, all through the process's one scanner."""
    secret = planted()[0]
    document = b"x" * 2_000_000 + secret.line.encode()
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda _: scanner.holds_secret(document), range(16)))
        redacted = list(pool.map(lambda _: scanner.redact(document, Counter()), range(8)))
    assert found == [True] * 16
    assert all(secret.secret.encode() not in text for text in redacted)
