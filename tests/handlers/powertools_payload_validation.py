"""Wrong: Powertools for AWS Lambda's idempotency utility keyed by the object's name, with payload validation
on its ETag ("so a different file at the same name is refused, not answered from the saved result":
`payload_validation_jmespath` raises IdempotencyValidationError when the payload differs,
https://docs.powertools.aws.dev/lambda/python/latest/utilities/idempotency/), the provider given a key made
from the bucket and the name. Powertools keeps its record for `expires_after_seconds`, one hour by default
(the same page): the same order uploaded again a day later finds no record, and Stripe keeps a key
"at least 24 hours" (https://docs.stripe.com/idempotency), so it is charged again. Must BREAK
(double_charge in the late and again families); a second order at the same name fails visibly."""
import hashlib
import os

import boto3
from aws_lambda_powertools.utilities.idempotency import (DynamoDBPersistenceLayer, IdempotencyConfig,
                                                         idempotent)

TABLE = os.environ["LEDGER_TABLE"]
persistence = DynamoDBPersistenceLayer(table_name=TABLE, key_attr="pk")
config = IdempotencyConfig(event_key_jmespath="Records[0].s3.object.key",
                           payload_validation_jmespath="Records[0].s3.object.eTag")


def make_provider():
    raise RuntimeError("the check replaces this")


@idempotent(persistence_store=persistence, config=config)
def lambda_handler(event, context):
    s3 = event["Records"][0]["s3"]
    upload = f"{s3['bucket']['name']}/{s3['object']['key']}"
    key = hashlib.sha256(upload.encode()).hexdigest()
    charge = make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=upload,
                                    idempotency_key=key)
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked by an attempt whose answer was lost
    return {"charge_id": charge.id}
