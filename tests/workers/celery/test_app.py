"""The Celery app a broker URL gets: Redis keeps kombu's defaults; RabbitMQ gets quorum queues, confirmed
publishes and topic exchanges (Celery's native delayed delivery needs them for the webhook retries)."""

from __future__ import annotations

from infra.settings import Settings
from workers.celery.app import QUEUES, TASK_ROUTES, create_celery, is_amqp


def app_for(broker_url: str):
    return create_celery(Settings(redis_url="redis://127.0.0.1:6379/15", broker_url=broker_url))


def test_only_amqp_urls_are_rabbitmq() -> None:
    assert is_amqp("amqp://guest:guest@127.0.0.1:5672//") and is_amqp("amqps://h/v") and is_amqp("pyamqp://h")
    assert not is_amqp("redis://127.0.0.1:6379/0") and not is_amqp("rediss://h/0") and not is_amqp("memory://")


def test_rabbitmq_declares_a_quorum_queue_per_kind_of_work_behind_a_topic_exchange() -> None:
    conf = app_for("amqp://guest:guest@127.0.0.1:5672/toolout").conf
    queues = {queue.name: queue for queue in conf.task_queues}
    assert set(queues) == set(QUEUES) >= {route["queue"] for route in TASK_ROUTES.values()}
    for name, queue in queues.items():
        assert queue.queue_arguments == {"x-queue-type": "quorum"}, name
        assert (queue.exchange.name, queue.exchange.type, queue.routing_key) == (name, "topic", name)
    assert conf.broker_transport_options == {"confirm_publish": True}
    assert conf.task_default_queue_type == "quorum" and conf.task_default_exchange_type == "topic"
    assert conf.task_acks_late and conf.task_reject_on_worker_lost  # as on Redis: a dead worker's task comes back


def test_redis_keeps_its_visibility_timeout_and_kombus_own_queues() -> None:
    conf = app_for("redis://127.0.0.1:6379/14").conf
    assert conf.task_queues is None and conf.task_default_queue_type == "classic"
    assert conf.broker_transport_options == {"visibility_timeout": Settings().visibility_timeout_seconds}
