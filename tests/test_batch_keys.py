"""DynamoDB refuses a whole BatchWriteItem that names one item twice (two puts of one key, or a put and
a delete of it): "DynamoDB rejects the entire batch write operation" when "You try to perform multiple
operations on the same item in the same BatchWriteItem request" or "Your request contains at least two
items with identical hash and range keys"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html). moto 5.2
refuses only two equal items; idem.sim.platform.batch_keys refuses the rest, before anything lands."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from idem.sim.world import ensure_moto, fake_client


@pytest.fixture
def tables():
    ensure_moto()
    dynamodb = fake_client("dynamodb")
    simple, composite = f"keys-{uuid.uuid4().hex[:8]}", f"pairs-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(TableName=simple, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    dynamodb.create_table(TableName=composite, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                {"AttributeName": "sk", "AttributeType": "S"}])
    yield dynamodb, simple, composite
    dynamodb.delete_table(TableName=simple)
    dynamodb.delete_table(TableName=composite)


def put(pk: str, **more: str) -> dict:
    return {"PutRequest": {"Item": {"pk": {"S": pk}, **{k: {"S": v} for k, v in more.items()}}}}


def items(dynamodb, table: str) -> list[dict]:
    return dynamodb.scan(TableName=table)["Items"]


def test_two_puts_of_one_key_with_other_attributes_are_refused_whole_and_nothing_lands(tables):
    dynamodb, simple, _ = tables
    batch = [put("line#1001", account="alice"), put("line#1001", account="bob"), put("line#1002", account="bob")]
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_write_item(RequestItems={simple: batch})
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "duplicates" in refused.value.response["Error"]["Message"]
    assert items(dynamodb, simple) == []


def test_a_put_and_a_delete_of_one_key_are_refused_whole(tables):
    dynamodb, simple, _ = tables
    dynamodb.put_item(TableName=simple, Item={"pk": {"S": "claim#1"}})
    with pytest.raises(ClientError, match="duplicates"):
        dynamodb.batch_write_item(RequestItems={simple: [put("claim#1", status="done"),
                                                          {"DeleteRequest": {"Key": {"pk": {"S": "claim#1"}}}}]})
    assert items(dynamodb, simple) == [{"pk": {"S": "claim#1"}}]


def test_items_that_share_a_partition_key_but_not_a_sort_key_are_written(tables):
    dynamodb, _, composite = tables
    dynamodb.batch_write_item(RequestItems={composite: [put("order#1001", sk="alice"), put("order#1001", sk="bob")]})
    assert len(items(dynamodb, composite)) == 2


def test_one_key_in_two_tables_is_two_items(tables):
    dynamodb, simple, composite = tables
    dynamodb.batch_write_item(RequestItems={simple: [put("x")], composite: [put("x", sk="y")]})
    assert len(items(dynamodb, simple)) == len(items(dynamodb, composite)) == 1
