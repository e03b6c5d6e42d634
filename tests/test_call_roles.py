"""A call's role (idem.sim.platform.call_roles): what a request asks, told apart from its data, and how a second
fault pinned to a role strikes only that role's requests at a boundary."""
from __future__ import annotations

from idem.sim.platform.call_roles import SHOWN, role_of, shown
from idem.sim.faults import Boundary, FaultPlan, Side


def put(pk: str, **item: str) -> dict:
    return {"TableName": "ledger", "Item": {"pk": {"S": pk}, **{k: {"S": v} for k, v in item.items()}},
            "ConditionExpression": "attribute_not_exists(pk)"}


def test_two_orders_claims_share_a_role_and_a_park_is_another_request_than_a_commit():
    assert role_of("dynamodb:PutItem", put("order#1", status="in_progress", at="2026-12-31T23:58:00Z")) == \
        role_of("dynamodb:PutItem", put("order#2", status="in_progress", at="2027-01-01T00:01:00Z"))  # data
    # a status word is the code's, not data: a claim and a booking written alike are two requests
    assert role_of("dynamodb:PutItem", put("order#1", status="in_progress")) != \
        role_of("dynamodb:PutItem", put("order#1", status="done"))
    commit = {"TableName": "ledger", "Key": {"pk": {"S": "order#1"}}, "UpdateExpression": "SET #s = :s, charge_id = :c",
              "ExpressionAttributeNames": {"#s": "status"}, "ExpressionAttributeValues": {":s": {"S": "done"}}}
    park = {**commit, "UpdateExpression": "SET #s = :s, reason = :r"}
    assert role_of("dynamodb:UpdateItem", commit) != role_of("dynamodb:UpdateItem", park)
    assert "status" in role_of("dynamodb:UpdateItem", commit)  # the attribute a name stands for
    # the same expressions, another status word: two requests (status_helper); another datum: one
    parked_value = {**commit, "ExpressionAttributeValues": {":s": {"S": "needs_attention"}}}
    assert role_of("dynamodb:UpdateItem", commit) != role_of("dynamodb:UpdateItem", parked_value)
    assert 'values :s="needs_attention"' in role_of("dynamodb:UpdateItem", parked_value)
    reasons = [{**commit, "ExpressionAttributeValues": {":s": {"S": "done"}, ":r": {"S": why}}}
               for why in ("file changed: PreconditionFailed", "no linked customer for alice")]
    assert role_of("dynamodb:UpdateItem", reasons[0]) == role_of("dynamodb:UpdateItem", reasons[1])


def test_a_transaction_a_batch_and_other_services_are_named_by_what_their_code_fixes():
    one = {"TransactItems": [{"Put": put("order#1")}, {"Update": {"TableName": "books", "UpdateExpression": "ADD n :one"}}]}
    two = {"TransactItems": [{"Put": put("order#2")}, {"Update": {"TableName": "books", "UpdateExpression": "ADD n :one"}}]}
    assert role_of("dynamodb:TransactWriteItems", one) == role_of("dynamodb:TransactWriteItems", two)
    assert "ADD n :one" in role_of("dynamodb:TransactWriteItems", one)
    line = {"PutRequest": {"Item": {"pk": {"S": "order#1"}, "charge_id": {"S": "ch_1"}}}}
    batch = {"RequestItems": {"books": [line]}}
    assert "charge_id" in role_of("dynamodb:BatchWriteItem", batch)
    # two orders' lines ask what one order's line asks: a batch's size is data
    assert role_of("dynamodb:BatchWriteItem", {"RequestItems": {"books": [line, line]}}) == \
        role_of("dynamodb:BatchWriteItem", batch)
    assert role_of("s3:PutObject", {"Bucket": "archive", "Key": "a/1.json"}) == \
        role_of("s3:PutObject", {"Bucket": "archive", "Key": "b/2.json"}) != role_of("s3:PutObject", {"Bucket": "out"})
    assert role_of("sqs:SendMessage", {"QueueUrl": "q", "MessageBody": "x"}) == "QueueUrl=q"
    assert role_of("dynamodb:PutItem", None) == "" and role_of("sts:GetCallerIdentity", {}) == ""
    assert len(shown("x" * 200)) == SHOWN and shown("short") == "short"


def test_a_second_fault_pinned_to_a_role_strikes_only_that_role_at_its_boundary():
    at = Boundary("dynamodb:UpdateItem", 1, Side.BEFORE)
    plan = FaultPlan(also=FaultPlan(at, "1", role="ledger; SET #s = :s, reason = :r"))
    assert plan.at_boundary(at, "ledger; SET #s = :s, reason = :r") is plan.also
    assert plan.at_boundary(at, "ledger; SET payment_method = :m") is plan  # the clean run's request: no fault
    assert not plan.strikes(at, "ledger; SET #s = :s, reason = :r")  # no first fault
    unpinned = FaultPlan(also=FaultPlan(at, "1"))
    assert unpinned.at_boundary(at, "anything") is unpinned.also
