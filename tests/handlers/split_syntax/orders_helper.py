def charge_order(event):
    for record in event["Records"]:
        key = record["s3"]["object"]["key"
    return {"ok": True}
