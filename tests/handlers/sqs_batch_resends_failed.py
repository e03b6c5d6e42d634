"""Right about partial answers: sqs_batch_ignores_failed, but it reads SendMessageBatch's answer. The
entries in `Failed` ("error details about each message that can't be enqueued":
https://docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SQS/Types/SendMessageBatchResult.html) are sent again
with a backoff, under the same MessageDeduplicationId (a FIFO queue drops a repeat of an id within its
5-minute deduplication interval:
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html),
and an order still failing fails the invocation, so Lambda retries it. In the runs family
(`--effect sqs:SendMessageBatch`) it must lose NO order (no silent_loss); it must still BREAK there once
(double_effect), and not by a partial answer: every SDK attempt's answer lost, Lambda's retry (1 minute
to the event's maximum age later) sends the order again past the queue's 5-minute deduplication
interval. No producer can send to SQS exactly once past that window; its consumer must deduplicate."""
import hashlib
import json
import os
import time
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
        for wait in (0.1, 0.2, 0.4, 0.8, 1.6):
            failed = {f["Id"] for f in sqs.send_message_batch(QueueUrl=QUEUE_URL, Entries=entries).get("Failed", [])}
            entries = [entry for entry in entries if entry["Id"] in failed]
            if not entries:
                break
            time.sleep(wait)
        else:
            raise RuntimeError(f"{name}: {len(entries)} order(s) not accepted by the payments queue")
    return {"forwarded": True}
