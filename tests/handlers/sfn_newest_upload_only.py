"""Starts the (STANDARD) fulfilment workflow for the NEWEST upload of each file name only: an event
whose S3 sequencer is smaller than the one already handled for its name is older ("the event
notification with the greater sequencer value occurred after",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html) and is
skipped on purpose: the team's rule is that a newer file at a name supersedes the older one. The
execution is named by account and order id, the same input each time (STANDARD: the same execution,
https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
With `--ordering sequencer` (the rule declared) it HOLDS with `--effect stepfunctions:StartExecution
--setup sfn_setup.py:with_markers`: an order superseded by a newer upload may have no workflow of its
own. Without it, every order is owed its workflow, and the older order skipped is a silent_loss (in
the overwrite schedules where the first order's retry comes after the second order's upload)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

sfn = boto3.client("stepfunctions")
s3 = boto3.client("s3")
dynamodb = boto3.client("dynamodb")


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        key = unquote_plus(obj["key"])
        sequencer = obj["sequencer"].rjust(32, "0")
        marker = {"pk": {"S": f"newest#{bucket}/{key}"}}
        seen = dynamodb.get_item(TableName=os.environ["MARKER_TABLE"], Key=marker, ConsistentRead=True).get("Item")
        if seen and seen["sequencer"]["S"] > sequencer:
            print(f"{key}: an older upload than one already handled, skipped")
            continue
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=key, **read)["Body"].read())
        account = key.split("/", 1)[0]
        name = "order-" + hashlib.sha256(f"{account}\n{order['order_id']}".encode()).hexdigest()
        try:
            sfn.start_execution(stateMachineArn=os.environ["STATE_MACHINE_ARN"], name=name,
                                input=json.dumps({"account": account, "order_id": order["order_id"],
                                                  "amount_cents": order["amount_cents"]}))
        except sfn.exceptions.ExecutionAlreadyExists:
            pass  # started before, by a copy or a retry
        dynamodb.put_item(TableName=os.environ["MARKER_TABLE"], Item={**marker, "sequencer": {"S": sequencer}})
    return {"ok": True}
