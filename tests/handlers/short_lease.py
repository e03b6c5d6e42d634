"""Wrong when the work outlasts the lease: a claim with a fixed lease (LEASE_SECONDS, 10 s by
default, "a charge takes a second"), the charge under the claim's key, then one transaction that
writes the ledger line (its own item, a new id) and marks the claim done, with no check that this
invocation still owns the claim. If a call takes longer than the lease (the function's timeout is
30 s), a copy of the event takes the claim over, gets the same charge replayed and books it; then
the first invocation's commit books it again. Must BREAK (silent_mismatch, "a ledger line with no
charge"), which only a schedule where time passes inside an invocation can show: with every call
instantaneous it holds. With LEASE_SECONDS at least the timeout (--env LEASE_SECONDS=60) it holds."""
import os
import time
import uuid

import boto3

TABLE = os.environ["LEDGER_TABLE"]
LEASE_SECONDS = float(os.environ.get("LEASE_SECONDS", "10"))


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]["object"]
        key = f"{record['s3']['bucket']['name']}/{s3['key']}#{s3['eTag']}"  # the order's content (docs/one_charge_per_order.md)
        try:
            dynamodb.put_item(
                TableName=TABLE,
                Item={"pk": {"S": key}, "status": {"S": "in_progress"},
                      "lease_until": {"N": str(time.time() + LEASE_SECONDS)}},
                ConditionExpression="attribute_not_exists(pk) OR (#s = :ip AND lease_until < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":ip": {"S": "in_progress"}, ":now": {"N": str(time.time())}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            if taken.response.get("Item", {}).get("status", {}).get("S") == "done":
                continue  # a duplicate: done already
            raise RuntimeError(f"{key} is being worked on: let Lambda retry") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                 idempotency_key=key)
        dynamodb.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"line#{uuid.uuid4()}"},
                                                  "charge_id": {"S": charge.id}}}},
            {"Update": {"TableName": TABLE, "Key": {"pk": {"S": key}},
                        "UpdateExpression": "SET #s = :done",  # the bug: no owner, no fence
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":done": {"S": "done"}}}}])
    return {"ok": True}
