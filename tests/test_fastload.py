"""idem.sim.fastload: what it makes cheaper stays the same."""
from __future__ import annotations

import gc

import pytest
from moto.core.base_backend import BaseBackend
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends

from idem.sim import fastload
from idem.sim.world import ACCOUNT, REGION, LocalWorld, ensure_moto


def test_the_url_table_is_built_once_per_service_and_is_moto_s_own():
    ensure_moto()
    s3 = s3_backends[ACCOUNT]["aws"]
    dynamodb = dynamodb_backends[ACCOUNT][REGION]
    assert BaseBackend.urls.fget.__name__ == "cached_urls"
    first = s3.urls
    assert s3.urls is first  # kept, not rebuilt
    built = fastload.built_by_moto(s3)  # moto's own builder, run now
    assert built == first and built is not first
    assert dynamodb.urls is not first and set(dynamodb.urls) != set(first)  # one table per service


def test_the_url_table_follows_the_settings_it_depends_on(monkeypatch: pytest.MonkeyPatch):
    ensure_moto()
    s3 = s3_backends[ACCOUNT]["aws"]
    before = s3.urls
    monkeypatch.setenv("MOTO_S3_CUSTOM_ENDPOINTS", "https://storage.example.test")
    custom = s3.urls
    assert custom is not before
    assert any("storage.example.test" in url for url in custom)
    assert not any("storage.example.test" in url for url in before)
    monkeypatch.delenv("MOTO_S3_CUSTOM_ENDPOINTS")
    assert s3.urls is before


def test_installing_twice_keeps_one_cache():
    ensure_moto()
    installed = BaseBackend.urls
    fastload.cache_moto_url_tables()
    assert BaseBackend.urls is installed


def test_requests_still_reach_moto_through_the_kept_tables():
    with LocalWorld(prefix="fastload") as world:
        world.s3.put_object(Bucket=world.bucket, Key="a b ü.json", Body=b"{}")
        assert world.s3.get_object(Bucket=world.bucket, Key="a b ü.json")["Body"].read() == b"{}"
        world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "x"}})
        assert world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "x"}})["Item"]
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody="m")
        assert world.sqs.receive_message(QueueUrl=world.queue_url)["Messages"][0]["Body"] == "m"


def test_fewer_collections_puts_the_thresholds_back_even_on_an_error():
    saved = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with fastload.fewer_collections():
            assert gc.get_threshold() == fastload.BATCH_GC_THRESHOLDS
            raise RuntimeError("a batch that fails")
    assert gc.get_threshold() == saved
