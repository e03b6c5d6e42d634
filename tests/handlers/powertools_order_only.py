"""Wrong: Powertools for AWS Lambda's idempotency utility on the function that charges one order, its
idempotency key a subset of the order's payload: `event_key_jmespath="order_id"` ("the order id is
unique"). It is unique within an account only: two accounts' uploads with the same order id are one
idempotency record, and the second account's order gets the first one's saved result, uncharged.
Powertools hashes exactly the subset it is given ("By default, the entire first argument is hashed to
create the idempotency key. Use eventKeyJmesPath to hash only a subset of the payload", its TypeScript
twin's words: https://tessl.io/registry/tessl/npm-aws-lambda-powertools--idempotency/files/docs/function-wrapper.md;
"The JMESPath expression used to extract the idempotency key from the event":
https://docs.aws.amazon.com/powertools/typescript/latest/api/classes/_aws-lambda-powertools_idempotency.index.IdempotencyConfig.html), and the account is not
in the order file but in the key's first folder. Must BREAK in the accounts family (silent_loss)."""
import json
import os
from urllib.parse import unquote_plus

import boto3
from aws_lambda_powertools.utilities.idempotency import (DynamoDBPersistenceLayer, IdempotencyConfig,
                                                         idempotent_function)

TABLE = os.environ["LEDGER_TABLE"]
persistence = DynamoDBPersistenceLayer(table_name=TABLE, key_attr="pk")
config = IdempotencyConfig(event_key_jmespath="order_id")


def make_provider():
    raise RuntimeError("the check replaces this")


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
def charge_order(order: dict) -> dict:
    charge = make_provider().charge(customer="acct-1", amount=order.get("amount_cents", 500), currency="usd",
                                    reference=order["reference"], idempotency_key=f"order-{order['order_id']}-"
                                    f"{order['account']}")
    boto3.client("dynamodb").put_item(TableName=TABLE, Item={
        "pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id}})
    return {"charge_id": charge.id}


def lambda_handler(event, context):
    config.register_lambda_context(context)
    s3 = boto3.client("s3")
    done = []
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        order.update(account=name.split("/", 1)[0], reference=f"{bucket}/{name}")
        done.append(charge_order(order=order))
    return {"charges": done}
