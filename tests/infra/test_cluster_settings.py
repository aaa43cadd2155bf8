"""`TOOLOUT_REDIS_CLUSTER`: the state on a Redis Cluster, Celery's messages on a broker of their own."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from redis.cluster import RedisCluster

from infra.redis.client import connect
from infra.settings import Settings


def test_a_cluster_without_a_broker_of_its_own_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="redis_cluster needs broker_url"):
        Settings(redis_cluster=True)


def test_a_cluster_behind_sentinels_is_refused() -> None:
    with pytest.raises(ValidationError, match="exclude each other"):
        Settings(redis_cluster=True, broker_url="amqp://guest:guest@127.0.0.1:5672", redis_sentinels="127.0.0.1:26379")


def test_the_cluster_settings_hold_with_their_own_broker() -> None:
    settings = Settings(redis_cluster=True, broker_url="amqp://guest:guest@127.0.0.1:5672")
    assert settings.celery_broker_url == "amqp://guest:guest@127.0.0.1:5672"


def test_the_stores_client_is_a_cluster_client_that_learns_the_slots_from_its_seed(redis_cluster) -> None:
    client = connect(redis_cluster.url, cluster=True)
    assert isinstance(client, RedisCluster)
    assert {node.port for node in client.get_primaries()} == set(redis_cluster.ports)
    client.set("toolout:{probe}:a", "1")
    assert client.get("toolout:{probe}:a") == "1"
    client.close()
