"""The keyed protocol on one screen (chapter 06): claim with a lease, charge with the key, commit
fenced to the owner, and the loser's three answers. Plain boto3 calls on the ledger table.

`handle` has the shape of the workbook's handlers (`sim.runtime.handle_entry` runs it), so the same
runs that judge chapter 05's fix judge it (tests/test_protocol.py): copies at every call, the
provider down, a crash before and after the charge, a lease that ends while its owner still runs.
It is the skeleton of `keyed.py`, the handler to copy, which adds what production needs: reading
each provider answer by its meaning (409, a saved 500, a decline), `declined` and
`needs_attention` records, the look-up past the provider's key window, logs and metrics.
"""
from __future__ import annotations

import uuid
from typing import Any

from botocore.exceptions import ClientError

from idem.core.handlers.common import order_for  # absolute: the runtime loads this file alone


class WorkInProgress(Exception):
    """Another copy holds a live lease: fail, and Lambda retries this one later."""


def handle(obj: Any, svc: Any, context: Any) -> dict[str, Any]:
    db, table, order = svc.ledger.client, svc.ledger.table, order_for(obj, svc)
    me, record, now = uuid.uuid4().hex, {"pk": {"S": order.key}}, int(svc.clock.now())
    lease_until = now + context.get_remaining_time_in_millis() // 1000  # ends at the deadline
    try:  # 1. claim with a lease: no record yet, or an unfinished one whose lease is over
        db.put_item(
            TableName=table, ReturnValuesOnConditionCheckFailure="ALL_OLD",
            Item={**record, "status": {"S": "in_progress"}, "owner": {"S": me},
                  "lease_until": {"N": str(lease_until)}},
            ConditionExpression="attribute_not_exists(pk) OR (#s = :busy AND lease_until < :now)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":busy": {"S": "in_progress"}, ":now": {"N": str(now)}})
    except ClientError as lost:  # the loser's three answers, read from the record that refused it
        status = lost.response.get("Item", {}).get("status", {}).get("S")
        if status == "done":
            return {"status": "duplicate"}  # finished before: stand down
        if status == "in_progress":
            raise WorkInProgress(order.key) from None  # a live copy: retry later
        raise  # anything else is for a person: the event goes on to the failure queue
    try:  # 2. charge with the order's key: a retry's charge is the provider's replay of the first
        charge = svc.provider.charge(customer=order.account, amount=order.amount_cents,
                                     currency=svc.currency, reference=order.reference,
                                     idempotency_key=order.key)
    except Exception:  # release: give the lease back, so Lambda's retry takes over at once
        db.update_item(TableName=table, Key=record, UpdateExpression="SET lease_until = :now",
                       ConditionExpression="#o = :me", ExpressionAttributeNames={"#o": "owner"},
                       ExpressionAttributeValues={":now": {"N": str(now)}, ":me": {"S": me}})
        raise
    # 3. commit, fenced to the owner: the record turns done and the books count it, or neither
    done = {":done": {"S": "done"}, ":id": {"S": charge.id}, ":me": {"S": me}}
    cents = {":one": {"N": "1"}, ":cents": {"N": str(order.amount_cents)}}
    db.transact_write_items(TransactItems=[  # a zombie's commit fails here: the new owner books it
        {"Update": {"TableName": table, "Key": record, "ConditionExpression": "#o = :me",
                    "UpdateExpression": "SET #s = :done, charge_id = :id",
                    "ExpressionAttributeNames": {"#s": "status", "#o": "owner"},
                    "ExpressionAttributeValues": done}},
        {"Update": {"TableName": table, "Key": {"pk": {"S": f"account#{order.account}"}},
                    "UpdateExpression": "ADD charges :one, cents :cents",
                    "ExpressionAttributeValues": cents}}])
    return {"status": "charged", "charge_id": charge.id, "amount_cents": charge.amount}
