"""Issue 41, the adversary's eighth round: handlers written as teams write them, each with the verdict a
correct checker must give and the published fact behind it in its docstring (tests/handlers/README.md).
Each test runs the CLI on the family of schedules that shows the point, with one retry setting and one
worker."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from check_cli import cli, target

TEMPLATES = Path(__file__).parent / "templates"


def check(monkeypatch, *args: str, families: str, retries: str = "2") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def verdicts(out: str) -> dict[str, int]:
    return {name: int(n) for name, n in re.findall(r"^  ([a-z_]+) +(\d+)", out, flags=re.M)}


def test_a_naive_utc_time_read_back_in_the_functions_own_time_zone_is_hours_off(monkeypatch):
    """tz_utcnow_window stores utcnow() and reads it back with .timestamp(), which takes a naive time as
    local: with TZ=America/Los_Angeles every age is 8 hours short, so an order redriven a day later is
    charged again past Stripe's key window (before: holds, the process's TZ never changed)."""
    code, out, err = check(monkeypatch, target("tz_utcnow_window"), "--env", "TZ=America/Los_Angeles",
                           families="again")
    assert code == 1 and verdicts(out).get("double_charge"), (out + err)[-3000:]


@pytest.mark.parametrize("handler, env", [("tz_utcnow_window", ()), ("tz_aware_window", ("--env", "TZ=America/Los_Angeles"))])
def test_the_same_in_utc_and_its_aware_twin_in_any_zone_hold(monkeypatch, handler, env):
    code, out, err = check(monkeypatch, target(handler), *env, families="again")
    assert code == 0, (out + err)[-3000:]


def test_a_failure_queue_kept_14_days_is_redriven_in_its_last_second(monkeypatch):
    """claim_ttl_7_days keeps its claim 7 days (DynamoDB TTL); its template's dead-letter queue keeps a failed
    event 14 days, so a redrive on day 14 finds no claim and charges again (before: the again family
    redrove at SQS's default 4 days only, and it held). With the default 4 days it holds."""
    template = str(TEMPLATES / "claim_ttl_7_days.yaml")
    code, out, err = check(monkeypatch, "--template", template, "--function", "Charge", families="again")
    assert code == 1 and verdicts(out).get("double_charge"), (out + err)[-3000:]
    assert "failure destination DeadLetterQueue Failures (MessageRetentionPeriod 1209600 s)" in out
    assert "its 14-day retention" in out
    code, out, err = check(monkeypatch, "--template", template, "--function", "Default4Days", families="again")
    assert code == 0, (out + err)[-3000:]
    assert "MessageRetentionPeriod" not in out.split("\n")[1]


def test_a_dead_letter_queue_kept_14_days_is_redriven_in_its_last_second_under_sqs(monkeypatch):
    """sqs_claim_ttl_7_days: the source queue's RedrivePolicy names a dead-letter queue that keeps messages
    14 days, counted from the first enqueue; a redrive on day 14 finds the 7-day claim gone (before: the again
    family redrove a day later only, and it held)."""
    template = str(TEMPLATES / "sqs_claim_ttl_7_days.yaml")
    code, out, err = check(monkeypatch, "--template", template, "--function", "Batch", families="again")
    assert code == 1 and verdicts(out).get("double_charge"), (out + err)[-3000:]
    assert "its dead-letter queue's 1209600 s" in out
    assert "after the first message was sent (the dead-letter queue's last second of its 14-day retention)" in out


def test_bobs_file_naming_alices_customer_charges_alice_and_breaks(monkeypatch):
    """file_customer_first lets the order file's `customer` win over the account's linked customer: the
    family accounts uploads another account's order whose file names the first account's customer, and
    Alice pays for Bob's order ("The file never chooses who pays": docs/money_contract.md, 2). Before, the
    check's file never named a customer, and it held."""
    code, out, err = check(monkeypatch, target("file_customer_first"), families="accounts", retries="0")
    assert code == 1 and verdicts(out).get("double_charge"), (out + err)[-3000:]
    assert "its file naming the first account's customer" in out


@pytest.mark.parametrize("handler", ["file_customer_checked", "linked_customer"])
def test_a_handler_that_refuses_or_ignores_the_files_customer_holds(monkeypatch, handler):
    code, out, err = check(monkeypatch, target(handler), families="accounts", retries="0")
    assert code == 0, (out + err)[-3000:]


def test_an_account_taken_from_the_objects_metadata_is_the_uploaders_word_and_breaks(monkeypatch):
    """meta_account takes the account from x-amz-meta-account when present: user-defined metadata is
    whatever the uploader's PUT sends (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html).
    Bob's upload naming Alice's account is answered as Alice's order (before, the check never sent
    metadata, and it held)."""
    code, out, err = check(monkeypatch, target("meta_account"), families="accounts", retries="0")
    assert code == 1 and verdicts(out).get("silent_loss"), (out + err)[-3000:]
