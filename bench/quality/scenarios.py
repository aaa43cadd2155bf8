"""The quality harness's scenarios: generated tool outputs, a question each, and a checker on the answer.

Every output is generated from a fixed seed at the size asked for, and every expected answer is
computed from the generated records themselves (never written by hand), so a scenario is right at
any size. A checker looks at the answer text only: the expected ids and numbers must appear (digits
compared without thousands separators), and an absent-fact answer must say nothing was found.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extraction.texts.report import says_not_found
from toolout.devstack import datasets

COUNT_STATUS, COUNT_REQUEST = datasets.ORDER_COUNT_STATUS, datasets.ORDER_COUNT_REQUEST
"""The demo's count question (`make demo` checks the same numbers on its 20 MB JSON)."""


@dataclass(frozen=True)
class Case:
    """One generated output and what a right answer to its question contains."""

    content: bytes
    must: tuple[str, ...] = ()
    absent: bool = False
    near: tuple[float, ...] = ()
    """Computed non-integers (an average, a sum of decimals): stated at any precision of one decimal or more."""

    def check(self, answer: str) -> bool:
        """Right when every expected value appears (absent facts: when the answer says nothing was found)."""
        body = answer_body(answer)
        if self.absent:
            return says_nothing_found(body)
        text = _plain_numbers(body).lower()
        exact = all(_mentions(text, _plain_numbers(value).lower()) for value in self.must)
        return exact and all(_states(text, value) for value in self.near)


@dataclass(frozen=True)
class Scenario:
    """A question about a generated output; `exact`: the query strategy is expected to get it right."""

    name: str
    form: str
    ask: str
    request: str
    build: Callable[[int], Case]
    tool_name: str
    content_type: str = "application/json"
    exact: bool = False
    source: str = "generated"
    """`generated` (made here, from a seed) or `corpus` (a real file: bench/quality/corpus.py)."""
    quick: bool = True
    """In `--quick`, the CI subset."""

    @property
    def kind(self) -> str:
        """The row of the per-kind table: the content's form and where it came from."""
        return f"{self.form} ({self.source})"


def answer_body(answer: str) -> str:
    """The answer without toolout's ABSTRACT header (its handle and tool name are not the answer)."""
    first, _, rest = answer.partition("\n\n")
    return rest if first.startswith(("ABSTRACT FROM TOOL OUTPUT", "TOOL_OUTPUT FAILED")) else answer


_NOTHING = re.compile(
    r"\b(no (matching|such|relevant|order|record|row|entry|data)|not found|does not (appear|exist))\b", re.I
)


def says_nothing_found(body: str) -> bool:
    return says_not_found(body.strip()) or _NOTHING.search(body) is not None


def _plain_numbers(text: str) -> str:
    """1,234,567 and 1 234 567 → 1234567, so a count written either way matches."""
    return re.sub(r"(?<=\d)[, _](?=\d{3}\b)", "", text)


def _mentions(text: str, value: str) -> bool:
    """`value` appears as a whole token: 12 is not found inside 4123."""
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.(\d+)(?!\w|\.\d)")


def _states(text: str, value: float) -> bool:
    """A decimal in `text` is `value` rounded to that decimal's own precision (54.5 and 54.47 both state 54.4712)."""
    return any(abs(float(m.group(0)) - value) <= 0.5 * 10 ** -len(m.group(1)) + 1e-9 for m in _DECIMAL.finditer(text))


def _json_array(records: list[dict[str, Any]]) -> bytes:
    return json.dumps(records, separators=(",", ":")).encode()


# ---------------------------------------------------------------- orders (the demo's JSON array)


def _orders(size: int) -> tuple[bytes, list[dict[str, Any]]]:
    data = b"".join(datasets.json_orders(size))
    return data, json.loads(data)


def orders_lookup(size: int) -> Case:
    data, _ = _orders(size)
    return Case(data, ("ORD-77731", "card declined"))


def orders_count(size: int) -> Case:
    data, orders = _orders(size)
    hits = [o for o in orders if o["status"] == COUNT_STATUS]
    return Case(data, (str(len(hits)), str(sum(o["total_cents"] for o in hits))))


def orders_top3(size: int) -> Case:
    data, orders = _orders(size)
    top = sorted(orders, key=lambda o: o["total_cents"], reverse=True)[:3]
    return Case(data, tuple(o["id"] for o in top))


def orders_absent(size: int) -> Case:
    data, _ = _orders(size)
    return Case(data, absent=True)


# ---------------------------------------------------------------- users: a nested JSON object

PLANS = ["free", "team", "business", "free", "team", "enterprise"]
COUNTRIES = ["PT", "JP", "US", "KE", "EE", "BR", "VN", "CA", "AU", "NO"]
PLANTED_EMAIL = "mira.oyelaran@kestrel-labs.example"


def _users(size: int) -> tuple[bytes, list[dict[str, Any]]]:
    rng = random.Random(19)
    users: list[dict[str, Any]] = []
    written = 0
    while written < size:
        n = len(users)
        email = PLANTED_EMAIL if n == int(size / 500 * 0.6) else f"user{n}@example.com"
        user = {
            "id": f"U-{50000 + n}",
            "email": email,
            "profile": {"name": f"user {n}", "address": {"country": rng.choice(COUNTRIES), "zip": f"{n % 99999:05d}"}},
            "subscription": {"plan": rng.choice(PLANS), "seats": rng.randint(1, 200)},
            "roles": rng.sample(["viewer", "editor", "admin", "billing"], rng.randint(1, 2)),
        }
        users.append(user)
        written += len(json.dumps(user)) + 1
    document = {"meta": {"page": 1, "generated": "2026-11-26"}, "data": {"results": users, "total": len(users)}}
    return json.dumps(document, indent=1).encode(), users


def users_lookup(size: int) -> Case:
    data, users = _users(size)
    user = next(u for u in users if u["email"] == PLANTED_EMAIL)
    return Case(data, (user["id"], user["profile"]["address"]["country"]))


def users_count(size: int) -> Case:
    data, users = _users(size)
    return Case(data, (str(sum(u["subscription"]["plan"] == "enterprise" for u in users)),))


# ---------------------------------------------------------------- events: NDJSON

EVENT_TYPES = ["page_view", "page_view", "add_to_cart", "checkout_started", "checkout_done", "checkout_failed"]
PLANTED_TRACE = "tr-5f1c9e0a77"


def _events(size: int) -> tuple[bytes, list[dict[str, Any]]]:
    rng = random.Random(23)
    lines: list[str] = []
    events: list[dict[str, Any]] = []
    written = 0
    while written < size:
        n = len(events)
        event: dict[str, Any] = {
            "ts": f"2026-11-{1 + n // 50000 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
            "type": rng.choice(EVENT_TYPES),
            "user": f"u{rng.randrange(10**5):05d}",
            "trace_id": f"tr-{rng.getrandbits(40):010x}",
            "props": {"path": f"/p/{rng.randrange(500)}", "ms": rng.randrange(2, 900)},
        }
        if n == int(size / 300 * 0.7):  # planted about 70% in
            event |= {"trace_id": PLANTED_TRACE, "type": "checkout_failed", "user": "u77777"}
            event["props"] = {"path": "/checkout", "ms": 30001, "error": "gateway timeout from psp-eu-2"}
        events.append(event)
        lines.append(json.dumps(event, separators=(",", ":")))
        written += len(lines[-1]) + 1
    return ("\n".join(lines) + "\n").encode(), events


def events_lookup(size: int) -> Case:
    data, _ = _events(size)
    return Case(data, ("u77777", "gateway timeout"))


def events_count(size: int) -> Case:
    data, events = _events(size)
    return Case(data, (str(sum(e["type"] == "checkout_failed" for e in events)),))


# ---------------------------------------------------------------- sales: CSV

REGIONS = ["Oceania", "EMEA", "LATAM", "NA-East", "NA-West", "APAC"]
PLANTED_SKU = "SKU-4242-X"


def _sales(size: int) -> tuple[bytes, list[dict[str, Any]]]:
    rng = random.Random(29)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sale_id", "sku", "region", "warehouse", "qty", "amount_cents"])
    rows: list[dict[str, Any]] = []
    while out.tell() < size:
        n = len(rows)
        sku = PLANTED_SKU if n == int(size / 60 * 0.4) else f"SKU-{rng.randrange(10**4):04d}"
        row = {
            "sale_id": 700000 + n,
            "sku": sku,
            "region": rng.choice(REGIONS),
            "warehouse": "WH-Kaunas-3" if sku == PLANTED_SKU else f"WH-{rng.randrange(40):02d}",
            "qty": rng.randint(1, 12),
            "amount_cents": rng.randrange(100, 90_000),
        }
        rows.append(row)
        writer.writerow(row.values())
    return out.getvalue().encode(), rows


def sales_lookup(size: int) -> Case:
    data, rows = _sales(size)
    row = next(r for r in rows if r["sku"] == PLANTED_SKU)
    return Case(data, ("WH-Kaunas-3", str(row["amount_cents"])))


def sales_sum(size: int) -> Case:
    data, rows = _sales(size)
    hits = [r for r in rows if r["region"] == "Oceania"]
    return Case(data, (str(len(hits)), str(sum(r["amount_cents"] for r in hits))))


# ---------------------------------------------------------------- a service log (text)


def _log(size: int) -> bytes:
    return b"".join(datasets.service_log(size))


def log_incidents(size: int) -> Case:
    return Case(_log(size), ("INV-9001", "INV-9002", "INV-9003"))


def log_warn_count(size: int) -> Case:
    data = _log(size)
    return Case(data, (str(sum(1 for line in data.splitlines() if b" WARN " in line)),))


def scenarios() -> list[Scenario]:
    """The dozen, in the order the table shows them."""
    orders = "orders.list"
    return [
        Scenario(
            "orders-lookup", "JSON array", "lookup", datasets.ORDER_NEEDLE.request, orders_lookup, orders, exact=True
        ),
        Scenario("orders-count", "JSON array", "count+sum", COUNT_REQUEST, orders_count, orders, exact=True),
        Scenario(
            "orders-top3",
            "JSON array",
            "top-N",
            "Which 3 orders have the highest total_cents? Give their ids.",
            orders_top3,
            orders,
        ),
        Scenario(
            "orders-absent",
            "JSON array",
            "absent fact",
            "Find the order with id ORD-55555: give its customer and status.",
            orders_absent,
            orders,
            exact=True,
        ),
        Scenario(
            "users-lookup",
            "nested JSON",
            "lookup",
            f"Find the user with email {PLANTED_EMAIL}: give their id and country.",
            users_lookup,
            "crm.users",
            exact=True,
        ),
        Scenario(
            "users-count",
            "nested JSON",
            "count",
            "How many users are on the enterprise plan?",
            users_count,
            "crm.users",
            exact=True,
        ),
        Scenario(
            "events-lookup",
            "NDJSON",
            "lookup",
            f"Find the event with trace_id {PLANTED_TRACE}: its user and the error.",
            events_lookup,
            "events.export",
            "application/x-ndjson",
            exact=True,
        ),
        Scenario(
            "events-count",
            "NDJSON",
            "count",
            "How many events have type checkout_failed?",
            events_count,
            "events.export",
            "application/x-ndjson",
            exact=True,
        ),
        Scenario(
            "sales-lookup",
            "CSV",
            "lookup",
            f"Find the sale of sku {PLANTED_SKU}: its warehouse and amount_cents.",
            sales_lookup,
            "sales.csv",
            "text/csv",
            exact=True,
        ),
        Scenario(
            "sales-sum",
            "CSV",
            "count+sum",
            "How many sales have region Oceania, and what is their total amount_cents?",
            sales_sum,
            "sales.csv",
            "text/csv",
            exact=True,
        ),
        Scenario(
            "log-incidents", "log", "lookup", datasets.POOL_INCIDENT.request, log_incidents, "logs.fetch", "text/plain"
        ),
        Scenario(
            "log-warn-count",
            "log",
            "count",
            "How many WARN lines does the log have?",
            log_warn_count,
            "logs.fetch",
            "text/plain",
        ),
    ]
