"""Wrong: each accepted order is announced to the warehouse on a FIFO SNS topic with PublishBatch
(deduplicated by a hash of the account and the order id), and the answer is never read. PublishBatch
answers each entry in `Successful` or `Failed` ("A list of failed PublishBatch responses":
https://docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SNS/Types/PublishBatchResponse.html; each a
BatchResultErrorEntry with Code and SenderFault:
https://docs.aws.amazon.com/sns/latest/api/API_BatchResultErrorEntry.html) with HTTP 200: a failed
entry is an order the warehouse never hears of, and nothing fails. Must BREAK in the runs family
(silent_loss), checked with `--effect sns:PublishBatch` (counted as the topic delivers)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TOPIC_ARN = os.environ["ORDERS_TOPIC_ARN"]


def lambda_handler(event, context):
    s3, sns = boto3.client("s3"), boto3.client("sns")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        ref = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        sns.publish_batch(TopicArn=TOPIC_ARN, PublishBatchRequestEntries=[{
            "Id": "order", "Message": json.dumps({"account": account, "order_id": order["order_id"]}),
            "MessageGroupId": account, "MessageDeduplicationId": ref}])
    return {"announced": True}
