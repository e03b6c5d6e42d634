"""DynamoDB's legacy parameters `Expected` and `AttributeUpdates`, taken as DynamoDB takes them
(idem.sim.platform.legacy_parameters): moto 5.2 joined every condition with AND, took `"Exists": true`
with a `Value` as "the attribute is there" without comparing the value, took the forms DynamoDB refuses,
ignored `Expected` on DeleteItem, and wrote an `AttributeUpdates` PUT of `{"BOOL": true}` as the string
"True". Handlers written before condition expressions (the adversary's
seventh round, tests/handlers/legacy_*.py) got a false "holds" (an OR that lets every retry take the
claim) and a false "breaks" (an OR that lets a new order in) from it."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from check_cli import cli, target
from idem.sim.world import LocalWorld


@pytest.fixture()
def table():
    """A fresh table with one claim in it, not booked, state "claimed"; its client and name."""
    world = LocalWorld()
    client, name = world.dynamodb, world.ledger_table
    client.put_item(TableName=name, Item={"pk": {"S": "claim#1"}, "state": {"S": "claimed"}})
    return client, name


def _code(call) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"]


def test_conditional_operator_or_holds_when_one_condition_does(table):
    client, name = table
    either = {"pk": {"ComparisonOperator": "NULL"}, "booked_at": {"ComparisonOperator": "NULL"}}
    # the record is there (pk NULL is false) and not booked (booked_at NULL is true): OR takes it
    client.put_item(TableName=name, Item={"pk": {"S": "claim#1"}, "state": {"S": "retaken"}},
                    Expected=either, ConditionalOperator="OR")
    assert client.get_item(TableName=name, Key={"pk": {"S": "claim#1"}})["Item"]["state"] == {"S": "retaken"}
    # AND (the default) does not
    assert _code(lambda: client.put_item(TableName=name, Item={"pk": {"S": "claim#1"}}, Expected=either)) \
        == "ConditionalCheckFailedException"


def test_a_value_is_compared_not_only_found(table):
    client, name = table
    fence = {"state": {"Value": {"S": "charging"}}}
    assert _code(lambda: client.update_item(
        TableName=name, Key={"pk": {"S": "claim#1"}}, Expected=fence,
        AttributeUpdates={"booked": {"Value": {"BOOL": True}, "Action": "PUT"}})) == "ConditionalCheckFailedException"
    client.update_item(TableName=name, Key={"pk": {"S": "claim#1"}}, Expected={"state": {"Value": {"S": "claimed"}}},
                       AttributeUpdates={"booked": {"Value": {"BOOL": True}, "Action": "PUT"}})
    assert client.get_item(TableName=name, Key={"pk": {"S": "claim#1"}})["Item"]["booked"] == {"BOOL": True}


@pytest.mark.parametrize("expected", [
    {"pk": {"Exists": False, "Value": {"S": "claim#2"}}},  # "Exists is false but you also provide a Value"
    {"pk": {"Exists": True}},  # "Exists is true but there is no Value to check"
    {"pk": {"Value": {"S": "claim#2"}, "ComparisonOperator": "EQ", "AttributeValueList": [{"S": "claim#2"}]}},
])
def test_the_forms_dynamodb_refuses_are_refused_before_anything_is_written(table, expected):
    client, name = table
    assert _code(lambda: client.put_item(TableName=name, Item={"pk": {"S": "claim#2"}}, Expected=expected)) \
        == "ValidationException"
    assert "Item" not in client.get_item(TableName=name, Key={"pk": {"S": "claim#2"}})


def test_a_delete_with_expected_keeps_the_item_when_the_condition_fails(table):
    client, name = table
    assert _code(lambda: client.delete_item(TableName=name, Key={"pk": {"S": "claim#1"}},
                                            Expected={"state": {"Value": {"S": "done"}}})) \
        == "ConditionalCheckFailedException"
    assert "Item" in client.get_item(TableName=name, Key={"pk": {"S": "claim#1"}})
    client.delete_item(TableName=name, Key={"pk": {"S": "claim#1"}}, Expected={"state": {"Value": {"S": "claimed"}}})
    assert "Item" not in client.get_item(TableName=name, Key={"pk": {"S": "claim#1"}})


def _check(monkeypatch, name: str, families: str) -> tuple[int, dict]:
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    code, out, _ = cli(target(name), "--retries", "1", "--workers", "1", "--json")
    return code, json.loads(out)


def test_an_or_claim_that_lets_every_unbooked_attempt_take_it_charges_twice(monkeypatch):
    """Before: holds (moto read the OR as AND, so a retry never took the claim)."""
    code, report = _check(monkeypatch, "legacy_or_takeover", "again")
    assert code == 1 and report["verdicts"].get("double_charge")


def test_an_or_claim_that_lets_a_new_order_in_holds(monkeypatch):
    """Before: "the clean run fails" (moto's AND refused the first claim of a new order)."""
    code, report = _check(monkeypatch, "legacy_or_release", "again")
    assert code == 0, report["verdicts"]
    assert _check(monkeypatch, "legacy_expected_claim", "again")[0] == 0


def test_a_claim_dynamodb_refuses_as_invalid_fails_the_clean_run(monkeypatch):
    """Before: holds (moto took `Exists: false` with a Value, so the claim was written)."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "uploads")
    code, out, _ = cli(target("legacy_exists_false_value"), "--retries", "0", "--workers", "1")
    assert code == 1
    assert "the clean run fails" in out and "ValidationException" in out


def test_an_attribute_updates_put_stores_its_value_as_given(table):
    client, name = table
    client.update_item(TableName=name, Key={"pk": {"S": "claim#1"}},
                       AttributeUpdates={"booked": {"Value": {"BOOL": True}, "Action": "PUT"},
                                         "receipt": {"Value": {"B": b"\x00\x01"}},
                                         "note": {"Value": {"NULL": True}, "Action": "PUT"},
                                         "tries": {"Value": {"N": "2"}, "Action": "ADD"}})
    item = client.get_item(TableName=name, Key={"pk": {"S": "claim#1"}})["Item"]
    assert (item["booked"], item["receipt"], item["note"], item["tries"]) == (
        {"BOOL": True}, {"B": b"\x00\x01"}, {"NULL": True}, {"N": "2"})
