import json
import os
import time

import boto3

s3 = boto3.client("s3")
transcribe = boto3.client("transcribe")

output_bucket = os.environ["OUTPUT_BUCKET"]


def lambda_handler(event, context):
    try:
        for record in event["Records"]:
            # the uploaded audio file
            bucket_name = record["s3"]["bucket"]["name"]
            key = record["s3"]["object"]["key"]
            size = s3.head_object(Bucket=bucket_name, Key=key)["ContentLength"]
            print(f"Audio file s3://{bucket_name}/{key}: {size} bytes")

            # a job name from the file's name and the time
            job_name = key.rsplit(".", 1)[0].replace("/", "-") + "-" + str(int(time.time()))
            job_name = job_name[:200]

            # start the transcription job
            response = transcribe.start_transcription_job(
                TranscriptionJobName=job_name,
                IdentifyLanguage=True,
                Media={"MediaFileUri": f"s3://{bucket_name}/{key}"},
                OutputBucketName=output_bucket,
                OutputKey=job_name + ".json",
            )

        return {
            "statusCode": 200,
            "body": json.dumps(response["TranscriptionJob"]["TranscriptionJobName"]),
        }

    except Exception as e:
        print("Error")
        print(str(e))
        return {"statusCode": 500, "body": str(e)}
