"""The Celery application and its reliability settings, built from settings (no import-time side effects).

Choices, each for a known Celery+Redis trap:
- `acks_late` + `reject_on_worker_lost`: a task whose worker dies is redelivered, not lost.
- prefetch 2 per thread: a pool thread's next map is already reserved when its current one ends, so
  a fan-out's waves follow each other without the ack -> BRPOP -> dispatch of each next message
  through the consumer thread, which a busy worker makes each wave wait on (docs/performance.md).
  The cost: a saturated worker holds up to one waiting message per thread that an idle worker on
  another host could have taken (it waits in kombu's unacked set, restored if the worker dies).
- timeouts ordered LLM < soft < hard < visibility (validated in Settings), so redelivery
  never races a task that is still legitimately running.
- no result backend (`NoResults`): nothing reads a task result, and Celery's revokes would write one per task.
- separate queues: map, reduce and agent work can be scaled or prioritised independently,
  and reduce never waits behind a backlog of map tasks (each step's queue is declared with it, `workers.job.drive`).
- on RabbitMQ (`TOOLOUT_BROKER_URL=amqp://…`): quorum queues (replicated, and their deliveries
  counted), publisher confirms (a task the API was told is queued is on the broker's disk), topic
  exchanges (Celery's native delayed delivery, for the webhook retries' countdowns, needs them on
  quorum queues). A worker that dies hands its unacked tasks back the moment its connection drops,
  instead of after the Redis transport's visibility timeout. The job state stays in Redis.

The API builds one of these only to send the first task of a job (`workers.dispatch`); a worker
process builds one in `workers.celery.main` and registers the tasks (`workers.celery.tasks`) on it.
"""

from __future__ import annotations

from typing import Any

from celery import Celery, states
from celery.backends.base import DisabledBackend
from kombu import Exchange, Queue

from infra.redis.client import kombu_sentinel_url
from infra.settings import Settings
from workers.job.drive import STEP_QUEUES, STEPS
from workers.job.steps import Map, Query, ReadGrep, ReduceGroup, ReduceStage, Start

QUEUES = (*STEP_QUEUES, "webhooks")

START, MAP, REDUCE_STAGE, REDUCE_GROUP, READ_GREP, QUERY = (
    STEPS.task_of(step) for step in (Start, Map, ReduceStage, ReduceGroup, ReadGrep, Query)
)
WEBHOOK = "toolout.deliver_webhook"
PRELOAD = "toolout.preload_tables"

TASK_ROUTES = {
    **{kind.task: {"queue": kind.queue} for kind in STEPS.kinds()},  # each step's queue, as it was declared
    PRELOAD: {"queue": "agent"},
    WEBHOOK: {"queue": "webhooks"},
}


def is_amqp(broker_url: str) -> bool:
    return broker_url.split("://", 1)[0] in {"amqp", "amqps", "pyamqp"}


def amqp_options() -> dict[str, Any]:
    """RabbitMQ: a durable quorum queue per kind of work behind a topic exchange, and confirmed publishes."""
    queues = [
        Queue(name, Exchange(name, type="topic"), routing_key=name, queue_arguments={"x-queue-type": "quorum"})
        for name in QUEUES
    ]
    return {
        "task_queues": queues,
        "task_default_exchange": "extract",
        "task_default_exchange_type": "topic",
        "task_default_routing_key": "extract",
        "task_default_queue_type": "quorum",
        "task_create_missing_queue_type": "quorum",
        "broker_transport_options": {"confirm_publish": True},
        "worker_detect_quorum_queues": True,  # quorum queues refuse a global QoS: prefetch is set per consumer
    }


class NoResults(DisabledBackend):
    """The result backend: none. No toolout task keeps a result (`ignore_result`; the fan-in is the job
    store's), yet Celery 5.7's revoke command has every worker GET each revoked task's state and SET a
    REVOKED record for it: two round trips per task per worker on each cancel, and one key per task
    left in Redis for `result_expires`. Here every task reads as pending and nothing is stored."""

    def get_state(self, task_id: str) -> str:
        return str(states.PENDING)


def sentinel_broker_options(settings: Settings) -> dict[str, Any]:
    """The Redis broker behind Sentinels: kombu asks them for the master, and again after a failover."""
    return {
        "broker_url": kombu_sentinel_url(settings.redis_url, settings.sentinels),
        "broker_transport_options": {
            "master_name": settings.redis_sentinel_master,
            "visibility_timeout": settings.visibility_timeout_seconds,
        },
    }


def create_celery(settings: Settings) -> Celery:
    broker = settings.celery_broker_url
    celery = Celery("toolout", broker=broker, backend=NoResults, set_as_current=False)
    transport = {"visibility_timeout": settings.visibility_timeout_seconds}
    celery.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=2,
        task_soft_time_limit=settings.task_soft_time_limit_seconds,
        task_time_limit=settings.task_time_limit_seconds,
        broker_transport_options=transport,
        task_routes=TASK_ROUTES,
        task_default_queue="extract",
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        task_track_started=False,
        worker_hijack_root_logger=False,
    )
    if is_amqp(broker):
        celery.conf.update(amqp_options())
    elif settings.sentinels and settings.broker_url is None:
        celery.conf.update(sentinel_broker_options(settings))
    return celery
