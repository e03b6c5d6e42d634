"""Capacity per request: DynamoDB's billing rules, applied to requests made on moto.

Each test builds its tables in process (`moto.mock_aws`, fake credentials) and checks the
request units `idem.cost.capacity` computes. Where moto 5.2 reports ConsumedCapacity too,
`test_moto_agrees` checks the two agree and `test_moto_differs` pins, measured, where moto's
constant figures part from DynamoDB's rules.
"""
from __future__ import annotations

import contextlib

from typing import Any, Iterator

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from idem.cost import capacity as cap
from idem.cost.capacity import item_size, number_size, read_units, write_units
from idem.cost.recorder import CapacityRecorder

TABLE = "ledger"
FAKE = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def sized(pk: str, size: int, **extra: dict[str, Any]) -> dict[str, Any]:
    """An item of exactly `size` bytes by DynamoDB's rules: `pk`, `extra`, and padding."""
    item = {"pk": {"S": pk}, **extra}
    pad = size - item_size(item) - len("pad")
    assert pad >= 0, f"{size} bytes is too small for {item}"
    item["pad"] = {"S": "x" * pad}
    assert item_size(item) == size
    return item


def create_table(client: Any, name: str = TABLE, sort_key: bool = False,
                 index: dict[str, Any] | None = None) -> None:
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    if sort_key:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attributes.append({"AttributeName": "sk", "AttributeType": "S"})
    extra: dict[str, Any] = {}
    if index:
        attributes.append({"AttributeName": "g", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [{"IndexName": "by_g", "KeySchema": [
            {"AttributeName": "g", "KeyType": "HASH"}], "Projection": index}]
    client.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=attributes,
                        BillingMode="PAY_PER_REQUEST", **extra)


@contextlib.contextmanager
def fresh_dynamodb() -> Iterator[Any]:
    """moto's DynamoDB, leaving no table behind: a process may already run moto for other tests."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", **FAKE)
        before = set(dynamodb.list_tables()["TableNames"])
        try:
            yield dynamodb
        finally:
            for name in set(dynamodb.list_tables()["TableNames"]) - before:
                dynamodb.delete_table(TableName=name)


@pytest.fixture
def client() -> Iterator[Any]:
    with fresh_dynamodb() as dynamodb:
        create_table(dynamodb)
        yield dynamodb


@pytest.fixture
def meter(client: Any) -> Iterator[CapacityRecorder]:
    with CapacityRecorder(client) as recorder:
        yield recorder


def last(meter: CapacityRecorder) -> cap.RequestCost:
    return meter.requests[-1]


def key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}}


# -- item sizes ------------------------------------------------------------------------------------
def test_strings_count_utf8_bytes_and_names_count_too() -> None:
    assert item_size({"name": {"S": "héllo"}}) == 4 + 6  # é is two bytes in UTF-8
    assert item_size({"é": {"S": ""}}) == 2


@pytest.mark.parametrize("text, size", [
    ("7", 2), ("12", 2), ("123", 3), ("12345", 4), ("-123.45", 4),  # 1 byte per 2 digits, + 1
    ("1000", 2), ("0.00120", 2), ("1E+3", 2),  # leading and trailing zeros are trimmed
    ("0", 2), ("9" * 38, 20),
])
def test_numbers_cost_a_byte_per_two_significant_digits_plus_one(text: str, size: int) -> None:
    assert number_size(text) == size
    assert item_size({"n": {"N": text}}) == 1 + size


def test_binary_booleans_and_null() -> None:
    assert item_size({"b": {"B": b"\x00\x01\x02"}}) == 1 + 3  # raw bytes, not base64
    assert item_size({"ok": {"BOOL": False}}) == 2 + 1
    assert item_size({"n": {"NULL": True}}) == 1 + 1


def test_lists_and_maps_cost_3_bytes_plus_1_per_element() -> None:
    assert item_size({"m": {"M": {}}}) == 1 + 3
    assert item_size({"l": {"L": []}}) == 1 + 3
    # map: 3 + per element (1 + name + value): (1 + 1 + 2) + (1 + 1 + 2)
    assert item_size({"m": {"M": {"a": {"S": "xy"}, "b": {"N": "7"}}}}) == 1 + 3 + 4 + 4
    # list: 3 + per element (1 + value): (1 + 2) + (1 + 2)
    assert item_size({"l": {"L": [{"S": "ab"}, {"N": "10"}]}}) == 1 + 3 + 3 + 3
    nested = {"m": {"M": {"l": {"L": [{"BOOL": True}]}}}}  # 3 + (1 + 1 + (3 + (1 + 1)))
    assert item_size(nested) == 1 + 3 + 1 + 1 + 3 + 2
    assert item_size(None) == 0


def test_units_round_up_and_never_fall_below_one() -> None:
    assert [write_units(n) for n in (0, 500, 1024, 1025, 1600)] == [1, 1, 1, 2, 2]
    assert write_units(2048, transactional=True) == 4  # the guide: 2 KB, transactional: 4
    assert read_units(3500, consistent=True) == 1  # "3,500-byte item ... same as a 4 KB item"
    assert read_units(10 * 1024, consistent=True) == 3  # "10 KB ... rounds the item size to 12 KB"
    assert read_units(8 * 1024, consistent=False) == 1  # "8 KB ... 1 read unit ... eventually consistent"
    assert read_units(8 * 1024, consistent=True, transactional=True) == 4
    assert read_units(0, consistent=False) == 0.5


# -- writes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("size, wru", [(900, 1), (1024, 1), (1025, 2), (1100, 2), (3000, 3)])
def test_a_put_costs_1_wru_per_started_kb(client: Any, meter: CapacityRecorder, size: int,
                                          wru: int) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", size))
    assert (last(meter).wru, last(meter).rru, last(meter).outcome) == (wru, 0, cap.OK)
    assert last(meter).item_bytes == (size,)


def test_a_put_over_a_larger_item_bills_the_larger(client: Any, meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 2500))
    client.put_item(TableName=TABLE, Item=sized("a", 100))
    assert last(meter).wru == 3


def test_a_failed_conditional_put_still_costs(client: Any, meter: CapacityRecorder) -> None:
    def put_if_absent(item: dict[str, Any]) -> None:
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):
            client.put_item(TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(pk)")

    client.put_item(TableName=TABLE, Item=sized("small", 500))
    client.put_item(TableName=TABLE, Item=sized("large", 2500))
    put_if_absent(sized("small", 300))
    assert (last(meter).outcome, last(meter).wru) == (cap.CONDITION_FAILED, 1)
    put_if_absent(sized("large", 300))
    assert last(meter).wru == 3  # billed on the existing item's size


def test_a_failed_condition_on_a_missing_item_costs_one(client: Any, meter: CapacityRecorder) -> None:
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        client.update_item(TableName=TABLE, Key=key("ghost"), UpdateExpression="SET n = :n",
                           ConditionExpression="attribute_exists(pk)",
                           ExpressionAttributeValues={":n": {"N": "1"}})
    cost = last(meter)
    assert (cost.outcome, cost.wru, cost.item_bytes) == (cap.CONDITION_FAILED, 1, (0,))


def test_an_update_that_grows_an_item_past_1_kb_costs_2(client: Any, meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 900))
    client.update_item(TableName=TABLE, Key=key("a"), UpdateExpression="SET more = :more",
                       ExpressionAttributeValues={":more": {"S": "y" * 300}})
    assert (last(meter).wru, last(meter).item_bytes) == (2, (900 + 4 + 300,))


def test_an_update_that_shrinks_an_item_bills_its_size_before(client: Any,
                                                                meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 1500))
    client.update_item(TableName=TABLE, Key=key("a"), UpdateExpression="REMOVE #pad",
                       ExpressionAttributeNames={"#pad": "pad"})
    assert last(meter).wru == 2


def test_a_delete_bills_the_deleted_item_and_ttl_deletions_are_free(client: Any,
                                                                   meter: CapacityRecorder) -> None:
    for pk in ("a", "b"):
        client.put_item(TableName=TABLE, Item=sized(pk, 2500))
    client.delete_item(TableName=TABLE, Key=key("a"))
    assert last(meter).wru == 3
    with meter.ttl_deletions():
        client.delete_item(TableName=TABLE, Key=key("b"))
    assert (last(meter).outcome, last(meter).wru) == (cap.TTL_DELETE, 0)


def test_batch_write_rounds_each_item_before_adding(client: Any, meter: CapacityRecorder) -> None:
    # The guide's example: a 500-byte item and a 3.5 KB item cost 1 KB + 4 KB, not 4 KB.
    client.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": sized("a", 500)}},
                                                  {"PutRequest": {"Item": sized("b", 3584)}}]})
    assert last(meter).wru == 5


# -- transactions ------------------------------------------------------------------------------------
def three_puts(condition_on: str | None = None) -> list[dict[str, Any]]:
    puts = [{"Put": {"TableName": TABLE, "Item": sized(pk, 500)}} for pk in ("a", "b", "c")]
    for put in puts:
        if put["Put"]["Item"]["pk"]["S"] == condition_on:
            put["Put"]["ConditionExpression"] = "attribute_not_exists(pk)"
    return puts


def test_a_transaction_of_three_small_items_costs_6(client: Any, meter: CapacityRecorder) -> None:
    client.transact_write_items(TransactItems=three_puts())
    assert (last(meter).wru, last(meter).outcome) == (6, cap.OK)


def test_transactional_items_are_rounded_then_doubled(client: Any, meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("big", 2500))
    client.transact_write_items(TransactItems=[
        {"Update": {"TableName": TABLE, "Key": key("big"), "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "1"}}}},
        {"ConditionCheck": {"TableName": TABLE, "Key": key("other"),
                            "ConditionExpression": "attribute_not_exists(pk)"}}])
    assert last(meter).wru == 2 * 3 + 2 * 1


@pytest.mark.parametrize("factor, wru", [(1.0, 3), (2.0, 6), (0.0, 0)])
def test_a_cancelled_transaction_bills_by_the_stated_assumption(client: Any, factor: float,
                                                                wru: float) -> None:
    client.put_item(TableName=TABLE, Item=sized("b", 500))
    with CapacityRecorder(client, cancelled_transaction_factor=factor) as meter:
        with pytest.raises(ClientError, match="TransactionCanceled"):
            client.transact_write_items(TransactItems=three_puts(condition_on="b"))
    assert (last(meter).outcome, last(meter).wru) == (cap.CANCELLED, wru)


# -- reads -------------------------------------------------------------------------------------------
def test_consistent_reads_cost_twice_eventually_consistent_ones(client: Any,
                                                                meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 5000))
    costs = []
    for pk in ("a", "missing"):
        for consistent in (True, False):
            client.get_item(TableName=TABLE, Key=key(pk), ConsistentRead=consistent)
            costs.append(last(meter).rru)
    assert costs == [2, 1, 1, 0.5]  # a missing item still costs the minimum


def test_a_projection_does_not_shrink_the_read(client: Any, meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 5000))
    client.get_item(TableName=TABLE, Key=key("a"), ConsistentRead=True, ProjectionExpression="pk")
    assert (last(meter).rru, last(meter).item_bytes) == (2, (5000,))


def test_batch_get_rounds_each_item_before_adding(client: Any, meter: CapacityRecorder) -> None:
    # The guide's example: 1.5 KB and 6.5 KB cost 4 KB + 8 KB, not 8 KB.
    client.put_item(TableName=TABLE, Item=sized("a", 1536))
    client.put_item(TableName=TABLE, Item=sized("b", 6656))
    for consistent, rru in ((True, 3), (False, 1.5)):
        client.batch_get_item(RequestItems={TABLE: {"Keys": [key("a"), key("b")],
                                                    "ConsistentRead": consistent}})
        assert last(meter).rru == rru


def test_a_transactional_read_costs_2_per_4_kb_missing_items_too(client: Any,
                                                                 meter: CapacityRecorder) -> None:
    client.put_item(TableName=TABLE, Item=sized("a", 5000))
    client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": key(pk)}}
                                             for pk in ("a", "missing")])
    assert last(meter).rru == 4 + 2


def test_a_scan_sums_the_items_it_evaluates_then_rounds(client: Any, meter: CapacityRecorder) -> None:
    for pk in ("a", "b", "c"):
        client.put_item(TableName=TABLE, Item=sized(pk, 1500))
    client.scan(TableName=TABLE, ConsistentRead=True)
    assert (last(meter).rru, sum(last(meter).item_bytes)) == (2, 4500)  # 4,500 bytes: 8 KB
    client.scan(TableName=TABLE)
    assert last(meter).rru == 1
    found = client.scan(TableName=TABLE, ConsistentRead=True, FilterExpression="pk = :none",
                        ExpressionAttributeValues={":none": {"S": "none"}})
    assert found["Items"] == [] and last(meter).rru == 2  # the filter returns less, reads the same


def test_a_query_sums_the_items_it_reads_then_rounds() -> None:
    with fresh_dynamodb() as client:
        create_table(client, sort_key=True)
        for sk in ("1", "2", "3"):
            client.put_item(TableName=TABLE, Item=sized("a", 1500, sk={"S": sk}))
        client.put_item(TableName=TABLE, Item=sized("other", 4000, sk={"S": "1"}))
        with CapacityRecorder(client) as meter:
            query = {"TableName": TABLE, "KeyConditionExpression": "pk = :a", "ConsistentRead": True,
                     "ExpressionAttributeValues": {":a": {"S": "a"}}}
            client.query(**query)
            client.query(**{**query, "FilterExpression": "sk = :one",
                            "ExpressionAttributeValues": {":a": {"S": "a"}, ":one": {"S": "1"}}})
        assert [(r.rru, sum(r.item_bytes)) for r in meter.requests] == [(2, 4500), (2, 4500)]


# -- global secondary indexes ------------------------------------------------------------------------
def test_writes_that_touch_an_index_also_write_the_index() -> None:
    with fresh_dynamodb() as client:
        create_table(client, index={"ProjectionType": "KEYS_ONLY"})
        with CapacityRecorder(client) as meter:
            def update(expression: str, **values: str) -> tuple[float, float]:
                named = {f":{name}": {"S": value} for name, value in values.items()}
                client.update_item(TableName=TABLE, Key=key("a"), UpdateExpression=expression,
                                   **({"ExpressionAttributeValues": named} if named else {}))
                return last(meter).wru, last(meter).index_wru

            client.put_item(TableName=TABLE, Item=sized("plain", 500))
            assert (last(meter).wru, last(meter).index_wru) == (1, 0)  # no index key: no index write
            client.put_item(TableName=TABLE, Item=sized("a", 500, g={"S": "A"}))
            assert (last(meter).wru, last(meter).index_wru) == (2, 1)  # a put into the index
            assert update("SET note = :v", v="x") == (1, 0)  # nothing projected changed
            assert update("SET g = :g", g="B") == (3, 2)  # key A -> B: a delete and a put
            assert update("REMOVE g") == (2, 1)  # leaves the index: a delete
            client.delete_item(TableName=TABLE, Key=key("a"))
            assert (last(meter).wru, last(meter).index_wru) == (1, 0)  # it had left already


def test_an_index_write_is_sized_on_the_projected_entry() -> None:
    with fresh_dynamodb() as client:
        create_table(client, index={"ProjectionType": "ALL"})
        with CapacityRecorder(client) as meter:
            client.put_item(TableName=TABLE, Item=sized("a", 1500, g={"S": "A"}))
            assert (last(meter).wru, last(meter).index_wru) == (4, 2)  # the whole item, twice
            client.update_item(TableName=TABLE, Key=key("a"), UpdateExpression="SET note = :v",
                               ExpressionAttributeValues={":v": {"S": "x"}})
            assert (last(meter).wru, last(meter).index_wru) == (4, 2)  # a projected attribute changed


def test_an_index_query_is_sized_on_index_entries_and_eventually_consistent() -> None:
    with fresh_dynamodb() as client:
        create_table(client, index={"ProjectionType": "KEYS_ONLY"})
        for pk in ("a", "b", "c"):  # 9,000 bytes in the table, a few bytes each in the index
            client.put_item(TableName=TABLE, Item=sized(pk, 3000, g={"S": "A"}))
        query = {"TableName": TABLE, "IndexName": "by_g", "KeyConditionExpression": "g = :g",
                 "ExpressionAttributeValues": {":g": {"S": "A"}}}
        with CapacityRecorder(client) as meter:
            client.query(**query)
            client.query(**{**query, "FilterExpression": "pk = :none", "ExpressionAttributeValues": {
                ":g": {"S": "A"}, ":none": {"S": "none"}}})
        entry = item_size({"pk": {"S": "a"}, "g": {"S": "A"}})
        assert [(r.rru, r.item_bytes) for r in meter.requests] == [(0.5, (entry,) * 3)] * 2


# -- moto, measured ------------------------------------------------------------------------------------
def _run(client: Any, call: str, **params: Any) -> Any:
    try:
        return getattr(client, call)(ReturnConsumedCapacity="TOTAL", **params)
    except ClientError as error:
        return error.response


def _moto_units(reported: Any) -> Any:
    """moto's CapacityUnits, summed over tables; None when it sent no ConsumedCapacity."""
    if reported is None or reported == []:
        return reported
    if isinstance(reported, list):
        return sum(per_table["CapacityUnits"] for per_table in reported)
    return reported["CapacityUnits"]


SMALL = {"pk": {"S": "small"}, "n": {"N": "1"}}
AGREE = [  # (what, call, params, our units): small items, where moto's constants are DynamoDB's numbers
    ("put of a small item", "put_item", {"TableName": TABLE, "Item": SMALL}, 1),
    ("delete of a small item", "delete_item", {"TableName": TABLE, "Key": key("small")}, 1),
    ("eventually consistent get", "get_item", {"TableName": TABLE, "Key": key("small")}, 0.5),
    ("eventually consistent get, missing item", "get_item",
     {"TableName": TABLE, "Key": key("no")}, 0.5),
    ("transactional get of a small item", "transact_get_items",
     {"TransactItems": [{"Get": {"TableName": TABLE, "Key": key("small")}}]}, 2),
    ("consistent scan of a small table", "scan", {"TableName": TABLE, "ConsistentRead": True}, 1),
    ("consistent query", "query", {"TableName": TABLE, "KeyConditionExpression": "pk = :p",
                                   "ConsistentRead": True,
                                   "ExpressionAttributeValues": {":p": {"S": "small"}}}, 1),
]


@pytest.mark.parametrize("what, call, params, units", AGREE, ids=[case[0] for case in AGREE])
def test_moto_agrees(client: Any, what: str, call: str, params: dict[str, Any], units: float) -> None:
    client.put_item(TableName=TABLE, Item=SMALL)
    with CapacityRecorder(client) as meter:
        _run(client, call, **params)
    cost = last(meter)
    assert cost.wru + cost.rru == units == _moto_units(cost.reported)


DIFFER = [  # (what, call, params, ours, moto 5.2.1's): measured here
    ("put of 1,100 bytes: moto always says 1", "put_item",
     {"TableName": TABLE, "Item": sized("big", 1100)}, 2, 1.0),
    ("consistent get: moto always says 0.5", "get_item",
     {"TableName": TABLE, "Key": key("small"), "ConsistentRead": True}, 1, 0.5),
    ("update: moto always says 0.5", "update_item",
     {"TableName": TABLE, "Key": key("small"), "UpdateExpression": "SET n = :n",
      "ExpressionAttributeValues": {":n": {"N": "2"}}}, 1, 0.5),
    ("failed conditional put: no ConsumedCapacity in the error (AWS sends none either)", "put_item",
     {"TableName": TABLE, "Item": SMALL, "ConditionExpression": "attribute_not_exists(pk)"}, 1, None),
    ("transaction of three puts: moto returns an empty list", "transact_write_items",
     {"TransactItems": [{"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"t{n}"}}}}
                        for n in range(3)]}, 6, []),
    ("eventually consistent scan: moto always says 1", "scan", {"TableName": TABLE}, 0.5, 1.0),
    ("transactional get of a missing item: moto skips it", "transact_get_items",
     {"TransactItems": [{"Get": {"TableName": TABLE, "Key": key(pk)}}
                        for pk in ("small", "no")]}, 4, 2.0),
    ("eventually consistent batch get: moto says 1 per key", "batch_get_item",
     {"RequestItems": {TABLE: {"Keys": [key("small"), key("no")]}}}, 1.0, 2),
]


@pytest.mark.parametrize("what, call, params, ours, motos", DIFFER, ids=[case[0] for case in DIFFER])
def test_moto_differs(client: Any, what: str, call: str, params: dict[str, Any], ours: float,
                      motos: Any) -> None:
    client.put_item(TableName=TABLE, Item=SMALL)
    with CapacityRecorder(client) as meter:
        _run(client, call, **params)
    cost = last(meter)
    assert (cost.wru + cost.rru, _moto_units(cost.reported)) == (ours, motos)


def test_moto_reports_no_index_writes() -> None:
    with fresh_dynamodb() as client:
        create_table(client, index={"ProjectionType": "KEYS_ONLY"})
        with CapacityRecorder(client) as meter:
            response = client.put_item(TableName=TABLE, Item={"pk": {"S": "a"}, "g": {"S": "A"}},
                                       ReturnConsumedCapacity="INDEXES")
        assert "GlobalSecondaryIndexes" not in response["ConsumedCapacity"]
        assert (response["ConsumedCapacity"]["CapacityUnits"], last(meter).wru) == (1.0, 2)


# -- summaries, dollars and the recorder itself -----------------------------------------------------
def test_a_summary_per_operation_per_event_and_in_dollars(client: Any, meter: CapacityRecorder) -> None:
    for upload in ("u1", "u2"):  # each upload: a put, a consistent get, a three-item transaction
        client.put_item(TableName=TABLE, Item=sized(upload, 500))
        client.get_item(TableName=TABLE, Key=key(upload), ConsistentRead=True)
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": sized(f"{upload}-{n}", 500)}} for n in range(3)])
    summary = meter.summary()
    assert summary.by_operation == {"GetItem": cap.Units(2, 0, 2), "PutItem": cap.Units(2, 2, 0),
                                    "TransactWriteItems": cap.Units(2, 12, 0)}
    assert summary.total == cap.Units(6, 14, 2)
    per_upload = summary.per_event(2)
    assert per_upload == cap.Units(3, 7, 1)
    # us-east-1 on-demand: 7 WRU x $0.625 + 1 RRU x $0.125 per million uploads
    assert cap.dollars_per_million_uploads(per_upload.wru, per_upload.rru) == pytest.approx(4.5)
    assert summary.dollars_per_million_events(2) == pytest.approx(4.5)
    assert per_upload.dollars() == pytest.approx(4.5e-6)
    with pytest.raises(ValueError):
        summary.per_event(0)


def test_the_recorders_own_reads_are_unseen_and_detach_stops_it(client: Any) -> None:
    seen: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: seen.append(model.name))
    meter = CapacityRecorder(client).attach()
    client.put_item(TableName=TABLE, Item=sized("a", 500))
    client.update_item(TableName=TABLE, Key=key("a"), UpdateExpression="SET n = :n",
                       ExpressionAttributeValues={":n": {"N": "1"}})
    assert seen == ["PutItem", "UpdateItem"]  # its GetItems and DescribeTable went elsewhere
    assert [r.operation for r in meter.requests] == ["PutItem", "UpdateItem"]
    meter.detach()
    client.put_item(TableName=TABLE, Item=sized("b", 500))
    assert len(meter.requests) == 2


def test_a_write_whose_response_is_lost_is_still_billed(client: Any) -> None:
    class ResponseLost(Exception):
        pass

    def lose(**_: Any) -> None:
        raise ResponseLost()

    client.meta.events.register("after-call.dynamodb.PutItem", lose)  # a fault injected earlier
    with CapacityRecorder(client) as meter:
        with pytest.raises(ResponseLost):
            client.put_item(TableName=TABLE, Item=sized("a", 1500))
    assert (last(meter).operation, last(meter).wru) == ("PutItem", 2)


def test_a_request_answered_by_a_hook_before_it_is_sent_is_not_billed(client: Any) -> None:
    class Http:
        status_code = 200

    def answer(**_: Any) -> Any:  # as botocore's Stubber does: the request never leaves
        return Http(), {"ResponseMetadata": {}}

    client.meta.events.register("before-call.dynamodb.PutItem", answer)
    with CapacityRecorder(client) as meter:
        client.put_item(TableName=TABLE, Item=sized("a", 500))
        client.get_item(TableName=TABLE, Key=key("a"))
    assert [r.operation for r in meter.requests] == ["GetItem"]


def test_the_callers_request_and_response_are_left_alone(client: Any, meter: CapacityRecorder) -> None:
    response = client.put_item(TableName=TABLE, Item=sized("a", 500))
    assert "ConsumedCapacity" not in response
    assert last(meter).reported is None and last(meter).wru == 1
    with pytest.raises(ClientError, match="ResourceNotFound"):
        client.put_item(TableName="no-such-table", Item=sized("a", 500))
    assert (last(meter).outcome, last(meter).wru) == (cap.ERROR, 0)
