"""A payments reviewer's sixth round on the handler to copy (issue 39; the webhook's and the reconciliation's
probes are tests/test_reconcile_review_round6.py), on moto and the loopback Stripe: cases rounds 1-5 did not try.

Each test names the property of docs/money_contract.md it probes (P1: one succeeded charge per (account,
order) for the order's life; P2: the amount, currency and customer from the trusted source, or parked; P3:
the books equal Stripe; P4: nothing parked without a count) and the published rule it rests on. A probe that
holds is a plain regression test; one that found a defect was fixed (its docstring says so, and the commit
names it)."""
from __future__ import annotations

from typing import Any

import pytest
import stripe
import stripe._http_client

from idem.core.handlers import keyed
from idem.sim.stripe.keys import prune_idempotency_keys
from test_handler_review_round4 import _intents, charge, link, order, records

HOUR = 3600


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch):
    monkeypatch.setattr(stripe._http_client.HTTPClient, "_sleep_time_seconds", lambda self, n, response=None: 0.0)


@pytest.fixture
def world():
    from idem.sim.stripe.server import loopback_stripe
    from idem.sim.world import LocalWorld

    with LocalWorld(link_customers=False) as w, loopback_stripe(w) as server:
        w.stripe = server
        yield w


def succeeded(world: Any) -> list[dict[str, Any]]:
    """The PaymentIntents in which money moved or is held (P1 counts them)."""
    return [i for i in _intents(world).values() if i["status"] in ("succeeded", "processing", "requires_capture")]


def refusal(code: str = "amount_too_small", message: str = "Amount must be at least $0.50 usd",
            payment_intent: dict[str, Any] | None = None) -> stripe.InvalidRequestError:
    """Stripe's 400 invalid_request_error, as stripe-python raises it (https://docs.stripe.com/api/errors)."""
    body: dict[str, Any] = {"type": "invalid_request_error", "code": code, "message": message, "param": "amount"}
    if payment_intent is not None:
        body["payment_intent"] = payment_intent
    return stripe.InvalidRequestError(message, "amount", code=code, http_status=400, json_body={"error": body})


class KeptRefusal:
    """The loopback provider behind Stripe's idempotency layer as https://docs.stripe.com/idempotency allows it
    to be for a 400 answered after execution began: the first request under a key is refused (400) and that
    answer is kept for the key, so the same request again is refused the same way and other parameters under it
    are an idempotency_error ("compares incoming parameters to those of the original request and errors if
    they're not the same"), until the key is 24 h old ("can remove keys ... after they're at least 24 hours old");
    then the request is executed as new."""

    def __init__(self, world: Any) -> None:
        self.inner, self.world = world.provider(), world
        self.kept: dict[str, tuple[float, tuple[Any, ...]]] = {}
        self.sent = 0

    def charge(self, **request: Any) -> Any:
        self.sent += 1
        key, now = request["idempotency_key"], self.world.clock.now()
        asked = (request["amount"], request["currency"], request.get("payment_method"), request["customer"])
        first = self.kept.get(key)
        if first is None or now - first[0] >= 24 * HOUR:
            if first is None:
                self.kept[key] = (now, asked)
                raise refusal()
            return self.inner.charge(**request)
        if first[1] != asked:
            raise stripe.IdempotencyError(
                "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                http_status=400, json_body={"error": {"type": "idempotency_error", "message": "other parameters"}})
        raise refusal()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# == a 400 from Stripe on the charge: nothing moved (P1/P2/P4) ========================================================
def test_a_400_refusing_the_charge_is_parked_as_nothing_charged_and_the_fixed_upload_is_charged_once(world):
    """P1/P2/P4. Stripe: "400 Bad Request: The request was unacceptable, often due to missing a required parameter"
    (https://docs.stripe.com/api/errors); an `invalid_request_error` with no PaymentIntent in its body moved no money,
    and "If incoming parameters fail validation ... we don't save the idempotent result"
    (https://docs.stripe.com/idempotency). Alice's file names Bob's card, which Stripe refuses for Alice ("The
    payment method must be attached to the customer", https://docs.stripe.com/payments/save-and-reuse): parked,
    counted, saying nothing was charged, and (parked before any money moved) taken over by her fixed upload,
    which names no card: charged once, to her own saved card, not to Bob's. (Was parked as if a charge might
    exist, and every fixed upload refused as `still_needs_attention`, the record keeping Bob's card: fixed.)"""
    alice = link(world, "alice")
    bob = link(world, "bob")
    bobs_card = world.stripe.account.attach("test", "pm_card_mastercard", bob)["id"]
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged") as parked:
        charge(world, world.upload("alice/V-1.json", order("V-1", amount_cents=1250, payment_method=bobs_card)))
    assert parked.value.again is False and "400" in str(parked.value)
    (record,) = records(world)
    assert (record.status, record.unsent) == (keyed.Status.NEEDS_ATTENTION, True) and succeeded(world) == []
    result = charge(world, world.upload("alice/V-1.json", order("V-1", amount_cents=1250)))
    assert result["status"] == "charged"
    (intent,) = succeeded(world)
    assert (intent["customer"], intent["amount"]) == (alice, 1250) and intent["payment_method"] != bobs_card
    assert records(world)[0].status is keyed.Status.DONE


def test_a_400_stripe_keeps_for_the_key_parks_the_fix_until_the_key_is_24_hours_old_then_charges_it_once(world):
    """P1/P2/P4. If Stripe kept the 400 for the key (it "sav[es] the resulting status code and body of the first
    request ... regardless of whether it succeeds or fails", https://docs.stripe.com/idempotency), the fix sent
    under the order's key inside 24 h is other parameters: an `idempotency_error`. Every answer under the key was a
    refusal, so still nothing moved: the fix is parked saying so and naming when to upload it again (the key's
    first attempt plus 24 h), never charged under a new key; uploaded after that, it is searched for (the key's
    age rule), then charged once."""
    link(world, "alice")
    provider = KeptRefusal(world)
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, world.upload("alice/S-1.json", order("S-1", amount_cents=60)), provider=provider)
    first_attempt = records(world)[0].first_attempt_at
    world.clock.advance(2 * HOUR)
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged") as refused:
        charge(world, world.upload("alice/S-1.json", order("S-1", amount_cents=75)), provider=provider)
    assert keyed.utc(first_attempt + 24 * HOUR) in str(refused.value) and refused.value.again is True
    assert records(world)[0].unsent is True and succeeded(world) == []
    world.clock.advance(23 * HOUR)
    prune_idempotency_keys(world.stripe.account)
    assert charge(world, world.upload("alice/S-1.json", order("S-1", amount_cents=75)),
                  provider=provider)["status"] == "charged"
    assert [i["amount"] for i in succeeded(world)] == [75] and provider.sent == 3


def test_a_400_whose_body_carries_a_payment_intent_is_parked_as_maybe_charged_never_taken_over(world):
    """P1. Stripe's error body may carry "payment_intent: The PaymentIntent object for errors returned on a request
    involving a PaymentIntent" (https://docs.stripe.com/api/errors): then an object was made under the key, and the
    handler does not judge it. The order stays parked as sent (`idem settle` finds it); a re-upload is answered
    from the park (`still_needs_attention`), never sent again."""
    link(world, "alice")

    class Refusing:
        def __init__(self) -> None:
            self.inner, self.sent = world.provider(), 0

        def charge(self, **request: Any) -> Any:
            self.sent += 1
            raise refusal("payment_intent_unexpected_state", "unexpected state",
                          payment_intent={"id": "pi_x", "object": "payment_intent", "status": "requires_capture"})

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    provider = Refusing()
    obj = world.upload("alice/Y-1.json", order("Y-1", amount_cents=1250))
    with pytest.raises(keyed.NeedsAttention, match="idem settle") as parked:
        charge(world, obj, provider=provider)
    assert "nothing was charged" not in str(parked.value) and records(world)[0].unsent is not True
    with pytest.raises(keyed.NeedsAttention) as again:
        charge(world, obj, provider=provider)
    assert again.value.again is True and provider.sent == 1


def test_an_idempotency_error_on_a_fresh_claim_is_never_taken_for_nothing_charged(world):
    """P1. An `idempotency_error` says the key holds another request's answer
    (https://docs.stripe.com/idempotency), and only a record's own history tells that answer was a refusal; an
    order whose record is new (a person deleted the old one) may have been charged under its key: parked as
    maybe charged, never taken over by a later upload (which could charge again once Stripe forgets the key)."""
    link(world, "alice")

    class Conflicting:
        def __init__(self) -> None:
            self.inner = world.provider()

        def charge(self, **request: Any) -> Any:
            raise stripe.IdempotencyError("other parameters", http_status=400,
                                          json_body={"error": {"type": "idempotency_error", "message": "other"}})

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    with pytest.raises(keyed.NeedsAttention) as parked:
        charge(world, world.upload("alice/Z-1.json", order("Z-1", amount_cents=1250)), provider=Conflicting())
    assert "nothing was charged" not in str(parked.value) and records(world)[0].unsent is not True
    with pytest.raises(keyed.NeedsAttention) as again:
        charge(world, world.upload("alice/Z-1.json", order("Z-1", amount_cents=1250)))
    assert again.value.again is True and succeeded(world) == []


# == who pays, as Stripe holds it now (P2) ============================================================================
def test_a_linked_customer_deleted_at_stripe_is_parked_unsent_saying_so_and_charged_once_after_a_relink(world):
    """P2/P4. A deleted customer is still answered by retrieve, as `{"id": ..., "object": "customer", "deleted":
    true}` (Stripe's DeletedCustomer: "deleted: Always true for a deleted object", from Stripe's OpenAPI spec as the
    SDKs generate it, e.g. https://hexdocs.pm/stripity_stripe/Stripe.DeletedCustomer.html;
    https://docs.stripe.com/api/customers/delete: "Permanently deletes a customer"). It has no saved method and
    cannot get one: the order is parked, nothing charged, the reason naming the deletion (not "save one"), and
    once the account is linked to a live customer the order's next upload is charged once, to that customer."""
    link(world, "alice", customer_id="cus_gone")
    world.stripe.account.modes["test"].customers["cus_gone"] = {"id": "cus_gone", "object": "customer",
                                                                "deleted": True}
    obj = world.upload("alice/E-1.json", order("E-1", amount_cents=1250))
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged") as parked:
        charge(world, obj)
    assert "deleted" in str(parked.value) and records(world)[0].unsent is True and _intents(world) == {}
    fresh = link(world, "alice", customer_id="cus_alice2")
    assert charge(world, obj)["status"] == "charged"
    assert [i["customer"] for i in succeeded(world)] == [fresh]


def test_a_link_to_a_live_mode_customer_under_a_test_key_is_parked_naming_the_mode_never_charged(world):
    """P2. "Test mode and live mode objects are separate" (https://docs.stripe.com/keys#test-live-modes): a test key
    asking for a live-mode customer is answered resource_missing, "a similar object exists in live mode, but a test
    mode key was used to make this request" (https://docs.stripe.com/error-codes/resource-missing). Parked before
    any charge, the reason carrying Stripe's words so that the operator sees the mode mix-up."""
    from idem.core import customers
    from idem.sim.stripe.server import seed_customer

    live, _ = seed_customer(world.stripe, mode="live", payment_method="card", customer_id="cus_live")
    customers.link(world.dynamodb, world.ledger_table, "alice", live, reason="T-7", caller="arn:aws:iam::1:user/o",
                   now=world.clock.now())
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged") as parked:
        charge(world, world.upload("alice/M-1.json", order("M-1", amount_cents=1250)))
    assert "live mode" in str(parked.value) and records(world)[0].unsent is True
    assert _intents(world) == {} and world.stripe.account.intents("live") == []


def test_a_400_after_an_attempt_whose_answer_was_lost_is_parked_as_maybe_charged(world):
    """P1. A 400 says this request moved nothing, not that the key's earlier request did: the first attempt's charge
    went through and its answer was lost (the record released as sent), and its retry meets a 400 (Stripe refuses
    a request that fails validation before it reaches the key's saved answer: "If incoming parameters fail
    validation ... we don't save the idempotent result", https://docs.stripe.com/idempotency). The order is parked as
    maybe charged (`idem settle`), never "nothing was charged", and never taken over by an upload."""
    link(world, "alice")
    obj = world.upload("alice/L-1.json", order("L-1", amount_cents=1250))
    world.stripe.inject("drop_after")
    with pytest.raises(Exception) as lost:
        charge(world, obj)
    assert not isinstance(lost.value, keyed.NeedsAttention) and records(world)[0].unsent is False
    world.stripe.inject("invalid_request")
    with pytest.raises(keyed.NeedsAttention, match="idem settle") as parked:
        charge(world, obj)
    assert "nothing was charged" not in str(parked.value) and records(world)[0].unsent is not True
    with pytest.raises(keyed.NeedsAttention) as again:
        charge(world, world.upload("alice/L-1.json", order("L-1", amount_cents=1250)))
    assert again.value.again is True and len(succeeded(world)) == 1


def test_an_order_parked_before_any_send_is_charged_with_the_card_its_fixed_upload_names(world):
    """P1/P2. A payment method is kept through retries because Stripe compares a key's parameters
    (https://docs.stripe.com/idempotency); an order parked before anything was sent under its key has no such
    parameters yet. Alice's order naming card A is parked (her account not linked yet); her fixed upload names
    card B: B is charged, once. (The takeover kept card A: fixed with the 400 takeover above.)"""
    from idem.core import customers
    from idem.sim.stripe.server import seed_customer

    alice, card_a = seed_customer(world.stripe, customer_id="cus_alice")
    card_b = world.stripe.account.attach("test", "pm_card_mastercard", alice)["id"]
    with pytest.raises(keyed.NeedsAttention, match="no linked customer"):
        charge(world, world.upload("alice/C-1.json", order("C-1", amount_cents=1250, payment_method=card_a)))
    customers.link(world.dynamodb, world.ledger_table, "alice", alice, reason="T-8", caller="arn:aws:iam::1:user/o",
                   now=world.clock.now())
    assert charge(world, world.upload("alice/C-1.json", order("C-1", amount_cents=1250, payment_method=card_b)))[
        "status"] == "charged"
    assert [i["payment_method"] for i in succeeded(world)] == [card_b]


# == a key without the permission to charge (P2, "answers by meaning") ================================================
def test_a_403_for_a_restricted_key_without_write_access_is_retried_as_a_key_problem_never_parked(world):
    """P2/P4. "403 Forbidden: The API key doesn't have permissions to perform the request"
    (https://docs.stripe.com/api/errors); restricted keys carry per-resource permissions
    (https://docs.stripe.com/keys#limit-access). The key is refused before any endpoint runs ("We save results only
    after the execution of an endpoint begins", https://docs.stripe.com/idempotency): like a 401 it is the key's problem, not the
    order's, so the invocation fails for a retry that reads the secret again (counted `auth_failed`), the record is
    released, and once the key may write PaymentIntents the order is charged once. (Was parked as maybe charged,
    for `idem settle` by hand, every order of the outage never taken over: fixed.)"""
    from idem.core.handlers.keyed_stripe import StripeProvider

    link(world, "alice")
    world.stripe.restrict("rk_test_function", {"customers:read", "payment_intents:read"})
    provider = StripeProvider.from_secret("rk_test_function", world.stripe.url)
    obj = world.upload("alice/K-1.json", order("K-1", amount_cents=1250))
    with pytest.raises(keyed.ProviderAuthFailed, match="403|permission"):
        charge(world, obj, provider=provider)
    assert records(world)[0].status is keyed.Status.IN_PROGRESS and _intents(world) == {}
    world.stripe.restrict("rk_test_function", {"customers:read", "payment_intents:write"})
    assert charge(world, obj, provider=provider)["status"] == "charged"
    assert len(succeeded(world)) == 1
