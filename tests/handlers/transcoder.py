"""A video transcoder as teams write it for MediaConvert, which moto does not implement: it asks for
the account's endpoint at import (as MediaConvert's docs once advised), then starts one job per
upload. `lambda_handler` passes no ClientRequestToken, so Lambda's retry after a lost answer starts
a second job (breaks). The check answers both calls with stand-ins and names them in its report."""
import hashlib
import os
from urllib.parse import unquote_plus

import boto3

ENDPOINT = boto3.client("mediaconvert").describe_endpoints()["Endpoints"][0]["Url"]
CLIENT = boto3.client("mediaconvert", endpoint_url=ENDPOINT)
ROLE = os.environ.get("MEDIACONVERT_ROLE", "arn:aws:iam::123456789012:role/mediaconvert")


def lambda_handler(event, context):
    for record in event["Records"]:
        key = unquote_plus(record["s3"]["object"]["key"])
        CLIENT.create_job(Role=ROLE, Settings={"Inputs": [{"FileInput": f"s3://{record['s3']['bucket']['name']}/{key}"}]},
                          UserMetadata={"source": hashlib.sha256(key.encode()).hexdigest()[:16]})
    return {"ok": True}
