"""Issue 41, the adversary's second round: handlers written as teams write them, each with the verdict a
correct checker must give and the published fact behind it in its docstring (tests/handlers/). Each test
runs the CLI on the families of schedules that show the point, with one retry setting and one worker.

Wrong before this file, and fixed (the fix named beside each):
- `log_stream_env_key` said holds: `AWS_LAMBDA_LOG_STREAM_NAME` was one value for every execution
  environment (idem.sim.runtime.local_lambda.per_environment: each environment's own stream);
- `claim_uuid_ttl` said holds in `retry_ends`: DynamoDB's TTL deleted nothing before a retry at the end of
  the event's maximum age (idem.explore.families.timed.swept_before_retries);
- `token_balance` said breaks and `token_per_order_id` said holds: moto ignores TransactWriteItems'
  ClientRequestToken (idem.sim.platform.transact_tokens: DynamoDB's 10-minute idempotency window);
- `sqs_extends_visibility` broke on its clean run and `sqs_zero_visibility` said holds: the function's
  ChangeMessageVisibility went to moto, which holds none of the modelled queue's messages
  (idem.sim.platform.sqs_visibility);
- `serial_uuid_claim` as deployed with ReservedConcurrentExecutions 1 said breaks, and `keyed_books` with
  0 (a function that never runs) said holds: the setting was ignored (idem.sim.runtime.throttles);
- `batch_books_unprocessed` said holds: moto's BatchWriteItem never leaves items unprocessed
  (idem.sim.platform.batch_partial, in the runs family);
- `stripe_charges_api` (tests/test_check_exit_codes.py) said breaks (exit 1) where the check's loopback
  Stripe does not serve the Charges API it calls: now exit 2, saying so.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from check_cli import cli, target


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def broken_in(out: str) -> dict[str, int]:
    """The families the report's "breaks in N of M schedules (...)" line names, with their breaks."""
    found = re.search(r"^breaks in \d+ of \d+ schedules \(([^)]*)\)", out, flags=re.M)
    return {family: int(n) for n, family in re.findall(r"(\d+) of the \d+ (\w+)", found.group(1))} if found else {}


# -- the gaps the first round named ----------------------------------------------------------------
def test_a_key_made_from_the_log_stream_variable_breaks_as_each_environment_has_its_own(monkeypatch):
    code, out, err = check(monkeypatch, target("log_stream_env_key"), families="slow")
    assert code == 1 and "double_charge" in out, (out + err)[-3000:]


def test_the_log_stream_variable_is_the_environments_own_unless_env_sets_it():
    from idem.sim.runtime.local_lambda import log_stream_name, per_environment

    env = {"AWS_LAMBDA_LOG_STREAM_NAME": "2026/01/01/[$LATEST]local", "X": "1"}
    assert per_environment(env, "c2") == {"AWS_LAMBDA_LOG_STREAM_NAME": log_stream_name("c2"), "X": "1"}
    assert per_environment(env, "c1") != per_environment(env, "c2")
    assert per_environment({"AWS_LAMBDA_LOG_STREAM_NAME": "mine"}, "c2") == {"AWS_LAMBDA_LOG_STREAM_NAME": "mine"}


def test_a_claim_whose_ttl_ends_before_lambdas_last_retry_is_deleted_and_the_retry_charges_again(monkeypatch):
    # Lambda's retries at the high ends of their ranges (the event's maximum age, 6 h): the 2-hour claim
    # is gone, its UUID with it, and the retry charges under a new one
    code, out, err = check(monkeypatch, target("claim_uuid_ttl"), families="retry_ends", retries="2")
    assert code == 1 and "double_charge" in out and broken_in(out).get("retry_ends"), (out + err)[-3000:]
    # the same handler without the TTL holds there
    code, out, err = check(monkeypatch, target("claim_stores_uuid"), families="retry_ends", retries="2")
    assert code == 0, (out + err)[-3000:]


def test_under_sqs_a_claim_whose_ttl_ends_before_the_visibility_timeout_is_deleted_and_charged_again(monkeypatch):
    # the visibility timeout at its high end (12 h): the message comes back after the 2-hour claim is gone
    code, out, err = check(monkeypatch, target("sqs_claim_uuid_ttl"), "--trigger", "sqs", families="retry_ends",
                           retries="2")
    assert code == 1 and "double_charge" in out and broken_in(out).get("retry_ends"), (out + err)[-3000:]


def test_a_transaction_whose_token_is_the_orders_own_adds_to_the_balance_once(monkeypatch):
    # two copies that both charged (Stripe replays) send one transaction, one token: DynamoDB writes once
    code, out, err = check(monkeypatch, target("token_balance"), "--effect", "dynamodb:TransactWriteItems",
                           families="faults,slow")
    assert code == 0, (out + err)[-3000:]


def test_a_token_reused_for_another_accounts_order_is_refused_and_read_as_done_loses_the_books(monkeypatch):
    code, out, err = check(monkeypatch, target("token_per_order_id"), families="accounts")
    assert code == 1 and "silent_mismatch" in out and set(broken_in(out)) == {"accounts"}, (out + err)[-3000:]


@pytest.mark.parametrize("later, same, answer", [
    (0.0, True, "once"),  # a resend inside the window: success, nothing written again
    (599.0, False, "IdempotentParameterMismatchException"),  # other parameters inside it: refused
    (601.0, True, "twice"),  # past 10 minutes the same token is a new request
])
def test_transact_write_items_keeps_its_token_for_10_minutes(later, same, answer):
    import time_machine
    from botocore.exceptions import ClientError

    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="tokens") as world, time_machine.travel(1_000_000, tick=False) as traveller:
        def add(cents: str) -> str:
            try:
                world.dynamodb.transact_write_items(ClientRequestToken="order-1", TransactItems=[{"Update": {
                    "TableName": world.ledger_table, "Key": {"pk": {"S": "balance"}},
                    "UpdateExpression": "ADD cents :c", "ExpressionAttributeValues": {":c": {"N": cents}}}}])
            except ClientError as error:
                return error.response["Error"]["Code"]
            return ""

        assert add("5") == ""
        traveller.shift(later)
        refused = add("5" if same else "7")
        item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "balance"}})["Item"]
        got = refused or {"5": "once", "10": "twice"}[item["cents"]["N"]]
        assert got == answer, item


@pytest.mark.parametrize("length, refused", [(36, False), (37, True)])
def test_a_client_request_token_longer_than_36_characters_is_refused_and_writes_nothing(length, refused):
    # "Length Constraints: Minimum length of 1. Maximum length of 36." (API_TransactWriteItems); moto takes it
    from botocore.exceptions import ClientError

    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="tokens") as world:
        try:
            world.dynamodb.transact_write_items(ClientRequestToken="t" * length, TransactItems=[{"Put": {
                "TableName": world.ledger_table, "Item": {"pk": {"S": "line#1"}, "charge_id": {"S": "ch_1"}}}}])
            code = ""
        except ClientError as error:
            code = error.response["Error"]["Code"]
        written = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "line#1"}}).get("Item")
        assert (code, written is None) == (("ValidationException", True) if refused else ("", False))


def test_a_function_extending_its_messages_visibility_holds_and_one_zeroing_it_unreported_loses_them(monkeypatch):
    # ChangeMessageVisibility on the function's own source queue is answered from the modelled queue
    code, out, err = check(monkeypatch, target("sqs_extends_visibility"), "--trigger", "sqs",
                           families="runs,retry_ends", retries="2")
    assert code == 0, (out + err)[-3000:]
    code, out, err = check(monkeypatch, target("sqs_zero_visibility"), "--trigger", "sqs", families="runs",
                           retries="1")
    assert code == 1 and "silent_loss" in out, (out + err)[-3000:]


def test_change_message_visibility_moves_the_messages_return_and_refuses_what_sqs_refuses():
    from types import SimpleNamespace

    from idem.sim.platform.sqs_visibility import change
    from idem.sim.triggers import Message

    polls: list[float] = []
    message = Message("m1", "{}", 0.0, visible_at=30.0, receives=1, receipt="m1#1#1")
    source = SimpleNamespace(messages=[message], clock=SimpleNamespace(now=lambda: 10.0), _poll_at=polls.append)
    assert change(source, "m1#1#1", 900) == "" and message.visible_at == 910.0 and polls == [910.0]
    assert change(source, "m1#1#1", 0) == "" and message.visible_at == 10.0
    assert change(source, "m1#1#1", 43_201) == "InvalidParameterValue"
    assert change(source, "m1#1#1", 43_191) == "InvalidParameterValue"  # 12 hours from its receive, at 0 s
    assert change(source, "m1#1#1", 43_190) == "" and message.visible_at == 43_200.0
    assert change(source, "m9#1#1", 5) == "ReceiptHandleIsInvalid"
    message.gone = True
    assert change(source, "m1#1#1", 5) == "ReceiptHandleIsInvalid"


RESERVED = str(Path(__file__).parent / "templates" / "adversary_reserved.yaml")


def test_reserved_concurrency_1_throttles_a_copy_until_the_first_is_done_and_an_unconditional_claim_holds(monkeypatch):
    code, out, err = check(monkeypatch, "--template", RESERVED, "--function", "Serial", families="faults,slow",
                           retries="2")
    assert code == 0 and "ReservedConcurrentExecutions 1" in out, (out + err)[-3000:]
    # the same code without the setting: two copies at once both find no claim
    code, out, err = check(monkeypatch, "--template", RESERVED, "--function", "Unreserved", families="slow",
                           retries="2")
    assert code == 1 and "double_charge" in out, (out + err)[-3000:]


def test_reserved_concurrency_0_never_invokes_and_each_event_reaches_the_failure_queue_at_its_maximum_age(monkeypatch):
    code, out, err = check(monkeypatch, "--template", RESERVED, "--function", "Stopped", families="faults",
                           retries="2")
    assert code == 1 and "failed_visibly" in out and "never invoked the function" in out, (out + err)[-3000:]


def test_a_throttled_event_is_tried_again_from_1_second_doubling_to_5_minutes():
    from idem.sim.runtime.throttles import backoff

    assert [backoff(n) for n in (1, 2, 3, 9, 10, 30)] == [1.0, 2.0, 4.0, 256.0, 300.0, 300.0]


def test_a_batch_write_answered_with_items_unprocessed_loses_the_books_of_a_handler_that_never_reads_them(monkeypatch):
    # BatchWriteItem's failures are in its answer (UnprocessedItems), not an error (idem.sim.platform.batch_partial)
    code, out, err = check(monkeypatch, target("batch_books_unprocessed"), families="runs", retries="1")
    assert code == 1 and "silent_mismatch" in out and "answered unprocessed" in out, (out + err)[-3000:]
    # the same handler sending what is unprocessed again, and failing when it stays so, holds
    code, out, err = check(monkeypatch, target("batch_books_retried"), families="runs", retries="1")
    assert code == 0, (out + err)[-3000:]


# -- new kinds of handler, judged right already (kept) ---------------------------------------------
@pytest.mark.parametrize("name, families, retries, verdict", [
    ("s3_request_id_key", "overwrite", "0", "double_charge"),  # the retried PUT is another request id
    ("stripe_key_with_timestamp", "runs", "1", "double_charge"),  # Lambda's retry comes seconds later
    ("catch_all_returns_200", "runs", "1", "silent_"),  # a returned 200 is a success: no retry, no DLQ
    ("etag_key", "accounts", "0", "silent_loss"),  # two accounts' same bytes have one ETag
    ("claim_wrong_attribute", "slow", "0", "double_charge"),  # attribute_not_exists of an absent attribute
    ("powertools_payload_validation", "again", "0", "double_charge"),  # its record outlived by Stripe's key window
])
def test_new_wrong_handlers_break(monkeypatch, name, families, retries, verdict):
    code, out, err = check(monkeypatch, target(name), families=families, retries=retries)
    assert code == 1 and verdict in out, (out + err)[-3000:]


def test_a_claim_made_with_s3s_if_none_match_holds(monkeypatch):
    code, out, err = check(monkeypatch, target("s3_claim_if_none_match"),
                           families="faults,slow,late,again,accounts,runs")
    assert code == 0, (out + err)[-3000:]


def test_books_written_in_one_transaction_over_two_tables_hold(monkeypatch):
    template = str(Path(__file__).parent / "templates" / "adversary_two_tables.yaml")
    code, out, err = check(monkeypatch, "--template", template, "--function", "Books",
                           families="faults,slow,late,again,accounts,runs")
    assert code == 0, (out + err)[-3000:]


def test_a_token_outlived_by_a_copy_of_the_event_adds_to_the_balance_again(monkeypatch):
    # S3's copy hours later: the transaction's token was forgotten after 10 minutes
    code, out, err = check(monkeypatch, target("token_only_balance"), "--effect", "dynamodb:TransactWriteItems",
                           families="late")
    assert code == 1 and "double_effect" in out and '{"cents": "1000"}' in out, (out + err)[-3000:]


def test_a_condition_naming_another_condition_is_read_and_a_reservation_only_in_prod_applies_there(tmp_path, monkeypatch):
    # `!Condition IsProd` inside a condition function is CloudFormation's {"Condition": "IsProd"}
    # (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-condition.html);
    # the check read it as "Fn::Condition" and refused the template (project's own template.yaml included)
    handlers = Path(__file__).parent / "handlers"
    (tmp_path / "template.yaml").write_text(f"""AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Profile: {{Type: String, Default: demo}}
Conditions:
  IsProd: !Equals [!Ref Profile, prod]
  Reserved: !And [!Condition IsProd, !Not [!Equals [!Ref Profile, demo]]]
Resources:
  Ledger:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{{AttributeName: pk, AttributeType: S}}]
      KeySchema: [{{AttributeName: pk, KeyType: HASH}}]
  Serial:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: {handlers}
      Handler: serial_uuid_claim.lambda_handler
      Timeout: 30
      ReservedConcurrentExecutions: !If [Reserved, 1, !Ref AWS::NoValue]
      Environment: {{Variables: {{LEDGER_TABLE: !Ref Ledger}}}}
""")
    template = str(tmp_path / "template.yaml")
    code, out, err = check(monkeypatch, "--template", template, "--function", "Serial", "--parameter", "Profile=prod",
                           families="slow", retries="2")
    assert code == 0 and "ReservedConcurrentExecutions 1" in out, (out + err)[-3000:]
    code, out, err = check(monkeypatch, "--template", template, "--function", "Serial", families="slow", retries="2")
    assert code == 1 and "ReservedConcurrentExecutions" not in out, (out + err)[-3000:]
