"""A PartiQL INSERT claims an order on DynamoDB: "If the DynamoDB table already has an item with the same
primary key as the primary key of the item being inserted, DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). moto 5.2
wrote the second INSERT over the first, and its parser could not read an INSERT's `?` parameters
(the adversary's round 5, F3 and F3b): the check said a correct handler charges twice (exit 1), or
that its clean run fails (exit 1). idem.sim.platform.partiql_insert gives moto DynamoDB's INSERT; and a
call moto fails to serve inside its own code is the check's limit (exit 2), never the handler's break.

Each handler in tests/handlers/ says the verdict a correct checker gives."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from check_cli import cli, target
from idem.sim.world import ensure_moto, fake_client


def check(monkeypatch, name: str, families: str = "late,again") -> tuple[int, str, str]:
    """The CLI on the families where the overwriting INSERT charged twice (a redrive past Stripe's key
    window, a second upload of the order), no retry setting but 0, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(target(name), "--retries", "0", "--workers", "1")


@pytest.mark.parametrize("name", ["partiql_insert_literal", "partiql_insert_parameters"])
def test_a_handler_claiming_with_a_partiql_insert_holds(monkeypatch, name):
    code, out, err = check(monkeypatch, name)
    assert code == 0, (out + err)[-3000:]
    assert "holds: " in out and "double_charge" not in out
    assert "before dynamodb:ExecuteStatement" in out  # the claim is a boundary like any other


def test_a_call_moto_fails_to_serve_inside_its_own_code_is_exit_2_naming_it_never_a_break(monkeypatch):
    code, out, err = check(monkeypatch, "partiql_decimal_literal")
    assert code == 2, (out + err)[-3000:]
    assert err.strip().splitlines() == [
        "idem check: the local AWS (moto) cannot serve dynamodb ExecuteStatement: TypeError: Float types are not "
        "supported. Use Decimal types instead; the check cannot judge this handler"]
    assert "breaks" not in out


# -- the INSERT itself, in the check's world --------------------------------------------------------
@pytest.fixture
def table():
    ensure_moto()
    dynamodb = fake_client("dynamodb")
    name = f"claims-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                          KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    yield dynamodb, name
    dynamodb.delete_table(TableName=name)


def item(dynamodb, name: str, pk: str) -> dict:
    return dynamodb.get_item(TableName=name, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")


def test_a_second_insert_of_one_key_is_refused_and_the_first_item_is_left_as_it_was(table):
    dynamodb, name = table
    answer = dynamodb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'pk': 'order#1', 'at': 1}}")
    assert answer["Items"] == []
    with pytest.raises(ClientError) as refused:
        dynamodb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'pk': 'order#1', 'at': 2, 'x': 'y'}}")
    assert refused.value.response["Error"]["Code"] == "DuplicateItemException"
    assert isinstance(refused.value, dynamodb.exceptions.DuplicateItemException)
    assert item(dynamodb, name, "order#1") == {"pk": {"S": "order#1"}, "at": {"N": "1"}}


def test_an_insert_binds_its_parameters_in_order_and_refuses_a_second_insert_of_the_key(table):
    dynamodb, name = table
    statement = f"INSERT INTO \"{name}\" VALUE {{'pk': ?, 'at': ?, 'note': '?', 'm': {{'n': ?}}}}"
    dynamodb.execute_statement(Statement=statement, Parameters=[
        {"S": "order#2"}, {"N": "1764979200.25"}, {"L": [{"S": "it's ?"}]}])
    first = item(dynamodb, name, "order#2")
    assert first == {"pk": {"S": "order#2"}, "at": {"N": "1764979200.25"}, "note": {"S": "?"},
                     "m": {"M": {"n": {"L": [{"S": "it's ?"}]}}}}
    with pytest.raises(ClientError) as refused:
        dynamodb.execute_statement(Statement=statement, Parameters=[{"S": "order#2"}, {"N": "2"}, {"NULL": True}])
    assert refused.value.response["Error"]["Code"] == "DuplicateItemException"
    assert item(dynamodb, name, "order#2") == first
    for wrong in ([{"S": "order#3"}], [{"S": "order#3"}, {"N": "1"}, {"N": "1"}, {"N": "1"}]):
        with pytest.raises(ClientError) as refused:
            dynamodb.execute_statement(Statement=statement, Parameters=wrong)
        assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert item(dynamodb, name, "order#3") is None


def test_other_statements_go_moto_s_own_way(table):
    dynamodb, name = table
    dynamodb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'pk': 'order#4', 'at': 1}}")
    dynamodb.execute_statement(Statement=f"UPDATE \"{name}\" SET at = ? WHERE pk = ?",
                               Parameters=[{"N": "5"}, {"S": "order#4"}])
    got = dynamodb.execute_statement(Statement=f"SELECT * FROM \"{name}\" WHERE pk = ?", Parameters=[{"S": "order#4"}])
    assert got["Items"] == [{"pk": {"S": "order#4"}, "at": {"N": "5"}}]
    dynamodb.execute_statement(Statement=f"DELETE FROM \"{name}\" WHERE pk = 'order#4'")
    assert item(dynamodb, name, "order#4") is None
    dynamodb.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'pk': 'order#4', 'at': 2}}")
    assert item(dynamodb, name, "order#4") == {"pk": {"S": "order#4"}, "at": {"N": "2"}}


def test_an_insert_into_a_table_that_does_not_exist_is_resource_not_found(table):
    dynamodb, _ = table
    with pytest.raises(ClientError) as refused:
        dynamodb.execute_statement(Statement="INSERT INTO \"no-such-table\" VALUE {'pk': 'a'}")
    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_only_an_exception_raised_inside_moto_s_own_code_is_moto_s_failure():
    from py_partiql_parser._internal.insert_parser import InsertParser

    from idem.explore.sandbox.stand_ins import moto_failed

    with pytest.raises(TypeError) as inside:
        InsertParser().parse("INSERT INTO \"t\" VALUE {'pk': 'a', 'at': 1.5}")
    assert moto_failed(inside.value)
    with pytest.raises(TypeError) as outside:
        int([])  # type: ignore[call-overload]
    assert not moto_failed(outside.value)  # the handler's own (or the check's): not moto's
    assert not moto_failed(ClientError({"Error": {"Code": "ValidationException", "Message": "no"}}, "PutItem"))
