"""Issue 41, the adversary's third round: handlers written as teams write them, each with the verdict a
correct checker must give and the published fact behind it in its docstring (tests/handlers/). Each test
runs the CLI on the families of schedules that show the point, with one retry setting and one worker.

Wrong before this file, and fixed (idem.sim.platform.batch_partial: a batch call answered in part, in the
runs family, as BatchWriteItem already was):
- `sqs_batch_ignores_failed`, `publish_batch_ignores_failed` and `put_events_ignores_failed` lost no order:
  moto enqueues, publishes and puts every entry, so SendMessageBatch's and PublishBatch's `Failed` and
  PutEvents' `FailedEntryCount` never happened (a call answered so now counts no effect either);
- `batch_get_skips_unlinked` said holds: moto's BatchGetItem never leaves keys unprocessed.

Wrong before, and fixed (idem.explore.target.deployed.failure_destination): a deployed function with no
place for the event Lambda discards was said to fail visibly; it loses the event silently.

Gap pinned, not fixed (docs/reliability.md, "Not modelled"): an ETag that changes with the same bytes.
Pinned here as a gap until 2026-12-07, and fixed then (idem.sim.platform.eventual_reads): DynamoDB's eventually
consistent reads; `eventual_read_serial` (`SerialEventual`) breaks.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from check_cli import HANDLERS, cli, target

TEMPLATE = str(Path(__file__).parent / "templates" / "adversary3.yaml")
SETUP = ("--setup", f"{HANDLERS / 'fanout_setup.py'}:create")


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def verdicts(out: str) -> dict[str, int]:
    """The report's tally: each verdict and how many schedules ended in it."""
    return {name: int(n) for name, n in re.findall(r"^  ([a-z_]+) +(\d+)", out, flags=re.M)}


# -- partial batch answers: fixed -------------------------------------------------------------------
@pytest.mark.parametrize("name, effect", [
    ("sqs_batch_ignores_failed", "sqs:SendMessageBatch"),  # SendMessageBatch's Failed entries
    ("publish_batch_ignores_failed", "sns:PublishBatch"),  # PublishBatch's Failed entries
    ("put_events_ignores_failed", "events:PutEvents"),  # PutEvents' FailedEntryCount
])
def test_a_batch_send_whose_failed_entries_are_not_read_loses_the_order(monkeypatch, name, effect):
    code, out, err = check(monkeypatch, target(name), "--effect", effect, *SETUP, families="runs", retries="1")
    assert code == 1 and verdicts(out).get("silent_loss"), (out + err)[-3000:]
    assert "every entry answered failed before " + effect in out, out[:3000]


def test_a_batch_send_resending_its_failed_entries_loses_nothing(monkeypatch):
    # its one break in the family is not a partial answer: every SDK attempt's answer lost, then Lambda's
    # retry (from 1 minute to the event's maximum age) sends again past the FIFO queue's 5-minute window
    code, out, err = check(monkeypatch, target("sqs_batch_resends_failed"), "--effect", "sqs:SendMessageBatch",
                           *SETUP, families="runs", retries="1")
    assert "silent_loss" not in verdicts(out) and verdicts(out).get("double_effect") == 1, (out + err)[-3000:]
    assert "schedule: exception after sqs:SendMessageBatch on arrival 1 and every SDK attempt" in out, out[:3000]


def test_a_batch_get_whose_unprocessed_keys_are_read_as_absent_loses_the_order_and_one_reading_them_holds(
        monkeypatch):
    code, out, err = check(monkeypatch, target("batch_get_skips_unlinked"), families="runs", retries="1")
    assert code == 1 and verdicts(out).get("silent_loss"), (out + err)[-3000:]
    assert "every item answered unprocessed before dynamodb:BatchGetItem" in out, out[:3000]
    code, out, err = check(monkeypatch, target("batch_get_retries_unprocessed"), families="runs", retries="1")
    assert code == 0, (out + err)[-3000:]


def test_each_batch_call_is_answered_as_its_api_answers_a_failure():
    from idem.sim.platform.batch_partial import partial_answer, partial_words

    # a schedule's label says it as the API does (chapter 11 shows BatchWriteItem's as it always did)
    assert partial_words("dynamodb:BatchWriteItem") == "item answered unprocessed"
    assert partial_words("sqs:SendMessageBatch") == partial_words("events:PutEvents") == "entry answered failed"
    entries = [{"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}]
    sqs = partial_answer("sqs:SendMessageBatch", {"Entries": entries}, "us-east-1")
    assert sqs["Successful"] == [] and [f["Id"] for f in sqs["Failed"]] == ["a", "b"]
    assert all(f["SenderFault"] is False and f["Code"] for f in sqs["Failed"])
    sns = partial_answer("sns:PublishBatch", {"PublishBatchRequestEntries": entries[:1]}, "us-east-1")
    assert [f["Id"] for f in sns["Failed"]] == ["a"] and sns["Successful"] == []
    events = partial_answer("events:PutEvents", {"Entries": [{}, {}, {}]}, "us-east-1")
    assert events["FailedEntryCount"] == 3 and all("ErrorCode" in e and "EventId" not in e for e in events["Entries"])
    items = {"t": [{"PutRequest": {"Item": {"pk": {"S": "1"}}}}]}
    assert partial_answer("dynamodb:BatchWriteItem", {"RequestItems": items}, "us-east-1") == {"UnprocessedItems": items}


def test_batch_get_item_reads_its_first_key_and_leaves_the_others_unprocessed():
    from idem.sim.platform.batch_partial import partial_answer
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="batchget") as world:
        table = world.ledger_table
        for pk in ("one", "two", "three"):
            world.dynamodb.put_item(TableName=table, Item={"pk": {"S": pk}, "n": {"S": pk}})
        wanted = {table: {"Keys": [{"pk": {"S": "one"}}, {"pk": {"S": "two"}}, {"pk": {"S": "three"}}],
                          "ConsistentRead": True}}
        got = partial_answer("dynamodb:BatchGetItem", {"RequestItems": wanted}, world.dynamodb.meta.region_name)
        assert [item["pk"]["S"] for item in got["Responses"][table]] == ["one"]
        assert got["UnprocessedKeys"] == {table: {"Keys": [{"pk": {"S": "two"}}, {"pk": {"S": "three"}}],
                                                  "ConsistentRead": True}}


# -- new kinds of handler, judged right already (kept) ---------------------------------------------
@pytest.mark.parametrize("name, families, retries, verdict", [
    ("version_id_key", "overwrite", "0", "double_charge"),  # the uploader's retried PUT is a new version
    ("powertools_order_only", "accounts", "0", "silent_loss"),  # the idempotency subset omits the account
    ("put_returns_old_claim", "faults", "1", "silent_loss"),  # its own resent put reads as another's claim
])
def test_new_wrong_handlers_break(monkeypatch, name, families, retries, verdict):
    code, out, err = check(monkeypatch, target(name), families=families, retries=retries)
    assert code == 1 and verdict in verdicts(out), (out + err)[-3000:]


def test_a_claim_on_a_composite_key_conditioned_on_the_sort_key_holds(monkeypatch):
    # attribute_not_exists(sk) is checked on the one item with the put's whole key: as good as (pk)
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "CompositeKey",
                           families="faults,overwrite,accounts,again")
    assert code == 0 and verdicts(out).get("exactly_once"), (out + err)[-3000:]


# -- gaps, pinned ------------------------------------------------------------------------------------
def test_an_eventually_consistent_claim_read_under_reserved_concurrency_1_breaks(monkeypatch):
    # AWS: a read without ConsistentRead "may not reflect the results of a recently completed write"
    # (idem.sim.platform.eventual_reads), so the copy throttled while the first ran, tried again 1 s later, reads
    # no claim and charges under a new UUID. Its twin with ConsistentRead=True, serial_uuid_claim, holds
    # (tests/test_check_adversary2.py).
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "SerialEventual", families="slow",
                           retries="2")
    assert code == 1 and "ReservedConcurrentExecutions 1" in out, (out + err)[-3000:]
    assert verdicts(out).get("double_charge"), out[-3000:]
    assert "after dynamodb:GetItem  (read eventually consistent: " in out, out[-3000:]


def test_pins_gap_a_key_from_the_name_and_etag_is_said_to_hold_as_the_retried_put_has_the_same_etag(monkeypatch):
    # AWS: the same bytes uploaded again by multipart (other part sizes) have another ETag, so another key
    # and a second charge. Without --template the check's bucket encrypts as S3 does by default (SSE-S3) and
    # its retried PUT is a plain PutObject, whose ETag is the bytes' MD5: the same. (In a bucket that
    # encrypts with a KMS key, declared in the template, it breaks: tests/test_check_kms_etags.py.)
    code, out, err = check(monkeypatch, target("name_etag_key"), families="overwrite")
    assert code == 0, (out + err)[-3000:]


# -- a function with no failure destination: fixed ---------------------------------------------------
def test_a_function_with_no_failure_destination_loses_a_failed_event_silently(monkeypatch):
    # AWS: "When an event fails all processing attempts ... Lambda discards it. To retain discarded events,
    # configure a dead-letter queue" or an on-failure destination: with neither, a failed event is lost
    # silently (docs/check_from_a_template.md P16).
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "NoFailureDestination",
                           families="runs")
    assert code == 1 and verdicts(out).get("silent_loss"), (out + err)[-3000:]
    assert "failed_visibly" not in verdicts(out) and "needs_attention" not in verdicts(out), out[:3000]
    assert "no failure destination (an event that fails every attempt is discarded)" in out, out[:3000]
    assert "the function as deployed has no failure destination" in out and "add a DeadLetterQueue" in out, out


@pytest.mark.parametrize("function, destination", [
    ("WithDeadLetterQueue", "DeadLetterQueue Failures"),  # SAM's DeadLetterQueue on the function
    ("WithOnFailure", "OnFailure Failures"),  # an AWS::Lambda::EventInvokeConfig naming it
])
def test_a_function_with_a_dead_letter_queue_or_an_on_failure_destination_fails_visibly(monkeypatch, function,
                                                                                         destination):
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", function, families="runs")
    assert code == 0 and verdicts(out).get("failed_visibly"), (out + err)[-3000:]
    assert "silent_loss" not in verdicts(out) and f"failure destination {destination}" in out, out[:3000]
    assert "MaximumRetryAttempts 0" in out and "has no failure destination" not in out, out[:3000]
    assert "assumed:" not in out, out[-800:]  # read from the template, not assumed (P16)
