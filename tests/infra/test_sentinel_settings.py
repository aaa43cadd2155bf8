"""Sentinel settings: addresses are checked at start-up, and every Redis client of a process follows the master
the Sentinels name — the stores' (redis-py's Sentinel) and the Redis broker's (kombu's sentinel transport)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from redis.sentinel import SentinelConnectionPool

from infra.redis.client import connect, kombu_sentinel_url
from infra.settings import Settings, parse_sentinels
from workers.celery.app import create_celery


def test_sentinel_addresses_parse_and_a_bad_one_is_a_clear_error() -> None:
    assert parse_sentinels("10.0.0.5:26379, sentinel-b:26380") == [("10.0.0.5", 26379), ("sentinel-b", 26380)]
    with pytest.raises(ValidationError, match=r"'10\.0\.0\.5' is not host:port"):
        Settings(redis_sentinels="10.0.0.5")
    assert Settings(redis_sentinels="").sentinels == []


def test_the_stores_client_asks_the_sentinels_for_the_master() -> None:
    client = connect("redis://:s3cret@ignored:6379/4", sentinels=[("127.0.0.1", 26379)], master="toolout")
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "toolout"
    assert pool.connection_kwargs["db"] == 4 and pool.connection_kwargs["password"] == "s3cret"


def test_kombu_gets_one_sentinel_url_per_address_for_the_same_database() -> None:
    url = kombu_sentinel_url("redis://:pw@x:6379/3", [("a", 26379), ("b", 26380)])
    assert url == "sentinel://:pw@a:26379/3;sentinel://:pw@b:26380/3"


def test_the_redis_broker_follows_the_sentinels_unless_another_broker_is_set() -> None:
    sentinels = {"redis_url": "redis://h:6379/2", "redis_sentinels": "127.0.0.1:26379", "redis_sentinel_master": "m"}
    conf = create_celery(Settings(**sentinels)).conf
    assert conf.broker_url == "sentinel://127.0.0.1:26379/2"
    assert conf.broker_transport_options["master_name"] == "m"
    rabbit = create_celery(Settings(**sentinels, broker_url="amqp://guest:guest@127.0.0.1:5672/v")).conf
    assert rabbit.broker_url.startswith("amqp://")
