"""Webhook delivery as the workers run it: one attempt per call, backoff doubling, given up when it cannot help."""

from __future__ import annotations

import json

import pytest

from extraction.protocols import LLMReply
from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus, new_job
from infra.webhooks.delivery import SIGNATURE_HEADER, tenant_secret, verify
from tests.fixtures.webhook_receiver import webhook_receiver
from tests.workers.conftest import store_output
from workers.job.webhooks import deliver_once
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin("webhook delivery and retries after a job ends; no stored content is read")

HOOKS = {"webhook_secret": "master", "webhook_allow_private": True, "webhook_retry_base_seconds": 0.05}


def finished_job(make_runtime, url: str | None, **settings):
    rt = make_runtime(ScriptedLLM(lambda m, t: LLMReply(content="unused")), **{**HOOKS, **settings})
    output = store_output(rt, b"line one\nline two\n")
    job = rt.jobs.records.create(new_job(output, "errors", "truncate", callback_url=url))
    rt.jobs.records.finish(job.id, JobStatus.SUCCEEDED, result="ABSTRACT …")
    return rt, job


def test_a_failing_receiver_gets_doubling_delays_until_the_attempts_run_out(make_runtime) -> None:
    with webhook_receiver(500) as receiver:
        rt, job = finished_job(make_runtime, receiver.url, webhook_max_attempts=3)
        delays = [deliver_once(rt.settings, rt.jobs, job.id, attempt).retry_in for attempt in (1, 2, 3)]
    assert delays == [0.05, 0.1, None] and len(receiver.received) == 3


def test_a_delivered_or_refused_webhook_is_not_retried(make_runtime) -> None:
    with webhook_receiver(204) as ok, webhook_receiver(400) as refused:
        rt, job = finished_job(make_runtime, ok.url)
        assert deliver_once(rt.settings, rt.jobs, job.id, 1).retry_in is None
        rt, job = finished_job(make_runtime, refused.url)
        assert deliver_once(rt.settings, rt.jobs, job.id, 1).retry_in is None
    assert len(ok.received) == len(refused.received) == 1


def test_nothing_is_sent_without_a_url_a_secret_or_a_public_target(make_runtime) -> None:
    with webhook_receiver(200) as receiver:
        for url, settings in (
            (None, {}),
            (receiver.url, {"webhook_secret": None}),
            (receiver.url, {"webhook_allow_private": False}),
        ):
            rt, job = finished_job(make_runtime, url, **settings)
            attempt = deliver_once(rt.settings, rt.jobs, job.id, 1)
            assert (attempt.delivery, attempt.retry_in) == (None, None)
    assert receiver.received == []


def test_the_local_dispatcher_delivers_when_a_job_ends_retrying_in_the_background(make_runtime) -> None:
    with webhook_receiver(502, 502, 200) as receiver:
        rt = make_runtime(ScriptedLLM(lambda m, t: LLMReply(content="unused")), **HOOKS)
        dispatcher = LocalDispatcher(rt, concurrency=2)
        rt.jobs.records.listen_finished(dispatcher.finished)
        job = rt.jobs.records.create(
            new_job(store_output(rt, b"a\nb\n"), "errors", "truncate", callback_url=receiver.url)
        )
        dispatcher.run(job.id)
        for _ in range(100):
            if len(receiver.received) == 3:
                break
            receiver.arrived.wait(0.1)
            receiver.arrived.clear()
        dispatcher.close()
    assert len(receiver.received) == 3
    last = receiver.received[-1]
    assert verify(tenant_secret("master", "dev"), last.headers[SIGNATURE_HEADER.lower()], last.body)
    sent = json.loads(last.body)
    assert sent["type"] == "extraction.finished" and sent["job"]["id"] == job.id
    assert sent["job"]["status"] == "succeeded" and "nonce" not in sent["job"]
