"""The provider's own outcomes (Stripe API v1 rules), time beyond a day, and uploads of one name.

Issue #11: a saved 500, a 409, a decline, a lease released after a caught error, the 25-hour
redrive, uploads with versioning suspended, and lifetimes refused at cold start.
"""
from __future__ import annotations

import pytest

from idem.core.errors import ConfigError
from idem.core.handlers import keyed
from idem.core.clock import VirtualClock
from idem.core.provider import DAY, MemoryStore, Provider, ProviderError
from idem.core.reconcile.audit import reconcile
from idem.core.settings import Settings
from idem.sim.faults import FaultPlan
from idem.explore.redrive import redrive_local
from idem.sim.runtime import LocalLambda
from idem.explore.scenarios import Scenario, run
from idem.sim.world import LocalWorld

HANDLERS = ("naive", "claim_first", "robust", "keyed")

#: (fault, times) -> per handler: (charges, dlq, record, verdict). Every handler, every outcome.
PINNED = {
    ("provider_down", "once"): {"naive": (1, 0, "-", "exactly_once"), "claim_first": (0, 0, "claimed", "silent_loss"),
                                "robust": (1, 0, "done", "exactly_once"), "keyed": (1, 0, "done", "exactly_once")},
    ("provider_500", "once"): {"naive": (2, 0, "-", "double_charge"), "claim_first": (1, 0, "claimed", "silent_mismatch"),
                               "robust": (2, 0, "done", "double_charge"),
                               "keyed": (1, 1, "needs_attention", "needs_attention")},
    ("provider_500", "always"): {"naive": (3, 1, "-", "double_charge"), "claim_first": (1, 0, "claimed", "silent_mismatch"),
                                 "robust": (3, 1, "in_progress", "double_charge"),
                                 "keyed": (1, 1, "needs_attention", "needs_attention")},
    ("provider_409", "once"): {"naive": (1, 0, "-", "exactly_once"), "claim_first": (0, 0, "claimed", "silent_loss"),
                               "robust": (1, 0, "done", "exactly_once"), "keyed": (1, 0, "done", "exactly_once")},
    ("declined", "always"): {"naive": (0, 1, "-", "failed_visibly"), "claim_first": (0, 0, "claimed", "silent_loss"),
                             "robust": (0, 1, "in_progress", "failed_visibly"),
                             "keyed": (0, 0, "declined", "declined")},
}


@pytest.mark.parametrize("fault, times", list(PINNED))
def test_provider_outcomes_pinned_for_every_handler(fault, times):
    found = {}
    for handler in HANDLERS:
        o = run(Scenario(handler, fault, times))
        found[handler] = (o.charges, o.dlq, o.record, o.verdict)
    assert found == PINNED[(fault, times)]


def test_a_saved_500_stops_keyed_with_a_reason_and_never_a_second_key():
    o = run(Scenario("keyed", "provider_500", "once"))
    assert o.charges == 1 and o.verdict == "needs_attention"  # 0 or 1, never 2
    reason = o.failures[0]["responsePayload"]["errorMessage"]
    assert "500" in reason and "find the charge" in reason
    assert o.failures[0]["responsePayload"]["errorType"] == "NeedsAttention"
    # the retries met the record, not the provider: one provider call in all
    assert sum(1 for a in o.trace for c in a.crossings if c.boundary.call == "provider:charge"
               and c.boundary.side.value == "before") == 1


def test_a_decline_ends_the_work_and_reconciliation_reports_a_decline(world):
    # ORDER_IDENTITY=upload: the reconciliation maps each object to its upload's key (it does not
    # read order files yet), so the decline is judged under the per-upload key here.
    runtime = LocalLambda(world, world.env("keyed", ORDER_IDENTITY="upload"),
                          fault=FaultPlan.at_point("declined", "once"))
    obj = world.upload("alice/order.csv")
    runtime.send(world.event(obj))
    runtime.run()
    assert [a.outcome for a in runtime.attempts] == ["ok"] and world.failure_queue() == []
    assert [r.status.value for r in world.ledger().records()] == ["declined"]
    report = reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table, world.provider_table,
                       now=world.clock.now() + 3600)
    assert report.clean and not report.missing and len(report.declined) == 1
    assert "DECLINED" in report.render()


@pytest.mark.parametrize("timeout", [181.0, 900.0])
def test_a_caught_error_releases_the_lease_so_the_retry_succeeds(world, timeout):
    runtime = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("at_charge", "once"),
                          timeout=timeout)
    runtime.send(world.event(world.upload("alice/order.csv")))
    runtime.run()
    assert [a.outcome for a in runtime.attempts] == ["error", "ok"]  # the retry a minute later
    assert len(world.provider().charges()) == 1 and world.failure_queue() == []


def test_a_409_is_retried_later_like_a_live_lease(world):
    runtime = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("provider_409", "1,2"),
                          timeout=900.0)
    runtime.send(world.event(world.upload("alice/order.csv")))
    runtime.run()
    assert [a.outcome for a in runtime.attempts] == ["error", "error", "ok"]
    assert "KeyInFlight" in runtime.attempts[0].error
    assert len(world.provider().charges()) == 1


def test_a_claim_resent_after_its_answer_was_lost_finds_its_own_owner(world):
    ledger = keyed.KeyedLedger(world.dynamodb, world.ledger_table, now=world.clock.now)
    assert ledger.claim("charge#x", "me", world.clock.now() + 30).won
    assert ledger.claim("charge#x", "me", world.clock.now() + 30).won  # the SDK's re-send
    assert not ledger.claim("charge#x", "someone else", world.clock.now() + 30).won


def _failed_then_redriven(fresh: bool) -> int:
    """An event charged, then failed into the queue on every attempt; 25 hours later, with the
    fault gone, redriven. Returns the charges the provider made for it."""
    with LocalWorld() as world:
        broken = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("after_charge", "always"))
        broken.send(world.event(world.upload("alice/order.csv")))
        broken.run()
        assert world.failure_queue_depth() == 1 and len(world.provider().charges()) == 1
        world.clock.advance(25 * 3600)  # past the record's TTL and the provider's key retention
        fixed = LocalLambda(world, world.env("keyed"))
        assert redrive_local(fixed, fresh=fresh) == 1
        assert world.failure_queue_depth() == 0
        return len(world.provider().charges())


def test_the_25_hour_redrive_charges_once_whether_the_event_is_fresh_or_the_real_one():
    """The record keeps the key's first attempt (docs/money_contract.md): a fresh event, which
    hides the event's age, is looked up all the same (it once charged twice)."""
    assert _failed_then_redriven(fresh=True) == 1  # a fresh event: the key's age is the record's
    assert _failed_then_redriven(fresh=False) == 1  # the real event's age: looked up, booked once


def test_an_old_event_with_no_lookup_is_held_for_a_person(world):
    class NoLookup:
        def __init__(self, inner):
            self.inner = inner

        def charge(self, **kwargs):
            return self.inner.charge(**kwargs)

    charger = keyed.KeyedCharger(world.dynamodb, NoLookup(world.provider()),
                                 keyed.Settings(world.ledger_table), now=world.clock.now, s3=world.s3)
    obj = world.upload("alice/order.csv")
    upload = keyed.Upload(obj.bucket, obj.key, obj.version_id, obj.etag, obj.sequencer, world.clock.now())
    world.clock.advance(DAY + 3600)
    with pytest.raises(keyed.NeedsAttention, match="offers no look-up"):
        charger.charge_once(upload, 30_000)
    assert world.provider().charges() == []
    assert [r.status.value for r in world.ledger().records()] == ["needs_attention"]


@pytest.mark.parametrize("handler", ["keyed", "claim_first", "robust"])
def test_uploads_of_one_name_with_versioning_suspended_are_each_charged(handler):
    # With no versionId every upload of a name is version `null`: the function keys them by
    # content and sequencer instead, so two orders are never charged as one.
    with LocalWorld(versioned=False) as world:
        runtime = LocalLambda(world, world.env(handler))
        for body in (b'{"order_id": "A-1", "amount_cents": 500}', b'{"order_id": "A-2", "amount_cents": 500}'):
            runtime.send(world.event(world.upload("alice/order.csv", body)))
            runtime.run()
        assert len(world.provider().charges()) == 2
        assert world.ledger().entry("alice") == (2, 1000)
        if handler != "keyed":
            return  # their charges carry no key: the job cannot tell two uploads of one name apart
        report = reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                           world.provider_table, now=world.clock.now() + 3600)
        assert report.clean, report.render()


@pytest.mark.parametrize("env, says", [
    ({"RECORD_TTL_SECONDS": "3600", "MAX_EVENT_AGE_SECONDS": "21600"}, "RECORD_TTL_SECONDS is 3600 s"),
    ({"PROVIDER_KEY_RETENTION_SECONDS": "3600", "MAX_EVENT_AGE_SECONDS": "21600"},
     "PROVIDER_KEY_RETENTION_SECONDS is 3600 s"),
    ({"MAX_EVENT_AGE_SECONDS": "30"}, "Lambda allows 60 to 21600"),
])
def test_lifetimes_that_break_the_rule_are_refused_at_cold_start(env, says):
    base = {"LEDGER_TABLE": "l", "PROVIDER_TABLE": "p"}
    with pytest.raises(ConfigError, match=says):
        Settings.from_env({**base, **env})
    if "RECORD_TTL_SECONDS" in env:  # keyed's records never expire: it reads no TTL (test_handler_lifetimes.py)
        assert keyed.settings_from_env({**base, **env}).max_event_age_seconds == 21600
        return
    with pytest.raises(ConfigError, match=says):
        keyed.settings_from_env({**base, **env})
    assert Settings.from_env({**base, "MAX_EVENT_AGE_SECONDS": "21600"}).max_event_age_seconds == 21600


def test_unsafe_recipes_are_refused_at_cold_start():
    with pytest.raises(ConfigError, match="KEY_RECIPE"):
        Settings.from_env({"LEDGER_TABLE": "l", "PROVIDER_TABLE": "p", "KEY_RECIPE": "etag_only"})


def test_the_redrive_command_tells_the_25_hour_story(capsys):
    from idem.cli import main

    assert main(["redrive", "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out) == {"queued": 1, "redriven": 1, "charges": 1,
                                                   "ledger": 1, "record": "done"}
    assert main(["redrive", "--fresh", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["charges"] == 1  # the key's age is in the record
    assert main(["redrive", "--queue-url", "q"]) == 2  # a real queue needs its function too


def test_replay_counts_per_upload_not_per_name():
    """Two uploads of one name, versioning off, in one event: two orders, one charge each."""
    from idem.explore.replay import replay

    with LocalWorld(versioned=False) as world:
        event = world.event(world.upload("alice/order.csv", b'{"order_id": "A-1", "amount_cents": 500}'),
                            world.upload("alice/order.csv", b'{"order_id": "A-2", "amount_cents": 500}'))
    done = replay(event, "keyed")
    assert done.status == "processed"
    assert [(row["charges"], row["record"]) for row in done.rows] == [(1, "done"), (1, "done")]


def test_a_stacks_queue_is_redriven_as_asynchronous_invocations(world):
    """Chapter 09's redrive: each message's event goes to Lambda's Invoke (Event), unchanged."""
    import json

    from idem.explore.redrive import redrive_to_lambda

    class Lambda:  # records the calls; moto cannot run a function without docker
        def __init__(self):
            self.calls = []

        def invoke(self, **call):
            self.calls.append(call)

    event = world.event(world.upload("alice/order.csv"))
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=json.dumps({"requestPayload": event}))
    aws = Lambda()
    assert redrive_to_lambda(world.sqs, world.queue_url, aws, "idem-charge") == 1
    (call,) = aws.calls
    assert call["InvocationType"] == "Event" and json.loads(call["Payload"]) == event
    assert world.failure_queue_depth() == 0


def test_the_stacks_lifetimes_obey_the_rule():
    from idem.explore.redrive import lifetimes

    seconds = {row["lifetime"].split(" (")[0]: row["seconds"] for row in lifetimes()}
    assert seconds == {"max event age": 21_600, "record TTL": 86_400, "key retention": 86_400,
                       "message retention": 14 * 86_400}
    assert min(seconds["record TTL"], seconds["key retention"]) >= seconds["max event age"]
    from idem.deploy.template import FUNCTION, load, resolve

    # One parameter feeds both (template.yaml, issue 19); resolved as the demo stack has it.
    raw = load()["Resources"][FUNCTION]["Properties"]
    assert raw["Environment"]["Variables"]["MAX_EVENT_AGE_SECONDS"] == raw["EventInvokeConfig"]["MaximumEventAgeInSeconds"]
    function = resolve(load(), {"Profile": "demo"})["Resources"][FUNCTION]["Properties"]
    variables = function["Environment"]["Variables"]
    assert int(variables["MAX_EVENT_AGE_SECONDS"]) == function["EventInvokeConfig"]["MaximumEventAgeInSeconds"]
    Settings.from_env({**{k: v for k, v in variables.items() if isinstance(v, str)},
                       "LEDGER_TABLE": "l", "PROVIDER_TABLE": "p"})  # starts: no ConfigError


@pytest.mark.parametrize("amount, currency", [(49, "usd"), (29, "gbp"), (49, "JPY")])
def test_an_amount_under_stripes_minimum_is_refused_and_nothing_is_saved(amount, currency):
    """Stripe refuses a charge under a currency's minimum with amount_too_small
    (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts): before, the stand-in charged
    30 cents, so a handler reading that refusal as final was never seen losing the order."""
    provider = Provider(None, "unused", VirtualClock(0.0), store=MemoryStore())
    with pytest.raises(ProviderError, match="amount_too_small"):
        provider.charge(customer="c", amount=amount, currency=currency, reference="r", idempotency_key="k")
    assert provider.charge(customer="c", amount=amount + 1, currency=currency, reference="r",
                           idempotency_key="k").amount == amount + 1  # the key was never saved
