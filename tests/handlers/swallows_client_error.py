"""Wrong, on purpose, as many samples are written: charges the order, then books it, and answers
`except ClientError: return 500` when the booking fails. Lambda takes a returned 500 for a success:
a throttled PutItem (botocore's ProvisionedThroughputExceededException, once its retries are
spent) leaves a charge with no ledger line and nothing to alert. Only a check whose injected
faults are what botocore raises can show it (a plain Exception is never caught here)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        key = hashlib.sha256(f"{bucket}/{name}#{obj['eTag']}".encode()).hexdigest()  # one per order's content
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        except ClientError as error:  # the bug: a 500 returned is a success to Lambda
            return {"statusCode": 500, "body": json.dumps({"error": error.response["Error"]["Code"]})}
    return {"statusCode": 200}
