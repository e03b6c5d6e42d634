"""Starts the fulfilment workflow once per order, "deduplicated by Step Functions": the execution is
named by the account and the order id and gets the same input each time. But the state machine is an
EXPRESS workflow (`--setup sfn_setup.py:express`), and StartExecution is idempotent for STANDARD
workflows only: "StartExecution isn't idempotent for EXPRESS workflows"
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html); "Idempotency
is not automatically managed. Starting multiple workflows with the same name results in concurrent
executions." (https://docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html)
BREAKS with `--effect stepfunctions:StartExecution`: double_effect on "no fault; duplicate; 0 retries"
and on every copy that starts after states:StartExecution (two executions for one order). The same
code on a STANDARD machine (sfn_starter.py) holds."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

sfn = boto3.client("stepfunctions")
s3 = boto3.client("s3")


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        key = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=key, **read)["Body"].read())
        account = key.split("/", 1)[0]
        name = "order-" + hashlib.sha256(f"{account}\n{order['order_id']}".encode()).hexdigest()
        try:
            sfn.start_execution(stateMachineArn=os.environ["STATE_MACHINE_ARN"], name=name,
                                input=json.dumps({"account": account, "order_id": order["order_id"],
                                                  "amount_cents": order["amount_cents"]}))
        except sfn.exceptions.ExecutionAlreadyExists:
            print(f"{name} already started")
    return {"ok": True}
