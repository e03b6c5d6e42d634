"""Issue 41, the adversary's fourth round: handlers written as teams write them (tests/handlers/adv4_*.py),
each with the verdict a correct checker must give and the published fact behind it in its docstring. Each
test runs the CLI on the families of schedules that show the point, with one retry setting and one worker.

Wrong before this file, and fixed:
- `adv4_put_events_only` (charges only for ObjectCreated:Put) was said to hold: every upload of the check
  was a PutObject. The family `uploads` uploads the order by POST and by a real multipart upload
  (idem.explore.families.upload_kinds; docs/reliability.md).
- `adv4_transact_cancel_done` (reads every TransactionCanceledException as "booked by a copy") was said to
  hold: a throttle before TransactWriteItems was a ProvisionedThroughputExceededException, where DynamoDB
  cancels the transaction (idem.sim.sdk_retries.cancelled_transaction; docs/reliability.md).
- `adv4_event_time_only` broke, but its report's first line said "the key is not URL-decoded": the names
  family missed its plain twin, whose delays are drawn (docs/check_from_a_template.md, P3).

`adv4_archive_same_bucket`, pinned here as a gap before, breaks now: tests/test_check_own_writes.py.
"""
from __future__ import annotations

import re

import pytest

from check_cli import cli, target


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def verdicts(out: str) -> dict[str, int]:
    """The report's tally: each verdict and how many schedules ended in it."""
    return {name: int(n) for name, n in re.findall(r"^  ([a-z_]+) +(\d+)", out, flags=re.M)}


def broken_families(out: str) -> set[str]:
    """The families the report names among its breaks ("3 of the 6 accounts")."""
    line = next((line for line in out.splitlines() if line.startswith("breaks in ")), "")
    return set(re.findall(r"\d+ of the \d+ ([a-z_]+)", line))


# -- uploads other than PutObject: fixed ------------------------------------------------------------
def test_a_handler_charging_only_for_object_created_put_loses_an_order_uploaded_by_post_or_multipart(monkeypatch):
    code, out, err = check(monkeypatch, target("adv4_put_events_only"), families="uploads")
    assert code == 1 and verdicts(out) == {"silent_loss": 2}, (out + err)[-3000:]
    assert "the order uploaded by POST (ObjectCreated:Post)" in out, out[:3000]
    assert broken_families(out) == {"uploads"}, out[:3000]


@pytest.mark.parametrize("trigger", ["s3", "sqs", "eventbridge"])
def test_the_handler_to_copy_charges_an_order_uploaded_by_post_or_multipart_once(monkeypatch, trigger):
    code, out, err = check(monkeypatch, "idem.core.handlers.keyed:lambda_handler", "--trigger", trigger,
                           families="uploads")
    assert code == 0 and verdicts(out) == {"exactly_once": 2}, (out + err)[-3000:]


def test_a_multipart_upload_is_a_real_one_and_its_event_says_so():
    from idem.core.events import s3_record
    from idem.sim.triggers import eventbridge_event
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="multipart") as world:
        obj = world.upload("alice/order.json", b'{"order_id": "1"}', by="CompleteMultipartUpload")
        stored = world.s3.head_object(Bucket=world.bucket, Key="alice/order.json", VersionId=obj.version_id)
        assert stored["ETag"].strip('"') == obj.etag and obj.etag.endswith("-1")  # the parts' ETag, as S3 makes it
        assert s3_record(obj)["eventName"] == "ObjectCreated:CompleteMultipartUpload"
        assert eventbridge_event(obj)["detail"]["reason"] == "CompleteMultipartUpload"
        posted = world.upload("alice/other.json", b'{"order_id": "2"}', by="POST Object")
        assert s3_record(posted)["eventName"] == "ObjectCreated:Post"
        assert eventbridge_event(posted)["detail"]["reason"] == "POST Object"


# -- a throttled transaction is cancelled: fixed ---------------------------------------------------
def test_a_handler_reading_every_cancelled_transaction_as_booked_leaves_a_charge_without_books(monkeypatch):
    code, out, err = check(monkeypatch, target("adv4_transact_cancel_done"), families="faults")
    assert code == 1 and verdicts(out).get("silent_mismatch"), (out + err)[-3000:]
    assert "exception before dynamodb:TransactWriteItems" in out and "a charge with no ledger line" in out, out[:3000]


def test_a_throttle_before_transact_write_items_is_a_cancelled_transaction_naming_its_reason():
    from idem.sim.sdk_retries import aws_error, cancelled_transaction
    from idem.sim.faults import Boundary, Side

    throttle = aws_error(Boundary("dynamodb:TransactWriteItems", 1, Side.BEFORE), 1)
    request = {"body": b'{"TransactItems": [{"Put": {}}, {"Update": {}}]}'}
    http, answer = cancelled_transaction("dynamodb:TransactWriteItems", throttle, request)
    assert http.status_code == 400 and answer["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in answer["CancellationReasons"]] == ["ThrottlingError", "None"]
    assert cancelled_transaction("dynamodb:PutItem", aws_error(Boundary("dynamodb:PutItem", 1, Side.BEFORE), 1),
                                 request) is None  # any other call's throttle stays a throttle


# -- the names family judged against its plain twin: fixed -----------------------------------------
def test_a_key_made_from_event_time_alone_breaks_in_accounts_and_is_not_called_a_decoding_fault(monkeypatch):
    code, out, err = check(monkeypatch, target("adv4_event_time_only"), families="faults,accounts,names")
    assert code == 1 and verdicts(out).get("silent_loss"), (out + err)[-3000:]
    assert "accounts" in broken_families(out), out[:3000]
    assert "the key is not URL-decoded" not in out, out[:3000]


# -- new kinds of handler, judged right already (kept) ---------------------------------------------
@pytest.mark.parametrize("name, args, families, retries, verdict", [
    ("adv4_sequencer_only", (), "overwrite", "0", "double_charge"),  # the uploader's retried PUT has a new sequencer
    ("adv4_powertools_object_key", (), "overwrite", "0", "silent_loss"),  # a second order at the name: "a repeat"
    ("adv4_if_match_stale_skip", (), "overwrite", "0", "silent_loss"),  # 412 read as "a newer upload will charge"
    ("adv4_eventbridge_key_only", ("--trigger", "eventbridge"), "overwrite", "0", "silent_loss"),  # claimed by name
    # maxReceiveCount is retries + 1: with 1 retry a failed message is received again, and skipped
    ("adv4_sqs_receive_count", ("--trigger", "sqs"), "runs", "1", "silent_loss"),
])
def test_new_wrong_handlers_break(monkeypatch, name, args, families, retries, verdict):
    code, out, err = check(monkeypatch, target(name), *args, families=families, retries=retries)
    assert code == 1 and verdict in verdicts(out), (out + err)[-3000:]
    assert broken_families(out) <= set(families.split(",")), out[:3000]


@pytest.mark.parametrize("name, args, families, retries", [
    ("adv4_resource_table_attr", (), "faults,overwrite,accounts,again,uploads", "0"),  # boto3.resource, Attr()
    ("adv4_ttl_milliseconds", (), "late,again,retry_ends", "2"),  # a TTL in milliseconds never expires
    ("adv4_sqs_message_id_field", ("--trigger", "sqs"), "runs,again", "0"),  # a bad key name: the whole batch back
    ("adv4_sqs_whole_batch", ("--trigger", "sqs"), "runs,again", "0"),  # every message reported: each replays
    ("adv4_stripe_sleep_retry", (), "faults", "1"),  # sleeps past its timeout: a crash it is built for
])
def test_new_right_handlers_hold(monkeypatch, name, args, families, retries):
    code, out, err = check(monkeypatch, target(name), *args, families=families, retries=retries)
    assert code == 0 and verdicts(out).get("exactly_once"), (out + err)[-3000:]
