"""The handler to copy stands alone: its files, copied into an empty folder outside the
repository, run in a fresh interpreter that cannot import idem, against moto, and charge
through Stripe's SDK (aimed at the loopback Stripe this test serves); `idem check` holds on
the copied file; `mypy --strict` passes on the folder as copied. And idem takes the
handler's names from it: one definition."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from idem.core import errors, events
from idem.core.handlers import FILES_TO_COPY, OPTIONAL_FILE, keyed, keyed_events, keyed_settings
from idem.sim.stripe.server import loopback_stripe, seed_customer
from idem.sim.world import LocalWorld

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = ROOT / "idem" / "core" / "handlers"
#: Exactly what a reader copies: the protocol (keyed.py) and the siblings it imports by plain name,
#: with the optional file (SNS and EventBridge; tests/test_keyed_shipped.py runs the copy without it).
FILES = FILES_TO_COPY + (OPTIONAL_FILE,)

DRIVER = textwrap.dedent('''
    import json, os, sys
    sys.modules["idem"] = None  # the copied files must not need idem: importing it now fails
    sys.path.insert(0, os.environ["HANDLER_DIR"])
    from moto import mock_aws

    with mock_aws():
        import boto3
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="ledger", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                                  for n, t in (("pk", "S"), ("account", "S"), ("booked_at", "N"))],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": "by_account", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "account", "KeyType": "HASH"},
                                                   {"AttributeName": "booked_at", "KeyType": "RANGE"}]}])
        dynamodb.put_item(TableName="ledger", Item={  # who pays for alice: `idem customers link`'s item
            "pk": {"S": "account#alice"}, "kind": {"S": "customer"}, "account": {"S": "alice"},
            "customer": {"S": "cus_alice"}, "linked_by": {"S": "arn:aws:iam::123456789012:user/ops"},
            "linked_at": {"N": "1767225600"}, "reason": {"S": "onboarding"}})
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name="/idem/stripe", Value="sk_test_SECRET_NEVER_LOGGED", Type="SecureString")
        import keyed
        assert keyed.__file__.startswith(os.environ["HANDLER_DIR"])

        class Context:
            aws_request_id, function_name = "req-standalone-1", "charge"
            def get_remaining_time_in_millis(self):
                return 30_000

        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="uploads")
        s3.put_bucket_versioning(Bucket="uploads", VersioningConfiguration={"Status": "Enabled"})
        order = json.dumps({"order_id": "A-1001", "amount_cents": 1250, "currency": "usd"}).encode()

        def put_event():  # the uploader's PUT, and the event S3 sends for it
            put = s3.put_object(Bucket="uploads", Key="alice/order.json", Body=order)
            return {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                                 "eventTime": "2026-01-01T00:00:00.000Z", "eventName": "ObjectCreated:Put",
                                 "s3": {"bucket": {"name": "uploads"},
                                        "object": {"key": "alice/order.json", "size": len(order),
                                                   "eTag": put["ETag"].strip('"'), "versionId": put["VersionId"],
                                                   "sequencer": "0A"}}}]}

        event = put_event()
        results = [keyed.lambda_handler(event, Context()) for _ in range(2)]
        results.append(keyed.lambda_handler(put_event(), Context()))  # the uploader's retried PUT
        try:
            keyed.lambda_handler({"Records": [event["Records"][0], {"eventSource": "aws:s3"}]}, Context())
        except keyed.RecordsFailed as failed:
            results.append({"status": "failed", "error": type(failed).__name__})
        print("RESULTS " + json.dumps(results))
''')


@pytest.fixture
def copied(tmp_path_factory):
    """The handler's files alone in an empty folder outside the repository."""
    folder = tmp_path_factory.mktemp("function")
    assert ROOT not in folder.parents
    for name in FILES:
        shutil.copy(HANDLERS / name, folder / name)
    return folder


def test_the_copied_files_charge_through_stripe_without_idem(copied):
    with LocalWorld() as world, loopback_stripe(world) as stripe:
        seed_customer(stripe, customer_id="cus_alice")  # alice's Stripe customer, with a saved card
        (copied / "driver.py").write_text(DRIVER)
        env = {"PATH": os.environ.get("PATH", ""), "HANDLER_DIR": str(copied), "LEDGER_TABLE": "ledger",
               "STRIPE_SECRET_PARAMETER": "/idem/stripe", "STRIPE_API_BASE": stripe.url,
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing"}
        run = subprocess.run([sys.executable, "-I", str(copied / "driver.py")], cwd=copied, env=env,
                             capture_output=True, text=True, timeout=120)
        charges = world.provider().charges()
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    results = json.loads(next(line for line in lines if line.startswith("RESULTS "))[8:])
    assert [r["status"] for r in results] == ["ok", "ok", "ok", "failed"]
    # the event again, then the uploader's retried PUT (a second version): one order, one charge
    assert [p["status"] for r in results[:3] for p in r["processed"]] == ["charged", "duplicate", "duplicate"]
    assert results[3]["error"] == "RecordsFailed"  # an unreadable record fails the invocation
    assert len(charges) == 1 and charges[0].reference == "s3://uploads/alice/order.json"
    assert charges[0].amount == 1250  # the order's amount
    assert charges[0].customer == "cus_alice"  # the account's linked customer, never the file's
    logged = [json.loads(line) for line in lines if line.startswith("{")]
    assert {line.get("outcome") for line in logged} >= {"charged", "duplicate", "malformed"}
    assert "sk_test_SECRET_NEVER_LOGGED" not in run.stdout + run.stderr
    assert ("POST", "/v1/payment_intents") in stripe.requests


def test_idem_check_holds_on_the_copied_file(copied):
    target = f"{copied / 'keyed.py'}:lambda_handler"
    run = subprocess.run([sys.executable, "-m", "idem", "check", target, "--retries", "0", "--workers", "1"],
                         cwd=copied, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "holds" in run.stdout


def test_the_handler_imports_nothing_from_idem():
    for name in FILES:
        for node in ast.walk(ast.parse((HANDLERS / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                # a relative import names a sibling (inside idem: the package's branch of `if COPIED`)
                sibling = node.level == 1 and f"{node.module}.py" in FILES
                assert sibling or (node.level == 0 and (node.module or "").split(".")[0] != "idem"), name
                if node.level == 0 and (node.module or "").startswith("keyed"):
                    assert f"{node.module}.py" in FILES, (name, node.module)  # a sibling a reader copies
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "idem" for a in node.names), name


def test_every_sibling_is_listed_and_imported_by_plain_name_when_copied():
    on_disk = {p.name for p in HANDLERS.glob("keyed*.py")}
    assert on_disk == set(FILES)
    sources = "".join((HANDLERS / name).read_text() for name in FILES)
    for name in FILES_TO_COPY[1:]:  # each one imported (by keyed.py, or a sibling) by its plain name
        assert f"from {name[:-3]} import" in sources or f"import {name[:-3]} as" in sources, name
    # the optional file, found by its plain name when it is there (keyed_settings.optional_file)
    assert f'else "{OPTIONAL_FILE[:-3]}"' in (HANDLERS / "keyed_settings.py").read_text()


def test_mypy_strict_passes_on_the_copied_folder(copied):
    """As a reader checks the folder: no configuration of ours, `stripe`'s own types."""
    assert not any((copied / n).exists() for n in ("mypy.ini", "pyproject.toml", "setup.cfg", ".mypy.ini"))
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "."], cwd=copied,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"no issues found in {len(FILES)} source files" in run.stdout


def test_idem_takes_the_handlers_names_from_it():
    """One definition: the parser, the errors and the rules are the handler's own objects."""
    assert events.S3Object is keyed_events.S3Object  # and events.read_event calls keyed_events.read_event
    assert "keyed_events.read_event(event, charge_events, keyed_event_shapes)" in Path(events.__file__).read_text()
    assert events.EventError is keyed_events.EventError
    assert errors.IdemError is keyed_settings.IdemError and errors.RecordsFailed is keyed.RecordsFailed
    assert errors.NeedsAttention is keyed.NeedsAttention


def code_lines(path: Path, stop_at: str) -> int:
    """Lines of code up to the marker, docstrings, comments and blank lines aside."""
    source = path.read_text().split(stop_at)[0]
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings |= set(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for n, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and n not in docstrings)


def test_the_protocol_a_reader_studies_is_at_most_300_lines_of_code():
    """keyed.py holds the claim, the charge with the key, the fenced commit and the handler;
    parsing, the adapter, settings, logging and the order file live in its siblings."""
    assert code_lines(HANDLERS / "keyed.py", "\0 no marker") <= 300
