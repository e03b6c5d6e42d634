"""P23 (docs/check_from_a_template.md): an object the function itself creates where its trigger listens
comes back to it as an event, as S3 sends one for every object created there ("if the bucket triggers a
function each time an object is uploaded, and the function uploads an object to the bucket, then the
function indirectly triggers itself": https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html).
The money is judged per order: the function's own copy of an order file is no new order."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from check_cli import cli, target
from idem.explore.run import own_writes, uploads


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def test_a_function_archiving_into_its_own_trigger_bucket_charges_the_archive_again(monkeypatch):
    """adv4_archive_same_bucket copies each booked order to archive/ in its trigger's bucket: the copy's
    event reads as the account "archive"'s order and is charged again (before P23: holds)."""
    code, out, err = check(monkeypatch, target("adv4_archive_same_bucket"), families="uploads")
    assert code == 1, (out + err)[-3000:]
    assert "double_charge" in out
    assert "the clean run charged its one order 2 times: the function wrote 'archive/check" in out


def test_its_twin_that_skips_its_own_archive_holds(monkeypatch):
    code, out, err = check(monkeypatch, target("archive_same_bucket_skips"), families="faults,accounts")
    assert code == 0 and "exactly_once" in out, (out + err)[-3000:]
    assert "the function wrote" not in out  # its own copies come back and succeed: nothing to note


def test_a_two_stage_function_chained_by_its_own_copy_holds_and_its_books_are_judged(monkeypatch):
    """metadata_stage_two charges in stage one, records the charge id on the file with CopyObject, and
    books in stage two, on that copy's event. Before P23 stage two never ran: "books: NOT judged"."""
    code, out, err = check(monkeypatch, target("metadata_stage_two"), families="faults,again")
    assert code == 0 and "exactly_once" in out, (out + err)[-3000:]
    assert "NOT judged" not in out


def test_a_claim_object_in_the_trigger_bucket_fails_its_own_invocation_and_is_named_in_the_notes(monkeypatch):
    """s3_claim_if_none_match keeps its claims as objects under _claims/ in the bucket that triggers it:
    each claim's event comes back, is no order file, and fails. No money moves: it holds, with a note."""
    code, out, err = check(monkeypatch, target("s3_claim_if_none_match"), families="uploads")
    assert code == 0, (out + err)[-3000:]
    assert "note: the function wrote '_claims/" in out and "no money moved" in out


def test_under_sqs_an_archive_in_the_trigger_bucket_comes_back_as_a_message_and_is_charged_again(monkeypatch):
    """sqs_archive_same_bucket (S3 -> SQS -> Lambda) copies each booked order to archive/ in the bucket that
    notifies its queue: the copy's event is one more message, read as the account "archive"'s order and
    charged again (before, under --trigger sqs the function's own writes never came back: holds)."""
    code, out, err = check(monkeypatch, target("sqs_archive_same_bucket"), "--trigger", "sqs", families="uploads")
    assert code == 1, (out + err)[-3000:]
    assert "double_charge" in out
    assert ("the clean run charged the 2 orders of its batch 4 times: the function wrote 'archive/" in out
            and "sent that object's event to its queue" in out)


def test_under_sqs_its_twin_that_skips_its_own_archive_holds(monkeypatch):
    code, out, err = check(monkeypatch, target("sqs_archive_skips"), "--trigger", "sqs", families="uploads")
    assert code == 0 and "exactly_once" in out, (out + err)[-3000:]
    assert "the function wrote" not in out  # its own copies come back and succeed: nothing to note


def test_under_sqs_a_marker_in_the_trigger_bucket_fails_its_own_message_and_is_named_in_the_notes(monkeypatch):
    """sqs_done_marker marks each order done with an object under _done/ in the bucket that notifies its queue:
    the marker's message is no order and fails. No money moves: it holds, with a note (before, the note's
    look-up of the failed invocation by its delivery number raised: exit 3)."""
    code, out, err = check(monkeypatch, target("sqs_done_marker"), "--trigger", "sqs", families="uploads")
    assert code == 0, (out + err)[-3000:]
    assert "note: the function wrote '_done/" in out and "no money moved" in out


def test_an_invocation_is_an_own_writes_only_when_all_it_was_given_is():
    deliveries = {3: "archive/a.json", "m-3": "_done/a.json", "m-4": "_done/b.json"}
    s3 = SimpleNamespace(delivery=3, messages=[])
    assert own_writes.own_key(s3, deliveries) == "archive/a.json"
    assert own_writes.own_key(SimpleNamespace(delivery=1, messages=[]), deliveries) is None
    assert own_writes.own_key(SimpleNamespace(delivery=1, messages=["m-3", "m-4"]), deliveries) == "_done/a.json"
    assert own_writes.own_key(SimpleNamespace(delivery=3, messages=["m-3", "m-1"]), deliveries) is None  # an order's too


@pytest.mark.parametrize("prefix, suffix, delivered_by, key, api, comes_back", [
    ("", "", (), "archive/a.json", "CopyObject", True),  # no template: the whole bucket, every event type
    ("incoming/", "", (), "archive/incoming/a.json", "CopyObject", False),  # outside the prefix
    ("", ".json", (), "archive/a.json.done", "PutObject", False),  # outside the suffix
    ("", "", ("PutObject",), "archive/a.json", "CopyObject", False),  # s3:ObjectCreated:Put only
    ("", "", ("PutObject",), "archive/a.json", "PutObject", True),
    ("", "", ("PutObject", "CopyObject"), "a.json", "CompleteMultipartUpload", False),
])
def test_only_what_the_trigger_takes_comes_back(monkeypatch, prefix, suffix, delivered_by, key, api, comes_back):
    monkeypatch.setattr(uploads, "KEY_PREFIX", prefix)
    monkeypatch.setattr(uploads, "KEY_SUFFIX", suffix)
    monkeypatch.setattr(uploads, "DELIVERED_BY", delivered_by)
    assert own_writes.delivered(key, api) is comes_back
