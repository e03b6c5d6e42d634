"""The Lambda entry point: configuration, test events, several records, bad records."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from idem.core.entry import App, ConfigError, RecordsFailed
from idem.core.events import s3_event, s3_test_event
from idem.core.errors import WorkInProgress
from idem.core.handlers.keyed import KeyedLedger, Upload, identify
from idem.sim.runtime import LambdaContext

ROOT = Path(__file__).resolve().parent.parent
CORE = sorted(p for p in (ROOT / "idem" / "core").rglob("*.py") if not p.name.startswith("test_"))  # test_keyed.py: tests/test_keyed_shipped.py


def make_app(world, mode="keyed", logs=None, provider=None):
    tokens = iter(f"token-{n}" for n in range(100))
    return App.from_environment(world.env(mode), session=world.session, clock=world.clock,
                                provider=provider or world.provider(), new_token=lambda: next(tokens),
                                log=(logs.append if logs is not None else lambda line: None))


def context(world):
    return LambdaContext("req-1", "fn", world.clock.now() + 30, world.clock)


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_core_modules_import_only_the_standard_library_and_boto3(path):
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore"}
    if path.name.startswith("keyed"):
        # The handler to copy and its siblings, which it imports by their plain names when copied
        # (`if COPIED:`); the adapter is Stripe's SDK, imported only when STRIPE_SECRET_PARAMETER is set.
        allowed |= {p.stem for p in path.parent.glob("keyed*.py")} | {"stripe"}
    if path.name == "webhook.py":  # Stripe's webhooks are verified with Stripe's SDK (construct_event)
        allowed |= {"stripe"}
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_a_missing_table_setting_is_explained(world):
    env = world.env()
    del env["LEDGER_TABLE"]
    with pytest.raises(ConfigError, match="LEDGER_TABLE is not set"):
        App.from_environment(env, session=world.session)


@pytest.mark.parametrize("name, value, says", [("HANDLER_MODE", "fancy", "HANDLER_MODE is 'fancy'"),
                                               ("PRICE_CENTS", "five", "whole number"),
                                               ("PRICE_CENTS", "0", "1 or more"),
                                               ("RECORD_TTL_SECONDS", "-5", "1 or more"),
                                               ("KEY_RECIPE", "etag_only", "choose one of version, content"),
                                               ("KEY_RECIPE", "mystery", "KEY_RECIPE is 'mystery'")])
def test_bad_settings_are_explained(world, name, value, says):
    with pytest.raises(ConfigError, match=says):
        App.from_environment({**world.env(), name: value}, session=world.session)


def test_a_test_event_is_ignored_with_a_log_line(world):
    logs = []
    result = make_app(world, logs=logs).handle(s3_test_event(world.bucket), context(world))
    assert result == {"status": "test_event", "processed": []}
    assert "s3:TestEvent ignored" in json.loads(logs[0])["message"]
    assert world.provider().charges() == []


def test_every_record_is_handled(world):
    event = s3_event(world.upload("alice/1"), world.upload("bob/2"))
    result = make_app(world).handle(event, context(world))
    assert [p["status"] for p in result["processed"]] == ["charged", "charged"]
    assert sorted(c.customer for c in world.provider().charges()) == ["alice", "bob"]


def test_a_malformed_record_fails_the_invocation_after_the_good_ones(world):
    event = s3_event(world.upload("alice/1"), world.upload("bob/2"))
    del event["Records"][1]["s3"]
    logs = []
    app = make_app(world, logs=logs)
    with pytest.raises(RecordsFailed, match="1 malformed"):
        app.handle(event, context(world))
    assert [c.customer for c in world.provider().charges()] == ["alice"]
    assert any("record 1 skipped" in json.loads(line)["message"] for line in logs)
    # Lambda retries the whole event: the good record is recognised, not charged again.
    with pytest.raises(RecordsFailed):
        app.handle(event, context(world))
    assert len(world.provider().charges()) == 1


def test_naive_retried_after_a_malformed_record_charges_the_good_one_again_and_says_so(world):
    # pins naive's bug on purpose: its failure message must not promise what it cannot keep
    event = s3_event(world.upload("alice/1"), world.upload("bob/2"))
    del event["Records"][1]["s3"]
    app = make_app(world, mode="naive")
    for _ in range(2):
        with pytest.raises(RecordsFailed, match="naive, which keeps no record, charges the processed ones again"):
            app.handle(event, context(world))
    assert len(world.provider().charges()) == 2


def test_one_failing_record_does_not_stop_the_others(world):
    alice, bob = world.upload("alice/1"), world.upload("bob/2")
    app = make_app(world)
    # Another invocation holds a live lease on alice's order: her record must wait, bob's must not.
    KeyedLedger(world.dynamodb, world.ledger_table, now=world.clock.now).claim(
        identify(Upload.of(alice), "order-id", world.s3).idempotency_key, "someone-else", world.clock.now() + 30)
    with pytest.raises(WorkInProgress):
        app.handle(s3_event(alice, bob), context(world))
    assert [c.customer for c in world.provider().charges()] == ["bob"]


def test_a_single_failure_keeps_its_own_error_type(world):
    class Unreachable:
        def charge(self, **_):
            raise ConnectionError("the provider did not answer")

    app = make_app(world, "naive", provider=Unreachable())
    with pytest.raises(ConnectionError, match="did not answer"):
        app.handle(s3_event(world.upload("alice/1")), context(world))


def test_a_non_s3_event_is_rejected_with_a_log_line(world):
    logs = []
    with pytest.raises(ValueError, match="not an S3 notification"):
        make_app(world, logs=logs).handle({"hello": "world"}, context(world))
    assert "event rejected" in logs[0]
