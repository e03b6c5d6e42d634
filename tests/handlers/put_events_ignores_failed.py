"""Wrong: each uploaded order is put on the default EventBridge bus ("OrderReceived") with PutEvents, and
FailedEntryCount is never read. "By default, if an individual entry within a request fails, EventBridge
continues processing the rest of the entries in the request. A response Entries array can include both
successful and unsuccessful entries. You must detect unsuccessful entries and include them in a
subsequent call." (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevents.html). A failed
entry is an order no rule ever sees, and the call succeeded. Must BREAK with a silent_loss in the runs
family, checked with `--effect events:PutEvents` (it breaks there with double_effect too: PutEvents has no
idempotency token, so botocore's resend of a lost answer puts the event twice)."""
import json
from urllib.parse import unquote_plus

import boto3


def lambda_handler(event, context):
    s3, events = boto3.client("s3"), boto3.client("events")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        events.put_events(Entries=[{"Source": "shop.orders", "DetailType": "OrderReceived",
                                    "Detail": json.dumps({"account": name.split("/", 1)[0], "order": order})}])
    return {"ok": True}
