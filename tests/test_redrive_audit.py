"""`python -m idem redrive --queue-url ... --function ... --yes --reason ...` leaves a trace in the
function's ledger: who ran it (STS), why, which queue into which function, and what became of it,
including a redrive that failed half-way; a function with no ledger to record in is refused before
anything is sent. On moto (LocalWorld): the failure queue, the function's configuration and the
ledger are moto's; Lambda's asynchronous Invoke is recorded in place (moto would run the code)."""
from __future__ import annotations

import io
import itertools
import json
import zipfile

import pytest

from idem.core.dynamo import from_item
from idem.explore import redrive
from idem.sim.world import LocalWorld
from test_deploy_server import machine_free_aws_env, one_error_line, run_cli

FUNCTION = "idem-audit-charge"
_RUN = itertools.count()  # moto keeps IAM and Lambda across worlds: a name per test


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def lambda_handler(event, context):\n    return None\n")
    return buffer.getvalue()


@pytest.fixture
def stack(monkeypatch, tmp_path):
    machine_free_aws_env(monkeypatch, tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    with LocalWorld(prefix="audit") as world:
        iam, aws_lambda = world.session.client("iam"), world.session.client("lambda")
        run = next(_RUN)
        role = iam.create_role(RoleName=f"audit-role-{run}", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
        for name, env in ((FUNCTION, {"LEDGER_TABLE": world.ledger_table}), ("no-ledger", {})):
            if name in {f["FunctionName"] for f in aws_lambda.list_functions()["Functions"]}:
                aws_lambda.delete_function(FunctionName=name)
            aws_lambda.create_function(FunctionName=name, Runtime="python3.12", Role=role, Handler="handler.lambda_handler",
                                       Code={"ZipFile": _zip()}, Environment={"Variables": env})
        for n in range(3):  # three failed events, as Lambda's on-failure destination records them
            world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=json.dumps(
                {"requestPayload": {"Records": [{"s3": {"object": {"key": f"alice/{n}.json"}}}]}}))
        invoked: list[dict] = []
        monkeypatch.setattr(redrive, "invoke_async", lambda client, function, event: invoked.append(event))
        yield world, invoked


def _redrive(world, *argv: str) -> tuple[int, str, str]:
    return run_cli("redrive", "--queue-url", world.queue_url, "--region", "us-east-1", *argv)


def audits(world) -> list[dict]:
    items = world.dynamodb.scan(TableName=world.ledger_table)["Items"]
    return sorted((from_item(i) for i in items if i["pk"]["S"].startswith("audit#")), key=lambda a: a["at"])


def _waiting(world) -> int:
    attributes = world.sqs.get_queue_attributes(QueueUrl=world.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_a_redrive_records_who_ran_it_why_and_how_many_it_sent(stack):
    world, invoked = stack
    code, out, err = _redrive(world, "--function", FUNCTION, "--yes", "--reason", "PAGE-7: FailureQueueArrivalsAlarm")
    assert (code, err) == (0, "") and f"redriven 3 event(s) to {FUNCTION}" in out
    assert [e["Records"][0]["s3"]["object"]["key"] for e in invoked] == ["alice/0.json", "alice/1.json", "alice/2.json"]
    started, done = audits(world)
    for entry in (started, done):
        assert (entry["command"], entry["action"]) == ("redrive", "redrive")
        assert entry["subject"] == "queue " + world.queue_url.rsplit("/", 1)[-1]
        assert entry["who"].startswith("arn:aws:") and entry["why"] == "PAGE-7: FailureQueueArrivalsAlarm"
        assert entry["because"] == f"to {FUNCTION}: about 3 event(s) waiting"
    assert (started["outcome"], done["outcome"]) == ("started", "done: 3 event(s) sent")
    assert _waiting(world) == 0


def test_a_redrive_that_fails_half_way_is_on_the_record_and_the_rerun_sends_only_the_rest(stack, monkeypatch):
    world, invoked = stack

    def dies_on_the_second(client, function, event):
        if len(invoked) == 1:
            raise redrive_error()
        invoked.append(event)
    monkeypatch.setattr(redrive, "invoke_async", dies_on_the_second)
    code, _, err = _redrive(world, "--function", FUNCTION, "--yes", "--reason", "INC-3")
    assert code == 1 and "TooManyRequestsException" in one_error_line(err) and len(invoked) == 1
    assert [a["outcome"] for a in audits(world)] == [
        "started", "failed after 1 event(s) sent: ClientError: An error occurred (TooManyRequestsException) "
        "when calling the Invoke operation: Rate exceeded"]
    monkeypatch.setattr(redrive, "invoke_async", lambda client, function, event: invoked.append(event))
    assert _redrive(world, "--function", FUNCTION, "--yes", "--reason", "INC-3 again")[0] == 0
    assert len(invoked) == 3 and _waiting(world) == 0  # the two left, not the one sent already
    assert [a["outcome"] for a in audits(world)][-1] == "done: 2 event(s) sent"


def redrive_error():
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke")


def test_a_function_with_no_ledger_to_record_in_is_refused_before_anything_is_sent(stack):
    world, invoked = stack
    code, out, err = _redrive(world, "--function", "no-ledger", "--yes", "--reason", "INC-4")
    assert (code, out) == (2, "") and "no-ledger has no LEDGER_TABLE setting" in one_error_line(err)
    assert invoked == [] and _waiting(world) == 3 and audits(world) == []


def test_without_a_reason_nothing_is_sent_and_nothing_recorded(stack):
    world, invoked = stack
    code, _, err = _redrive(world, "--function", FUNCTION, "--yes")
    assert code == 2 and "--reason is required" in one_error_line(err)
    assert invoked == [] and _waiting(world) == 3 and audits(world) == []


def test_without_yes_a_redrive_shows_what_it_would_send_and_sends_nothing(stack):
    """No --yes and no terminal (a pipe, a script): the plan is printed, nothing is sent or recorded."""
    world, invoked = stack
    code, out, err = _redrive(world, "--function", FUNCTION, "--reason", "PAGE-9")
    assert (code, err) == (0, "")
    assert f"would redrive: to {FUNCTION}: about 3 event(s) waiting" in out and "nothing was changed" in out
    assert invoked == [] and _waiting(world) == 3 and audits(world) == []


@pytest.mark.parametrize("answer, sent", [("no", 0), ("yes", 3)])
def test_at_a_terminal_a_redrive_asks_and_only_a_yes_sends(stack, monkeypatch, answer, sent):
    world, invoked = stack
    asked: list[str] = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or answer)
    code, out, err = _redrive(world, "--function", FUNCTION, "--reason", "PAGE-10")
    assert (code, err) == (0, "") and asked == ["do it? type yes: "]
    assert f"would redrive: to {FUNCTION}: about 3 event(s) waiting" in out
    assert len(invoked) == sent and _waiting(world) == 3 - sent
    assert [a["outcome"] for a in audits(world)] == ([] if sent == 0 else ["started", "done: 3 event(s) sent"])
