"""`idem check --template` on templates as written: parameters given as `sam deploy` takes them
(idem.explore.target.template_parameters) and triggers declared outside the function
(idem.explore.target.template_triggers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from check_cli import cli

TEMPLATES = Path(__file__).parent / "templates"
OUTSIDE = TEMPLATES / "outside_triggers.yaml"


def _read(function: str, **given: str):
    from idem.explore.target.template_function import read

    return read(str(OUTSIDE), function, given)


def test_a_parameter_without_a_default_and_no_value_ends_in_one_line_naming_it_and_the_option():
    code, out, err = cli("--template", str(OUTSIDE), "--function", "FromBucket", "--json")
    assert code == 2
    message = json.loads(out)["error"]
    assert message == ("--template outside_triggers.yaml: parameter UploadBucketName has no default and no value: "
                       "give it with --parameter UploadBucketName=VALUE (or --parameters-file FILE)")


def test_parameter_values_name_resources_and_settings():
    found = _read("FromBucket", UploadBucketName="team-uploads", Stage="prod", RetryCount="0")
    assert found.env["STAGE"] == "prod" and found.bucket == "team-uploads"
    assert found.deployed["max_retry_attempts"] == 0


@pytest.mark.parametrize("given, wrong", [
    ({"UploadBucketName": "b", "Stage": "test"}, "--parameter Stage=test: not one of its AllowedValues (dev, prod)"),
    ({"UploadBucketName": "b", "RetryCount": "two"}, "--parameter RetryCount=two: the parameter is a Number"),
    ({"UploadBucketName": "b", "Nope": "1"}, "--parameter Nope: outside_triggers.yaml declares no such parameter"),
])
def test_a_wrong_parameter_is_refused_naming_it(given, wrong):
    from idem.explore.target.template_function import TemplateError

    with pytest.raises(TemplateError) as refused:
        _read("FromBucket", **given)
    assert str(refused.value).startswith(wrong)


@pytest.mark.parametrize("name, text", [
    ("samconfig.toml", 'version = 0.1\n[default.deploy.parameters]\nstack_name = "x"\n'
                       'parameter_overrides = "UploadBucketName=team-uploads Stage=\\"prod\\""\n'),
    ("samconfig.yaml", "version: 0.1\ndefault:\n  deploy:\n    parameters:\n      parameter_overrides:\n"
                       "        - UploadBucketName=team-uploads\n        - Stage=prod\n"),
    ("overrides.txt", "ParameterKey=UploadBucketName,ParameterValue=team-uploads ParameterKey=Stage,ParameterValue=prod\n"),
    ("params.json", '[{"ParameterKey": "UploadBucketName", "ParameterValue": "team-uploads"},'
                    ' {"ParameterKey": "Stage", "ParameterValue": "prod"}]'),
])
def test_a_parameters_file_in_each_form_sam_and_cloudformation_read(tmp_path, name, text):
    from idem.explore.target.template_parameters import from_file

    (tmp_path / name).write_text(text)
    assert from_file(str(tmp_path / name)) == {"UploadBucketName": "team-uploads", "Stage": "prod"}


def test_parameter_on_the_command_line_wins_over_the_file(tmp_path):
    (tmp_path / "samconfig.toml").write_text('[default.deploy.parameters]\nparameter_overrides = "UploadBucketName=b Stage=prod"\n')
    code, out, _ = cli("--template", str(OUTSIDE), "--function", "FromBucket", "--parameters-file",
                       str(tmp_path / "samconfig.toml"), "--parameter", "Stage=nope", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("--parameter Stage=nope: not one of its AllowedValues")


def test_a_parameter_without_a_template_is_refused():
    code, out, _ = cli("x.py:h", "--parameter", "A=1", "--json")
    assert code == 2 and "name the template" in json.loads(out)["error"]


def test_a_bucket_notification_configuration_is_an_s3_trigger_with_its_key_filter():
    found = _read("FromBucket", UploadBucketName="team-uploads")
    (trigger,) = found.triggers
    assert (trigger.kind, trigger.declared, trigger.prefix, trigger.suffix) == (
        "s3", "AWS::S3::Bucket Uploads NotificationConfiguration", "incoming/", ".json")
    assert found.trigger == "s3"


def test_an_events_rule_targeting_the_function_is_an_eventbridge_trigger():
    found = _read("FromRule", UploadBucketName="b")
    assert found.trigger == "eventbridge" and found.triggers[0].declared == "AWS::Events::Rule Rule"


INLINE = TEMPLATES / "inline_code.yaml"


@pytest.mark.parametrize("function, name", [("Plain", "handler"), ("Sam", "forward")])
def test_inline_code_is_written_to_index_py_as_cloudformation_writes_it(function, name):
    from idem.explore.target.template_function import read

    found = read(str(INLINE), function)
    file, _, handler = found.target.rpartition(":")
    assert Path(file).name == "index.py" and handler == name
    assert f"def {name}(event, context):" in Path(file).read_text()


def test_an_inline_function_is_checked_from_its_template():
    code, out, err = cli("--template", str(INLINE), "--function", "Plain", "--effect", "sqs:SendMessage",
                         "--workers", "1", "--retries", "0", "--json")
    report = json.loads(out)
    assert code == 1, err
    assert report["baseline"]["sqs:SendMessage"] == 1 and report["verdicts"].get("double_effect")
    duplicate = next(r for r in report["results"] if r["schedule"] == "no fault; duplicate; 0 retries")
    assert duplicate["verdict"] == "double_effect" and duplicate["effects"]["sqs:SendMessage"] == 2


def test_uploads_land_in_the_triggers_bucket_under_keys_its_filter_accepts():
    """filtered_copier refuses any bucket but its own and any key outside incoming/*.json: its clean
    run copies (the check uploaded to team-uploads, incoming/check00000/....json). Its one break is
    its own: a copy of a name read before a second order landed is written after the second's copy."""
    code, out, err = cli("--template", str(OUTSIDE), "--function", "FromBucket", "--parameter",
                         "UploadBucketName=team-uploads", "--effect", "s3:PutObject", "--workers", "1",
                         "--retries", "0", "--json")
    report = json.loads(out)
    assert report["baseline"]["s3:PutObject"] == 1, err
    broken = [f for r in report["results"] for f in r["findings"]]
    assert code == 1 and all('team-uploads "processed/check#####/order-1.json"' in f for f in broken)
    # it decodes the key (unquote_plus) and names its copy after it: at each name of the family names
    # its copy is compared with the clean run's under the clean run's name, so it has no finding
    # there (docs/check_from_a_template.md P4); compared by the name alone, it read as "not decoded"
    named = [r for r in report["results"] if "the upload named" in r["schedule"]]
    assert len(named) == 3 and all(r["verdict"] == "exactly_once" for r in named), named
    assert "key_not_decoded" not in report
    from idem.explore.run.uploads import filtered_key

    assert filtered_key("check00001/order-1.json", "incoming/", ".json") == "incoming/check00001/order-1.json"
    assert filtered_key("check00001/order-1.json", "", ".jpg") == "check00001/order-1.jpg"
    longest = filtered_key("check00001/" + "\u00e9" * 600 + ".json", "incoming/", ".json")
    assert len(longest.encode()) <= 1024 and longest.startswith("incoming/check00001/") and longest.endswith(".json")


def test_an_object_whose_key_the_filter_refuses_is_refused(tmp_path):
    (tmp_path / "a.json").write_text('{"order_id": "A-1"}')
    code, out, _ = cli("--template", str(OUTSIDE), "--function", "FromBucket", "--parameter",
                       "UploadBucketName=team-uploads", "--object", f"{tmp_path / 'a.json'}=other/a.json", "--json")
    assert code == 2
    assert json.loads(out)["error"].startswith("--object key 'other/a.json': the function's S3 trigger "
                                               "filters keys (they must begin with 'incoming/' and end with '.json')")


EXACT = TEMPLATES / "exact_key.yaml"


def test_an_object_lands_at_its_key_exactly_and_each_schedule_starts_from_an_empty_account(tmp_path):
    """docs/check_from_a_template.md P6-P8. daily_report takes reports/daily.csv only (any other name
    fails its clean run) and records each report once in the template's table with a conditional
    put: in an account an earlier schedule left its item in, the put is refused and every schedule
    after the first reads as a silent loss. Each schedule starts from an empty account instead."""
    (tmp_path / "daily.csv").write_text("date,amount\n2026-12-01,5\n")
    code, out, err = cli("--template", str(EXACT), "--function", "DailyReport", "--object",
                         f"{tmp_path / 'daily.csv'}=reports/daily.csv", "--effect", "dynamodb:PutItem",
                         "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert report["baseline"]["dynamodb:PutItem"] == 1, err  # its clean run: the name it takes, exactly
    assert report["object"] == {"file": str(tmp_path / "daily.csv"), "key": "reports/daily.csv"}
    by_label = {r["schedule"]: r for r in report["results"]}
    for label in ("no fault; single; 0 retries", "no fault; duplicate; 0 retries",
                  "no fault; the uploader's retried PUT (same bytes) (new version), after the first is done; 0 retries"):
        assert by_label[label]["verdict"] == "exactly_once", (label, by_label[label])
    assert report["dimensions"]["names"] == 0  # the reader's name is every schedule's (P7)
    # daily.csv is no JSON order: no second order of it is made (P12), and reports/daily.csv has no
    # account folder (P13); each left-out family is named with its reason
    assert set(report["not_run"]) == {"overwrite (a second order at the same name)", "accounts", "names",
                                      "overwrite (a second order at a name of 1,024 bytes)"}
    assert report["dimensions"]["accounts"] == 0
    assert code == 0 and report["holds"], [(r["schedule"], r["verdict"]) for r in report["results"]
                                           if r["verdict"] in ("silent_loss", "double_effect", "silent_mismatch")]


def test_a_file_that_is_not_a_json_order_gets_the_retried_put_and_no_second_order_of_the_same_bytes(monkeypatch):
    """docs/check_from_a_template.md P12. Only a JSON order can be made into a second order (its
    order_id changes); any other file's "second order" would be its bytes again, which a correct
    function takes for the same upload. Those schedules are left out, the retried PUT kept, and the
    report says why; a JSON order keeps both."""
    from idem.explore.families import object_schedules
    from idem.explore.run import objects
    from idem.explore.families.build import overwrite_schedules
    from idem.sim.faults import END

    found = overwrite_schedules([END], retries=(0,))
    assert {s.second for s in found} == {"order", "retried_put"}
    csv = objects.UserObject("daily.csv", "reports/daily.csv", b"date,amount\n", exact=True)
    assert not csv.is_order and csv.body_for(7, second_order=True) == b"date,amount\n"
    monkeypatch.setattr(objects, "CURRENT", csv)
    kept = object_schedules.kept(found)
    assert kept and {s.second for s in kept} == {"retried_put"}
    assert "daily.csv is not a JSON order" in object_schedules.reasons()["overwrite (a second order at the same name)"]
    order = objects.UserObject("a.json", "a.json", b'{"order_id": "A-1"}')
    monkeypatch.setattr(objects, "CURRENT", order)
    assert order.is_order and order.body_for(7, second_order=True) != order.body_for(7)
    # every upload is at the object's name: no schedule claims a name of 1,024 bytes it never had
    assert object_schedules.kept(found) == [s for s in found if not s.long_name]
    assert list(object_schedules.reasons()) == ["overwrite (a second order at a name of 1,024 bytes)"]
    # a second file at the same KEY is the second order's bytes; a third is refused
    day1, day2 = (objects.UserObject(f"day{n}.csv", "reports/daily.csv", f"day {n}\n".encode(), exact=True)
                  for n in (1, 2))
    (both,) = objects.paired([day1, day2])
    assert both.body_for(7) == b"day 1\n" and both.body_for(7, second_order=True) == b"day 2\n"
    assert both.makes_second_orders and not day1.makes_second_orders
    with pytest.raises(objects.BadObject, match="a third file at 'reports/daily.csv'"):
        objects.paired([day1, day2, day1])


def test_a_second_file_at_the_same_key_is_the_second_order_and_finds_a_report_keyed_by_its_name(tmp_path):
    """P12: given the next day's report at the same KEY, the second order runs: daily_report (keyed
    by name and eTag) imports both and holds; DailyReportByName (keyed by the name alone) never
    imports the second, and breaks there only."""
    (tmp_path / "day1.csv").write_text("date,amount\n2026-12-01,5\n")
    (tmp_path / "day2.csv").write_text("date,amount\n2026-12-02,7\n")
    reports = {}
    for function in ("DailyReport", "DailyReportByName"):
        code, out, err = cli("--template", str(EXACT), "--function", function, "--object",
                             f"{tmp_path / 'day1.csv'}=reports/daily.csv", "--object",
                             f"{tmp_path / 'day2.csv'}=reports/daily.csv", "--effect", "dynamodb:PutItem",
                             "--retries", "0", "--workers", "1", "--json")
        reports[function] = (code, json.loads(out))
    code, report = reports["DailyReport"]
    assert code == 0 and report["holds"] and "overwrite (a second order at the same name)" not in report["not_run"]
    assert any("a second order at the same name" in r["schedule"] for r in report["results"])
    code, report = reports["DailyReportByName"]
    broken = [r for r in report["results"] if r["verdict"] in ("silent_loss", "double_effect", "silent_mismatch")]
    assert code == 1 and broken and all("a second order at the same name" in r["schedule"] for r in broken)


def test_another_accounts_upload_stays_inside_the_triggers_key_filter(tmp_path, monkeypatch):
    """docs/check_from_a_template.md P13. filtered_copier refuses any key outside incoming/*.json:
    another account's upload went to other#####/a.json, which S3 would never have sent it, and it
    failed there. Under the trigger's prefix, in the account folder's place, it copies the order."""
    from idem.explore.families import accounts
    from idem.explore.run import uploads

    monkeypatch.setattr(uploads, "KEY_PREFIX", "incoming/")
    assert accounts.other_account_key("incoming/check00042/order-1.json", 42) == "incoming/other00042/order-1.json"
    assert accounts.other_account_key("incoming/alice/2026/a.json", 7) == "incoming/other00007/2026/a.json"
    monkeypatch.setattr(uploads, "KEY_PREFIX", "")
    assert accounts.other_account_key("check00042/order-1.json", 42) == "other00042/order-1.json"
    (tmp_path / "a.json").write_text('{"order_id": "A-1"}')
    code, out, err = cli("--template", str(OUTSIDE), "--function", "FromBucket", "--parameter",
                         "UploadBucketName=team-uploads", "--object", f"{tmp_path / 'a.json'}=incoming/alice/a.json",
                         "--effect", "s3:PutObject", "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert report["baseline"]["s3:PutObject"] == 1, err
    others = [r for r in report["results"] if "another account's order" in r["schedule"]]
    assert len(others) == report["dimensions"]["accounts"] == 4
    assert all(r["verdict"] == "exactly_once" for r in others), [(r["schedule"], r["verdict"]) for r in others]
    assert "accounts" not in report.get("not_run", {})


def test_a_template_that_is_not_there_is_one_line():
    code, out, err = cli("--template", "no/such/template.yaml", "--function", "F", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("--template no/such/template.yaml: cannot read it")


def test_a_table_with_a_stream_specification_is_created_as_cloudformation_creates_it():
    from idem.explore.target.template_function import create, read
    from idem.sim.world import ensure_moto, fake_client, fake_session

    found = read(str(TEMPLATES / "deployed_sqs.yaml"), "Plain")
    table = next(r for r in found.resources if r["id"] == "Changes")
    ensure_moto()
    create([table], fake_session())
    described = fake_client("dynamodb").describe_table(TableName=table["name"])["Table"]
    assert described["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    fake_client("dynamodb").delete_table(TableName=table["name"])


def test_a_state_machine_is_created_and_its_ref_is_its_arn():
    from idem.explore.target.template_function import create, read
    from idem.sim.world import ensure_moto, fake_client, fake_session

    found = read(str(OUTSIDE), "Starter", {"UploadBucketName": "b"})
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:idem-check-Workflow"
    assert found.env["STATE_MACHINE_ARN"] == arn and found.env["STATE_MACHINE_NAME"] == "idem-check-Workflow"
    ensure_moto()
    create([r for r in found.resources if r["id"] == "Workflow"], fake_session())
    states = fake_client("stepfunctions")
    assert json.loads(states.describe_state_machine(stateMachineArn=arn)["definition"])["StartAt"] == "Work"
    states.delete_state_machine(stateMachineArn=arn)


def test_a_handler_file_missing_under_code_uri_exits_2_saying_what_to_check_instead():
    """The project's own template: ChargeFunction's CodeUri, function/, holds only the Makefile that
    `sam build` runs (Metadata BuildMethod makefile), so its handler file is not there. The one line
    says so, and how to check the handler's source instead (exit 2: the check was not given what it needs)."""
    template = Path(__file__).resolve().parent.parent / "template.yaml"
    code, out, err = cli("--template", str(template), "--function", "ChargeFunction", "--json")
    assert code == 2, (out + err)[-2000:]
    message = json.loads(out)["error"]
    assert "keyed.py, which does not exist" in message and "FILE.py:FUNCTION" in message, message
    assert "sam build" in message, message


PROJECT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"


def test_the_projects_charge_function_is_fed_by_its_upload_queue_as_the_template_deploys_it():
    """Production's ChargeFunction is fed by UploadQueue through a mapping that names the function's
    alias (`!Ref ChargeFunction.Alias`) and the queue by an ARN built with !Sub. Read as S3 invoking
    it directly (async retries, no batch), its check would judge a world it never runs in."""
    from idem.explore.target.template_function import read

    found = read(str(PROJECT_TEMPLATE), "ChargeFunction", source="idem.core.handlers.keyed:lambda_handler")
    assert found.trigger == "sqs" and [t.declared for t in found.triggers] == [
        "AWS::Lambda::EventSourceMapping ChargeFunctionUploads"]
    assert found.target == "idem.core.handlers.keyed:lambda_handler"  # the source given, not the Handler's file
    deployed = found.deployed
    assert (deployed["queue"], deployed["batch_size"], deployed["report_batch_item_failures"]) == ("UploadQueue", 10, True)
    assert (deployed["visibility_timeout"], deployed["max_receive_count"], deployed["timeout"]) == (360, 75, 60)


def test_the_demo_charge_function_is_invoked_by_s3_directly():
    from idem.explore.target.template_function import read

    found = read(str(PROJECT_TEMPLATE), "ChargeFunction", {"Profile": "demo"}, source="idem.core.entry:lambda_handler")
    assert found.trigger == "s3" and found.deployed["failure_destination"].startswith("OnFailure")


def test_a_target_beside_template_and_function_is_the_handlers_source(monkeypatch):
    """Where a build step fills the CodeUri, the target names the source and the template the rest."""
    from idem.explore.sandbox import parent

    asked = {}

    def run_sandboxed(request, **_):
        asked.update(request)
        return parent.Outcome(0, {"exit_code": 0}, "holds", "", [])

    monkeypatch.setattr(parent, "run_sandboxed", run_sandboxed)
    code, out, err = cli("idem.core.handlers.keyed:lambda_handler", "--template", str(PROJECT_TEMPLATE),
                         "--function", "ChargeFunction")
    assert code == 0, out + err
    assert asked["target"] == "idem.core.handlers.keyed:lambda_handler"
    assert asked["options"]["trigger"] == "sqs" and asked["options"]["deployed"]["batch_size"] == 10
    assert asked["options"]["env"]["LEDGER_TABLE"] and asked["options"]["env"]["FUNCTION_TIMEOUT_SECONDS"] == "60"


ALIASED = """
Transform: AWS::Serverless-2016-10-31
Resources:
  Failures: {{Type: AWS::SQS::Queue}}
  Uploads:
    Type: AWS::S3::Bucket
    Properties:
      NotificationConfiguration:
        LambdaConfigurations:
          - Event: s3:ObjectCreated:Put
            Function: {function}
  Charge:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: app.handler
      CodeUri: src/
      AutoPublishAlias: live
      EventInvokeConfig:
        MaximumRetryAttempts: 1
        DestinationConfig: {{OnFailure: {{Type: SQS, Destination: !GetAtt Failures.Arn}}}}
{extra}"""
LATEST_CONFIG = """  LatestConfig:
    Type: AWS::Lambda::EventInvokeConfig
    Properties:
      FunctionName: !Ref Charge
      Qualifier: $LATEST
      MaximumRetryAttempts: 0
      DestinationConfig: {OnFailure: {Destination: !GetAtt Failures.Arn}}
"""


@pytest.mark.parametrize("function, extra, retries, destination", [
    ("!GetAtt Charge.Arn", "", 2, False),  # S3 invokes $LATEST; the config is on the alias: AWS's defaults
    ("!Ref Charge.Alias", "", 1, True),  # S3 invokes the alias the config is on
    ("!GetAtt Charge.Arn", LATEST_CONFIG, 0, True),  # a config of $LATEST's own
])
def test_an_event_invoke_config_applies_only_to_what_the_trigger_invokes(tmp_path, function, extra, retries, destination):
    """An EventInvokeConfig "configures options for asynchronous invocation on a version or an alias":
    one SAM puts on the AutoPublishAlias alias does nothing for a bucket that invokes the function's
    plain ARN ($LATEST), whose failed events are discarded. Read as applied, the check would count them
    failed_visibly where AWS loses them."""
    from idem.explore.target.template_function import read

    path = tmp_path / "template.yaml"
    path.write_text(ALIASED.format(function=function, extra=extra))
    deployed = read(str(path), "Charge", source="app.py:handler").deployed
    assert deployed["max_retry_attempts"] == retries
    assert bool(deployed["failure_destination"]) is destination, deployed
    assert ("not applied" in deployed["unapplied"]) is (not destination and not extra)


def test_the_production_function_checked_from_what_its_build_ships_charges_its_orders(tmp_path, monkeypatch):
    """ChargeFunction from the folder `sam build` fills (idem.deploy.package: idem/__init__.py and
    idem/core/), as deployed: fed by its queue. Its handler reads the SQS envelope with a module it
    imports at the first message (keyed_event_shapes). That module was kept from one execution
    environment for the next, built on the first one's classes, so every schedule after the first
    environment failed visibly, and the report said "holds" with nothing charged."""
    from idem.deploy import package

    package.stage(tmp_path / "fn")
    template = tmp_path / "template.yaml"
    template.write_text(PROJECT_TEMPLATE.read_text(encoding="utf-8").replace("CodeUri: function/", "CodeUri: fn/"),
                        encoding="utf-8")
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "runs")  # the same call failing 1, 2, 3... times: 48 schedules
    code, out, err = cli("--template", str(template), "--function", "ChargeFunction", "--retries", "1", "--json")
    assert code == 0, (out + err)[-2000:]
    report = json.loads(out)
    assert report["trigger"] == "sqs" and report["target"].endswith("fn/idem/core/handlers/keyed.py:lambda_handler")
    # each run that fails fewer times than a message is received ends done (before: none did)
    assert report["verdicts"].get("exactly_once", 0) >= 8, report["verdicts"]
