"""Webhooks on the real stack: a finished (or canceled) job is POSTed from the `webhooks` Celery queue,
signed with the tenant's secret, retried with backoff after 500s."""

from __future__ import annotations

import json
import time

import httpx

from infra.webhooks.delivery import SIGNATURE_HEADER, verify
from tests.fixtures.stack import Stack
from tests.fixtures.webhook_receiver import Receiver, webhook_receiver
from toolout.devstack import datasets


def wait_for_deliveries(receiver: Receiver, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(receiver.received) < count and time.monotonic() < deadline:
        receiver.arrived.wait(0.2)
        receiver.arrived.clear()


def test_a_finished_job_is_delivered_signed_after_two_500s(local_stack: Stack) -> None:
    secret = httpx.get(f"{local_stack.api_url}/v1/webhooks/secret").json()["secret"]
    with webhook_receiver(500, 500, 200) as receiver, local_stack.client() as client:
        session = client.create_session()
        handle = client.store(session, b"ERROR disk full on db-3\nINFO ok\n" * 50)["handle"]
        job = httpx.post(
            f"{local_stack.api_url}/v1/extractions",
            json={"handle": handle, "extract": "disk errors", "mode": "truncate", "callback_url": receiver.url},
        ).json()
        finished = client.wait(job["id"], timeout=60)
        wait_for_deliveries(receiver, 3)
    assert finished["status"] == "succeeded" and len(receiver.received) == 3
    for delivery in receiver.received:
        assert verify(secret, delivery.headers[SIGNATURE_HEADER.lower()], delivery.body)
    sent = json.loads(receiver.received[-1].body)
    assert sent["type"] == "extraction.finished" and sent["job"]["id"] == job["id"]
    assert sent["job"]["result"] == finished["result"] and sent["job"]["status"] == "succeeded"


def test_a_cancel_in_the_api_is_delivered_too(local_stack: Stack) -> None:
    with webhook_receiver(200) as receiver, local_stack.client() as client:
        session = client.create_session()
        handle = client.store(session, datasets.json_orders(8 << 20))[
            "handle"
        ]  # ~25 chunks: canceled long before its end
        job = httpx.post(
            f"{local_stack.api_url}/v1/extractions",
            json={"handle": handle, "extract": "everything", "mode": "full-chunked", "callback_url": receiver.url},
        ).json()
        client.cancel(job["id"])
        wait_for_deliveries(receiver, 1)
    [delivery] = receiver.received
    assert json.loads(delivery.body)["job"]["status"] == "canceled"
