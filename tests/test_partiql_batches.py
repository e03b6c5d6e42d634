"""A PartiQL INSERT of a key the table has, inside ExecuteTransaction and BatchExecuteStatement, refused as
DynamoDB refuses it (idem.sim.platform.partiql_insert). moto 5.2 wrote such an INSERT over the item in
both calls, with no error, and could not read an INSERT's `?` parameters in either (TypeError).

AWS: in a transaction, "If any of the singleton INSERT, UPDATE, or DELETE operations return an error, the
transactions are cancelled with the TransactionCanceledException exception, and the cancellation reason
code includes the errors from the individual singleton operations"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.transactions.html);
in a batch, "A HTTP 200 response does not mean that all statements in the BatchExecuteStatement
succeeded. Error details for individual statements can be found under the Error field"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchExecuteStatement.html), whose
codes include `DuplicateItem`
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchStatementError.html).

Each handler in tests/handlers/ says the verdict a correct checker gives."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from check_cli import cli, target
from idem.sim.world import ensure_moto, fake_client

DUPLICATE = {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}


def check(monkeypatch, name: str, families: str = "late,again") -> tuple[int, str, str]:
    """The CLI on the families where an overwriting INSERT charged twice (a redrive past Stripe's key
    window, a second upload of the order), no retry setting but 0, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(target(name), "--retries", "0", "--workers", "1")


@pytest.mark.parametrize("name, call", [("partiql_transaction_claim", "ExecuteTransaction"),
                                        ("partiql_batch_claim", "BatchExecuteStatement")])
def test_a_handler_claiming_with_an_insert_in_a_transaction_or_a_batch_holds(monkeypatch, name, call):
    code, out, err = check(monkeypatch, name)
    assert code == 0, (out + err)[-3000:]
    assert "holds: " in out and "double_charge" not in out
    assert f"before dynamodb:{call}" in out  # the claim is a boundary like any other


def test_a_handler_that_ignores_the_batch_s_per_statement_error_charges_twice(monkeypatch):
    code, out, err = check(monkeypatch, "partiql_batch_ignores_error")
    assert code == 1, (out + err)[-3000:]
    assert "double_charge" in out


def test_a_handler_reading_every_cancelled_partiql_transaction_as_a_duplicate_loses_the_throttled_order(monkeypatch):
    """A throttle before ExecuteTransaction is a cancelled transaction, as before TransactWriteItems
    (idem.sim.sdk_retries.cancelled_transaction): a handler that never reads the reasons skips the order."""
    code, out, err = check(monkeypatch, "partiql_transaction_cancel_is_duplicate", families="faults")
    assert code == 1 and "silent_loss" in out, (out + err)[-3000:]
    assert "exception before dynamodb:ExecuteTransaction" in out, out[:3000]


def test_a_throttle_before_execute_transaction_is_a_cancelled_transaction_with_a_reason_per_statement():
    from idem.sim.faults import Boundary, Side
    from idem.sim.sdk_retries import aws_error, cancelled_transaction

    throttle = aws_error(Boundary("dynamodb:ExecuteTransaction", 1, Side.BEFORE), 1)
    request = {"body": b'{"TransactStatements": [{"Statement": "INSERT"}, {"Statement": "INSERT"}]}'}
    http, answer = cancelled_transaction("dynamodb:ExecuteTransaction", throttle, request)
    assert http.status_code == 400 and answer["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in answer["CancellationReasons"]] == ["ThrottlingError", "None"]


# -- the two calls themselves, in the check's world -------------------------------------------------
@pytest.fixture
def table():
    ensure_moto()
    dynamodb = fake_client("dynamodb")
    name = f"claims-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    dynamodb.put_item(TableName=name, Item={"pk": {"S": "claim#1"}, "at": {"N": "1"}})
    yield dynamodb, name
    dynamodb.delete_table(TableName=name)


def item(dynamodb, name: str, pk: str) -> dict | None:
    return dynamodb.get_item(TableName=name, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")


def insert(name: str, pk: str, at: int) -> dict:
    return {"Statement": f"INSERT INTO \"{name}\" VALUE {{'pk': '{pk}', 'at': {at}}}"}


def bound(name: str, pk: str, at: str) -> dict:
    return {"Statement": f"INSERT INTO \"{name}\" VALUE {{'pk': ?, 'at': ?, 'note': '?'}}",
            "Parameters": [{"S": pk}, {"N": at}]}


@pytest.mark.parametrize("claim", [insert, bound], ids=["literal", "parameters"])
def test_a_transaction_inserting_a_key_the_table_has_is_cancelled_and_writes_nothing(table, claim):
    dynamodb, name = table
    with pytest.raises(ClientError) as cancelled:
        dynamodb.execute_transaction(TransactStatements=[
            insert(name, "order#1", 2), claim(name, "claim#1", "2") if claim is bound else claim(name, "claim#1", 2),
            {"Statement": f"UPDATE \"{name}\" SET at = ? WHERE pk = 'claim#1'", "Parameters": [{"N": "9"}]}])
    answer = cancelled.value.response
    assert answer["Error"]["Code"] == "TransactionCanceledException"
    assert isinstance(cancelled.value, dynamodb.exceptions.TransactionCanceledException)
    assert answer["CancellationReasons"] == [{"Code": "None"}, DUPLICATE, {"Code": "None"}]
    assert "[None, DuplicateItem, None]" in answer["Error"]["Message"]
    assert item(dynamodb, name, "claim#1") == {"pk": {"S": "claim#1"}, "at": {"N": "1"}}
    assert item(dynamodb, name, "order#1") is None  # nothing of the transaction written


def test_a_transaction_of_new_keys_writes_each_insert_with_its_parameters_bound(table):
    dynamodb, name = table
    answer = dynamodb.execute_transaction(TransactStatements=[
        bound(name, "claim#2", "1764979200.25"), insert(name, "order#2", 3),
        {"Statement": f"UPDATE \"{name}\" SET at = ? WHERE pk = ?", "Parameters": [{"N": "7"}, {"S": "claim#1"}]}])
    assert answer["Responses"] == []
    assert item(dynamodb, name, "claim#2") == {"pk": {"S": "claim#2"}, "at": {"N": "1764979200.25"}, "note": {"S": "?"}}
    assert item(dynamodb, name, "order#2") == {"pk": {"S": "order#2"}, "at": {"N": "3"}}
    assert item(dynamodb, name, "claim#1") == {"pk": {"S": "claim#1"}, "at": {"N": "7"}}  # moto's own UPDATE


def test_a_transaction_inserting_one_new_key_twice_is_refused_whole(table):
    dynamodb, name = table
    with pytest.raises(ClientError) as refused:
        dynamodb.execute_transaction(TransactStatements=[insert(name, "order#3", 1), bound(name, "order#3", "2")])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert item(dynamodb, name, "order#3") is None


def test_a_transaction_s_parameters_in_another_number_than_its_marks_are_refused(table):
    dynamodb, name = table
    wrong = dict(bound(name, "order#4", "1"), Parameters=[{"S": "order#4"}])
    with pytest.raises(ClientError) as refused:
        dynamodb.execute_transaction(TransactStatements=[insert(name, "order#5", 1), wrong])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert item(dynamodb, name, "order#5") is None


@pytest.mark.parametrize("claim", [insert, bound], ids=["literal", "parameters"])
def test_a_batch_answers_a_duplicate_insert_in_its_statement_s_error_and_applies_the_others(table, claim):
    dynamodb, name = table
    answer = dynamodb.batch_execute_statement(Statements=[
        claim(name, "claim#1", "5") if claim is bound else claim(name, "claim#1", 5), bound(name, "order#6", "6"),
        {"Statement": f"UPDATE \"{name}\" SET done = ? WHERE pk = 'claim#1'", "Parameters": [{"BOOL": True}]}])
    responses = answer["Responses"]
    assert responses[0]["Error"] == DUPLICATE
    assert "Error" not in responses[1] and "Error" not in responses[2]
    assert responses[1]["TableName"] == name
    assert item(dynamodb, name, "claim#1") == {"pk": {"S": "claim#1"}, "at": {"N": "1"}, "done": {"BOOL": True}}
    assert item(dynamodb, name, "order#6") == {"pk": {"S": "order#6"}, "at": {"N": "6"}, "note": {"S": "?"}}


def test_a_batch_answers_an_insert_into_no_table_or_with_wrong_parameters_in_its_statement_s_error(table):
    dynamodb, name = table
    answer = dynamodb.batch_execute_statement(Statements=[
        insert("no-such-table", "a", 1), dict(bound(name, "order#7", "1"), Parameters=[{"S": "order#7"}]),
        insert(name, "order#8", 1)])
    codes = [response.get("Error", {}).get("Code") for response in answer["Responses"]]
    assert codes == ["ResourceNotFound", "ValidationError", None]
    assert item(dynamodb, name, "order#7") is None
    assert item(dynamodb, name, "order#8") == {"pk": {"S": "order#8"}, "at": {"N": "1"}}
