"""DynamoDB's refusals of an expression placeholder no expression uses and of a Number it cannot store,
made for moto (idem.sim.platform.request_checks). moto 5.2 wrote a PutItem, DeleteItem or
TransactWriteItems action whose ExpressionAttributeValues held a value no expression used, answered such
a Query or Scan, and stored a Number of 39 and more significant digits or past 9.99...E+125.

AWS: "If you define an expression attribute value, you must use it consistently throughout the
expression" (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html);
"Numbers can have up to 38 digits of precision. Exceeding this results in an exception. [...] Positive
range: 1E-130 to 9.9999999999999999999999999999999999999E+125 [...] Leading and trailing zeroes are
trimmed." (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html).
The messages are real DynamoDB's as others quote them (the module's docstring says where).

Each handler in tests/handlers/ says the verdict a correct checker gives."""
from __future__ import annotations

import uuid
from typing import Any, Callable

import pytest
from botocore.exceptions import ClientError

from check_cli import cli, target
from idem.sim.platform.request_checks import OVERFLOW, PRECISION, UNDERFLOW, number_refusal
from idem.sim.world import ensure_moto, fake_client


def check(monkeypatch, name: str, families: str = "faults") -> tuple[int, str, str]:
    """The CLI on one family of schedules (the no-fault schedules are in it), no retries, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(target(name), "--retries", "0", "--workers", "1")


@pytest.mark.parametrize("name", ["ddb_unused_value", "ddb_float_number"])
def test_a_ledger_write_dynamodb_refuses_fails_the_clean_run(monkeypatch, name):
    """Every invocation charges, then its ledger write is refused: the clean run fails (exit 1)."""
    code, out, err = check(monkeypatch, name)
    assert code == 1, (out + err)[-3000:]
    assert "ValidationException" in out + err, (out + err)[-3000:]
    assert "holds" not in out.split("\n", 1)[0]


def test_a_handler_swallowing_the_refused_ledger_write_breaks_with_no_fault(monkeypatch):
    """Its clean run charges and books nothing, the refusal swallowed: the books where the default points
    were never written, yet a line was sent there and refused (idem.explore.judge.books.refused_lines)."""
    code, out, err = check(monkeypatch, "ddb_unused_value_swallowed")
    assert code == 1, (out + err)[-3000:]
    assert "silent_mismatch" in out and "breaks on the clean run" in out, out[:3000]
    assert "DynamoDB refused the line it sent to LEDGER_TABLE" in out and "unused in expressions" in out, out[:3000]


def test_refused_lines_are_the_books_table_s_writes_carrying_the_books_attribute():
    from idem.explore.judge.books import refused_lines

    invalid = [
        ("dynamodb:PutItem", {"TableName": "ledger", "Item": {"pk": {"S": "1"}, "charge_id": {"S": "ch"}}}, "m1"),
        ("dynamodb:PutItem", {"TableName": "claims", "Item": {"pk": {"S": "1"}, "charge_id": {"S": "ch"}}}, "other table"),
        ("dynamodb:PutItem", {"TableName": "ledger", "Item": {"pk": {"S": "1"}}}, "no charge id"),
        ("dynamodb:TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "ledger", "Item": {"charge_id": {"S": "c"}}}}]}, "m2"),
        ("dynamodb:BatchWriteItem", {"RequestItems": {"ledger": [{"PutRequest": {"Item": {"charge_id": {"S": "c"}}}}]}}, "m3"),
        ("dynamodb:UpdateItem", {"TableName": "ledger", "UpdateExpression": "SET #c = :c", "ExpressionAttributeNames": {"#c": "charge_id"}}, "m4"),
        ("dynamodb:Query", {"TableName": "ledger"}, "a read"),
    ]
    assert refused_lines(invalid, "ledger", "charge_id") == [
        "dynamodb:PutItem: m1", "dynamodb:TransactWriteItems: m2", "dynamodb:BatchWriteItem: m3", "dynamodb:UpdateItem: m4"]


# -- the requests themselves, in the check's world ---------------------------------------------------
@pytest.fixture
def table():
    ensure_moto()
    dynamodb = fake_client("dynamodb")
    name = f"checks-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    dynamodb.put_item(TableName=name, Item={"pk": {"S": "a"}, "status": {"S": "pending"}})
    yield dynamodb, name
    dynamodb.delete_table(TableName=name)


KEY = {"pk": {"S": "a"}}


def refused(call: Callable[[], Any]) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    return str(caught.value.response["Error"]["Message"])


def requests(d: Any, t: str) -> dict[str, Callable[[], Any]]:
    """Requests DynamoDB refuses for an unused placeholder (or an empty or needless map of them)."""
    new = {"pk": {"S": "b"}}
    return {
        "put unused value": lambda: d.put_item(TableName=t, Item=new, ConditionExpression="attribute_not_exists(pk)",
                                               ExpressionAttributeValues={":pending": {"S": "pending"}}),
        "put unused name": lambda: d.put_item(TableName=t, Item=new, ConditionExpression="attribute_not_exists(pk)",
                                              ExpressionAttributeNames={"#s": "status"}),
        "put values, no expression": lambda: d.put_item(TableName=t, Item=new, ExpressionAttributeValues={":x": {"S": "1"}}),
        "put empty names": lambda: d.put_item(TableName=t, Item=new, ConditionExpression="attribute_not_exists(pk)",
                                              ExpressionAttributeNames={}),
        "delete unused value": lambda: d.delete_item(TableName=t, Key=KEY, ConditionExpression="attribute_exists(pk)",
                                                     ExpressionAttributeValues={":x": {"S": "1"}}),
        "update unused value": lambda: d.update_item(TableName=t, Key=KEY, UpdateExpression="SET a = :a",
                                                     ExpressionAttributeValues={":a": {"S": "1"}, ":x": {"S": "1"}}),
        "update unused name": lambda: d.update_item(TableName=t, Key=KEY, UpdateExpression="SET a = :a",
                                                    ExpressionAttributeNames={"#x": "x"},
                                                    ExpressionAttributeValues={":a": {"S": "1"}}),
        "get unused name": lambda: d.get_item(TableName=t, Key=KEY, ProjectionExpression="pk",
                                              ExpressionAttributeNames={"#x": "x"}),
        "query unused value": lambda: d.query(TableName=t, KeyConditionExpression="pk = :p",
                                              ExpressionAttributeValues={":p": {"S": "a"}, ":z": {"S": "b"}}),
        "scan unused value": lambda: d.scan(TableName=t, FilterExpression="#s = :v", ExpressionAttributeNames={"#s": "status"},
                                            ExpressionAttributeValues={":v": {"S": "a"}, ":z": {"S": "b"}}),
        "transaction put unused value": lambda: d.transact_write_items(TransactItems=[
            {"Put": {"TableName": t, "Item": new, "ConditionExpression": "attribute_not_exists(pk)",
                     "ExpressionAttributeValues": {":x": {"S": "1"}}}}]),
        "transaction condition check unused value": lambda: d.transact_write_items(TransactItems=[
            {"ConditionCheck": {"TableName": t, "Key": KEY, "ConditionExpression": "attribute_exists(pk)",
                                "ExpressionAttributeValues": {":x": {"S": "1"}}}},
            {"Put": {"TableName": t, "Item": new}}]),
        "transaction get unused name": lambda: d.transact_get_items(TransactItems=[
            {"Get": {"TableName": t, "Key": KEY, "ProjectionExpression": "pk", "ExpressionAttributeNames": {"#x": "x"}}}]),
    }


@pytest.mark.parametrize("case", list(requests(None, "")))
def test_an_unused_placeholder_is_refused_and_nothing_is_written(table, case):
    dynamodb, name = table
    message = refused(requests(dynamodb, name)[case])
    assert "unused in expressions" in message or "must not be empty" in message or "can only be specified" in message
    assert "Item" not in dynamodb.get_item(TableName=name, Key={"pk": {"S": "b"}})
    assert "a" not in dynamodb.get_item(TableName=name, Key=KEY)["Item"]  # no update landed


def test_the_refusal_names_the_unused_keys_as_dynamodb_does(table):
    dynamodb, name = table
    message = refused(requests(dynamodb, name)["put unused value"])
    assert message == "Value provided in ExpressionAttributeValues unused in expressions: keys: {:pending}"
    message = refused(requests(dynamodb, name)["put unused name"])
    assert message == "Value provided in ExpressionAttributeNames unused in expressions: keys: {#s}"


def test_placeholders_used_in_any_of_the_call_s_expressions_are_taken(table):
    d, t = table
    d.put_item(TableName=t, Item={"pk": {"S": "c"}, "status": {"S": "pending"}},
               ConditionExpression="attribute_not_exists(pk) OR #s = :pending",
               ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":pending": {"S": "pending"}})
    d.update_item(TableName=t, Key=KEY, UpdateExpression="SET #a = :a", ConditionExpression="#s = :old",  # value in the condition only
                  ExpressionAttributeNames={"#a": "a", "#s": "status"},
                  ExpressionAttributeValues={":a": {"S": "1"}, ":old": {"S": "pending"}})
    d.delete_item(TableName=t, Key={"pk": {"S": "c"}}, ConditionExpression="#s = :p",
                  ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":p": {"S": "pending"}})
    assert d.get_item(TableName=t, Key=KEY, ProjectionExpression="#s, #a",
                      ExpressionAttributeNames={"#s": "status", "#a": "a"})["Item"] == {"status": {"S": "pending"}, "a": {"S": "1"}}
    found = d.query(TableName=t, KeyConditionExpression="#k = :k", FilterExpression="#s = :s", ProjectionExpression="#k, #p",
                    ExpressionAttributeNames={"#k": "pk", "#s": "status", "#p": "a"},  # #p in the projection only
                    ExpressionAttributeValues={":k": {"S": "a"}, ":s": {"S": "pending"}})
    assert found["Items"] == [{"pk": {"S": "a"}, "a": {"S": "1"}}]
    assert d.scan(TableName=t, ProjectionExpression="#k", ExpressionAttributeNames={"#k": "pk"})["Count"] == 1
    assert d.scan(TableName=t, FilterExpression="attribute_exists(#a.#b) OR size(#s) > :n",
                  ExpressionAttributeNames={"#a": "a", "#b": "b", "#s": "status"},
                  ExpressionAttributeValues={":n": {"N": "0"}})["Count"] == 1
    d.transact_write_items(TransactItems=[
        {"ConditionCheck": {"TableName": t, "Key": KEY, "ConditionExpression": "#s = :p",
                            "ExpressionAttributeNames": {"#s": "status"}, "ExpressionAttributeValues": {":p": {"S": "pending"}}}},
        {"Put": {"TableName": t, "Item": {"pk": {"S": "d"}}, "ConditionExpression": "attribute_not_exists(pk)"}}])
    got = d.transact_get_items(TransactItems=[{"Get": {"TableName": t, "Key": KEY, "ProjectionExpression": "#s",
                                                       "ExpressionAttributeNames": {"#s": "status"}}}])
    assert got["Responses"][0]["Item"]["status"] == {"S": "pending"}  # (moto gives the whole item)
    batch = d.batch_get_item(RequestItems={t: {"Keys": [KEY], "ProjectionExpression": "#s",
                                               "ExpressionAttributeNames": {"#s": "status"}}})
    assert batch["Responses"][t] == [{"status": {"S": "pending"}}]


def test_a_placeholder_is_used_only_as_a_whole_token(table):
    d, t = table
    message = refused(lambda: d.put_item(TableName=t, Item={"pk": {"S": "e"}}, ConditionExpression="#ab <> :v1",
                                         ExpressionAttributeNames={"#ab": "x", "#a": "y"},
                                         ExpressionAttributeValues={":v1": {"S": "1"}, ":v": {"S": "1"}}))
    assert message.endswith("keys: {#a}")


@pytest.mark.parametrize("text, answer", [
    ("1" * 38, None), ("1" * 39, PRECISION), ("-" + "1" * 39, PRECISION),
    ("0.90624999999999988897769753748434595763683319091796875", PRECISION),
    ("3.1415926535897932384626433832795028841", None), ("3.14159265358979323846264338327950288419", PRECISION),
    ("31415926535897932384626433832795028841e30", None),  # trailing zeros of the exponent: 38 digits
    ("1" + "0" * 60, None), ("1." + "0" * 60, None), ("0" * 50 + "12", None),  # leading and trailing zeros trimmed
    ("0.000" + "1" * 38, None), ("0e1000", None), ("0", None), ("-0.0", None),
    ("9." + "9" * 37 + "E+125", None), ("-9." + "9" * 37 + "E+125", None), ("1e125", None),
    ("1e126", OVERFLOW), ("11e125", OVERFLOW), ("-1e126", OVERFLOW),
    ("1E-130", None), ("-1E-130", None), ("1e-131", UNDERFLOW), ("0.9e-130", UNDERFLOW),
    ("dog", None), ("NaN", None),  # no number: moto's own answer
])
def test_a_number_s_significant_digits_and_range(text, answer):
    assert number_refusal(text) == answer


def number_requests(d: Any, t: str, n: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    item = {"pk": {"S": "n"}, "v": n}
    return {
        "put": lambda: d.put_item(TableName=t, Item=item),
        "put in a map and a list": lambda: d.put_item(TableName=t, Item={"pk": {"S": "n"}, "m": {"M": {"l": {"L": [n]}}}}),
        "update value": lambda: d.update_item(TableName=t, Key=KEY, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": n}),
        "condition value": lambda: d.put_item(TableName=t, Item={"pk": {"S": "n"}}, ConditionExpression="attribute_not_exists(pk) OR v = :v",
                                              ExpressionAttributeValues={":v": n}),
        "transaction": lambda: d.transact_write_items(TransactItems=[{"Put": {"TableName": t, "Item": item}}]),
        "batch": lambda: d.batch_write_item(RequestItems={t: [{"PutRequest": {"Item": item}}]}),
    }


@pytest.mark.parametrize("case", list(number_requests(None, "", {})))
@pytest.mark.parametrize("number, message", [({"N": "1" * 39}, PRECISION), ({"NS": ["1", "2" * 39]}, PRECISION),
                                             ({"N": "1e126"}, OVERFLOW)])
def test_a_number_dynamodb_cannot_store_is_refused_and_nothing_is_written(table, case, number, message):
    d, t = table
    assert refused(number_requests(d, t, number)[case]) == message
    assert "Item" not in d.get_item(TableName=t, Key={"pk": {"S": "n"}})
    assert "v" not in d.get_item(TableName=t, Key=KEY)["Item"]


@pytest.mark.parametrize("case", list(number_requests(None, "", {})))
def test_numbers_dynamodb_stores_are_taken(table, case):
    d, t = table
    for n in ({"N": "1" * 38}, {"N": "1" + "0" * 60}, {"N": "1." + "0" * 60}, {"NS": ["1E-130", "9." + "9" * 37 + "E+125"]},
              {"N": "0e1000"}):
        number_requests(d, t, n)[case]()
        d.delete_item(TableName=t, Key={"pk": {"S": "n"}})
