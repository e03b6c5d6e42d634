"""Claims the handler to copy makes about its libraries and AWS, checked against them (botocore 1.44)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest

from idem.core.handlers import keyed, keyed_settings


@pytest.fixture
def throttling_dynamodb():
    """A DynamoDB that throttles the first request and asks, in `x-amz-retry-after`, for 5 s before the retry."""
    sent: list[float] = []

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            sent.append(time.monotonic())
            throttled = len(sent) == 1
            body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                               "message": "Rate exceeded"} if throttled else {}).encode()
            self.send_response(400 if throttled else 200)
            if throttled:
                self.send_header("x-amz-retry-after", "5000")  # milliseconds
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)  # a kept-alive connection holds only its thread
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", sent
    server.shutdown()
    server.server_close()


def test_a_throttled_aws_call_keeps_within_aws_call_seconds(throttling_dynamodb):
    """botocore 1.44's standard mode waits what `x-amz-retry-after` asks, up to 5 s past its own backoff
    (botocore/retries/standard.py, ExponentialBackoff.delay_amount): 5 s here, where AWS_CALL_SECONDS allows
    1 s of backoff. The handler's clients keep to the budget: the retry comes within 1 s."""
    url, sent = throttling_dynamodb
    client = keyed_settings.bounded(boto3.client(
        "dynamodb", region_name="us-east-1", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
        config=keyed_settings.aws_config()))
    started = time.monotonic()
    client.get_item(TableName="ledger", Key={"pk": {"S": "k"}})
    took = time.monotonic() - started
    assert len(sent) == 2
    assert sent[1] - sent[0] <= 1.5, sent[1] - sent[0]  # the backoff of at most 1 s, and scheduling
    assert took < keyed_settings.AWS_CALL_SECONDS, took


def test_the_ledger_client_the_handler_builds_keeps_within_aws_call_seconds(monkeypatch, throttling_dynamodb):
    """The DynamoDB client lambda_handler builds at cold start, throttled as above: its retry comes within 1 s."""
    url, sent = throttling_dynamodb
    real, built = boto3.client, {}

    def client(name, **kwargs):
        built[name] = real(name, region_name="us-east-1", endpoint_url=url, aws_access_key_id="x",
                           aws_secret_access_key="x", **kwargs)
        return built[name]

    monkeypatch.setattr(keyed.boto3, "client", client)
    monkeypatch.setattr(keyed, "_charger", None)
    monkeypatch.setattr(keyed, "make_provider", lambda: object())
    monkeypatch.setenv("LEDGER_TABLE", "ledger")

    class Context:
        aws_request_id, function_name = "r", "f"

    keyed.lambda_handler({"Event": "s3:TestEvent"}, Context())
    started = time.monotonic()
    built["dynamodb"].get_item(TableName="ledger", Key={"pk": {"S": "k"}})
    took = time.monotonic() - started
    assert len(sent) == 2 and sent[1] - sent[0] <= 1.5, sent
    assert took < keyed_settings.AWS_CALL_SECONDS, took


@pytest.mark.parametrize("code, status, parked", [("NoSuchKey", 404, True), ("AccessDenied", 403, False)])
def test_pins_gap_a_deleted_order_file_is_a_403_to_the_deployed_role_and_is_not_parked(code, status, parked):
    """A GAP, pinned: the stack's role has s3:GetObject but not s3:ListBucket, and without ListBucket S3
    answers a missing object with 403 AccessDenied, not 404 NoSuchKey
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, "Permissions"). The handler parks
    a NoSuchKey ("gone; nothing was charged") but raises on a 403: in the stack a deleted order file
    fails until the failure queue takes it. No money moves. Closing it means granting ListBucket or
    reading a 403 as gone (which would park every order if the permission were really missing)."""
    from botocore.stub import Stubber

    from idem.core.handlers import keyed_orders

    upload = keyed_orders.Upload("uploads", "alice/order.json", None, "abc", "00AB", 0.0)
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(s3) as stub:
        stub.add_client_error("get_object", service_error_code=code, http_status_code=status)
        if parked:
            with pytest.raises(keyed_settings.NeedsAttention):
                keyed_orders.read_order(upload, s3)
        else:
            with pytest.raises(Exception) as raised:
                keyed_orders.read_order(upload, s3)
            assert not isinstance(raised.value, keyed_settings.NeedsAttention)
