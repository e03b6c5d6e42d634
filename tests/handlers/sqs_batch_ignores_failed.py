"""Wrong: order intake. Each uploaded order file is forwarded to the payments service's FIFO queue with
SendMessageBatch ("one call for a file of up to 10 orders"), deduplicated by a hash of the account and
the order id, and the answer is never read. SendMessageBatch is not all or nothing: "For each message in
the batch, the response contains a SendMessageBatchResultEntry tag if the message succeeds or a
BatchResultErrorEntry tag if the message fails" (`Failed`: "error details about each message that can't
be enqueued": https://docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SQS/Types/SendMessageBatchResult.html),
with HTTP 200, so neither botocore nor an `except` sees it. A failed entry is an order never sent to
payments, and nothing fails. Must BREAK in the runs family (silent_loss), checked with
`--effect sqs:SendMessageBatch` (counted as the queue delivers)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

QUEUE_URL = os.environ["PAYMENTS_QUEUE_URL"]


def lambda_handler(event, context):
    s3, sqs = boto3.client("s3"), boto3.client("sqs")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {}
        body = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        orders = body if isinstance(body, list) else [body]
        account = name.split("/", 1)[0]
        entries = []
        for i, order in enumerate(orders[:10]):
            ref = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
            entries.append({"Id": str(i), "MessageBody": json.dumps({"account": account, "order": order}),
                            "MessageGroupId": account, "MessageDeduplicationId": ref})
        sqs.send_message_batch(QueueUrl=QUEUE_URL, Entries=entries)
    return {"forwarded": True}
