"""The reader's own inputs: `--object FILE[=KEY]` is what lands, `--setup MODULE:FUNCTION` makes
what the handler needs, a resource that exists nowhere is named with the option that creates it,
and a clean run with no effect says what the handler returned and printed."""
from __future__ import annotations

import json

import pytest

from check_cli import FAST, HANDLERS, cli, target
from idem.explore.run.objects import BadObject, UserObject

ORDER = HANDLERS / "orders" / "A-1001.json"


def test_an_object_lands_at_its_key_and_each_schedule_is_its_own_order():
    """docs/check_from_a_template.md P6 and P8: at KEY exactly when KEY is given (schedules kept
    apart by emptied accounts: idem.explore.run.exact_keys); without one, a folder per schedule."""
    obj = UserObject.parse(f"{ORDER}=incoming/A-1001.json")
    assert obj.exact and obj.key_for(42) == obj.key_for(7) == "incoming/A-1001.json"
    assert obj.key_for(42, nth=2) == "incoming/A-1001-2.json"  # an SQS batch's neighbour
    assert UserObject.parse(str(ORDER)).key_for(42) == "check00042/A-1001.json"
    assert json.loads(obj.body_for(42))["order_id"] == "A-1001-00042"
    assert json.loads(obj.body_for(42, second_order=True))["order_id"] == "A-1001-00042-2"
    assert json.loads(obj.body_for(42))["amount_cents"] == 1250  # nothing else changes
    assert UserObject.parse(str(ORDER)).key == "A-1001.json"  # KEY defaults to the file's name


def test_an_object_that_is_not_json_lands_byte_for_byte(tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_bytes(b"email,name\na@example.com,A\n")
    assert UserObject.parse(f"{csv}=in/rows.csv").body_for(3) == csv.read_bytes()


def test_an_object_that_cannot_be_read_is_exit_2():
    with pytest.raises(BadObject, match="cannot read"):
        UserObject.parse("no/such/file.json")
    code, out, err = cli(target("json_orders"), "--object", "no/such/file.json", *FAST, "--json")
    assert code == 2 and "cannot read" in json.loads(out)["error"]


def test_a_clean_run_with_no_effect_says_what_the_handler_returned_and_printed():
    code, _, err = cli(target("json_orders"), *FAST)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "returned {'charged': []}" in line and "skipped check99999/order-1.json: not an order file in incoming/" in line


def test_the_readers_own_object_is_what_lands_and_the_handler_holds():
    code, out, err = cli(target("json_orders"), "--object", f"{ORDER}=alice/incoming/A-1001.json", *FAST, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["holds"] and report["baseline"]["provider:charge"] == 1
    assert report["object"] == {"file": str(ORDER), "key": "alice/incoming/A-1001.json"}


def test_a_resource_that_exists_nowhere_is_named_with_the_options_that_create_it():
    code, _, err = cli(target("sns_notifier"), "--effect", "sns:Publish", *FAST)
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "sns:Publish with TopicArn=arn:aws:sns:us-east-1:123456789012:uploads-notices" in line
    assert "--template" in line and "--setup" in line


def test_the_teams_setup_creates_the_topic_and_the_notifier_is_judged():
    code, out, err = cli(target("sns_notifier"), "--effect", "sns:Publish", "--setup",
                         f"{HANDLERS / 'sns_setup.py'}:create", *FAST, "--json")
    assert code == 1, err  # it runs; S3 delivering an event twice publishes twice
    report = json.loads(out)
    assert report["baseline"]["sns:Publish"] == 1 and not report["baseline"].get("provider:charge")
    assert report["verdicts"].get("double_effect", 0) > 0


def test_a_setup_that_fails_is_exit_2_with_its_traceback(tmp_path):
    broken = tmp_path / "broken_setup.py"
    broken.write_text("def create(session):\n    raise ValueError('no such thing')\n")
    code, _, err = cli(target("sns_notifier"), "--setup", f"{broken}:create", *FAST)
    assert code == 2 and "ValueError: no such thing" in err.strip().splitlines()[-1]


TEMPLATE = HANDLERS / "sns_notifier.yaml"


def test_a_template_gives_the_handler_its_environment_trigger_memory_and_resources():
    from idem.explore.target.template_function import read

    found = read(str(TEMPLATE), "Notifier")
    assert found.target == f"{HANDLERS / 'sns_notifier.py'}:lambda_handler"
    assert found.env == {"TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:idem-check-Notices",
                         "BUCKET_ARN": "arn:aws:s3:::idem-check-uploads",
                         "GREETING": "from idem-check in us-east-1"}
    assert (found.trigger, found.memory_mb, found.timeout) == ("s3", 512, 30)  # Timeout from Globals
    assert sorted(r["name"] for r in found.resources) == ["idem-check-Notices", "idem-check-uploads"]


def test_a_template_declared_sns_notifier_runs_with_its_topic_and_is_judged():
    code, out, err = cli("--template", str(TEMPLATE), "--function", "Notifier", "--effect", "sns:Publish",
                         *FAST, "--json")
    assert code == 1, err  # the topic exists: it runs; S3 delivering twice publishes twice
    report = json.loads(out)
    assert report["baseline"]["sns:Publish"] == 1 and not report["baseline"].get("provider:charge")
    assert report["env"]["TOPIC_ARN"].endswith(":idem-check-Notices")
    assert report["env"]["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "512"
    assert report["verdicts"].get("double_effect", 0) > 0


def test_a_template_table_is_made_with_its_keys_and_indexes(tmp_path):
    from idem.explore.target.template_function import create, read
    from idem.sim.world import ensure_moto, fake_session

    (tmp_path / "app.py").write_text("def handler(event, context):\n    return None\n")
    (tmp_path / "t.yaml").write_text(
        "Resources:\n"
        "  Orders:\n    Type: AWS::DynamoDB::Table\n    Properties:\n"
        "      TableName: !Sub '${AWS::StackName}-orders'\n      BillingMode: PAY_PER_REQUEST\n"
        "      AttributeDefinitions:\n        - {AttributeName: pk, AttributeType: S}\n"
        "        - {AttributeName: email, AttributeType: S}\n"
        "      KeySchema: [{AttributeName: pk, KeyType: HASH}]\n"
        "      GlobalSecondaryIndexes:\n        - IndexName: by_email\n"
        "          KeySchema: [{AttributeName: email, KeyType: HASH}]\n"
        "          Projection: {ProjectionType: ALL}\n"
        "  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      Handler: app.handler\n"
        "      Environment: {Variables: {ORDERS: !Ref Orders}}\n"
        "      Events: {Q: {Type: SQS, Properties: {Queue: !GetAtt Work.Arn}}}\n"
        "  Work:\n    Type: AWS::SQS::Queue\n")
    found = read(str(tmp_path / "t.yaml"), "Fn")
    assert found.env == {"ORDERS": "idem-check-orders"} and found.trigger == "sqs"
    ensure_moto()
    create(found.resources, fake_session())
    table = fake_session().client("dynamodb").describe_table(TableName="idem-check-orders")["Table"]
    assert [i["IndexName"] for i in table["GlobalSecondaryIndexes"]] == ["by_email"]
    assert fake_session().client("sqs").get_queue_url(QueueName="idem-check-Work")["QueueUrl"]


def test_a_function_the_template_does_not_have_is_exit_2_listing_its_functions():
    code, _, err = cli("--template", str(TEMPLATE), "--function", "Charger", *FAST)
    assert code == 2 and "no function 'Charger'; its functions: Notifier" in err


@pytest.mark.parametrize("given, numbered", [
    (b'{"order_id": 1001, "amount_cents": 1250}', b'{"order_id": 100100042, "amount_cents": 1250}'),
    (b'{"order_id":"A-7","amount_cents":1250,"amount_cents":99900}',
     b'{"order_id":"A-7-00042","amount_cents":1250,"amount_cents":99900}'),
    (b'{ "order_id" : "A\\"1" }\n', b'{ "order_id" : "A\\"1-00042" }\n'),
])
def test_only_the_order_ids_text_changes_every_other_byte_lands_as_written(tmp_path, given, numbered):
    """docs/check_from_a_template.md P8a: before, the file was parsed and dumped again, so a field given
    twice lost its first value and an integer id became a string."""
    order = tmp_path / "order.json"
    order.write_bytes(given)
    assert UserObject.parse(f"{order}=alice/incoming/order.json").body_for(42) == numbered
