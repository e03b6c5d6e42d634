"""Correct: starts one Step Functions execution per order, named by the order (`order-` and a hash of
the account, the key's first folder, and the order id: two accounts' order "1001" are two orders,
docs/money_contract.md) with the order as its input. A retry or a copy starts it again with the same name and input, and
StartExecution answers with the execution already running ("If StartExecution is called with the
same name and input as a running execution, the call succeeds and return the same response as the
original request": https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html;
moto does the same); a finished one answers ExecutionAlreadyExists, which means started. HOLDS with
`--effect stepfunctions:StartExecution --setup sfn_setup.py:create`: one execution per order."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

STATE_MACHINE_ARN = os.environ["STATE_MACHINE_ARN"]


def lambda_handler(event, context):
    sfn, s3 = boto3.client("stepfunctions"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        # hex digits and "-" only: none of the characters a name must not contain (70 of them),
        # https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/sfn/aws.sdk.kotlin.services.sfn.model/-start-execution-request/name.html
        order_name = "order-" + hashlib.sha256(f"{account}\n{order['order_id']}".encode()).hexdigest()
        try:
            started = sfn.start_execution(stateMachineArn=STATE_MACHINE_ARN, name=order_name,
                                          input=json.dumps({"order_id": order["order_id"],
                                                            "amount_cents": order["amount_cents"]}))
            print(json.dumps({"order": order["order_id"], "execution": started["executionArn"]}))
        except sfn.exceptions.ExecutionAlreadyExists:
            print(json.dumps({"order": order["order_id"], "execution": "already started"}))
    return {"ok": True}
