"""The payment provider stand-in: Stripe-style idempotency keys, kept in either store.

Every rule is run twice: over the provider's DynamoDB table (the demo stack's, the default) and
over a local world's memory (what `idem check` uses). One implementation of the rules, two stores:
the answers must be the same.
"""
from __future__ import annotations

import pytest

from idem.core.provider import IdempotencyKeyReused, MemoryStore, ProviderError, TableStore
from idem.sim.world import LocalWorld


@pytest.fixture(params=["table", "memory"])
def world(request):
    with LocalWorld(prefix="test", provider_in_memory=request.param == "memory") as w:
        yield w


def test_the_world_hands_out_the_store_it_was_made_with(world):
    store = world.provider().store
    assert isinstance(store, MemoryStore if world.provider_store else TableStore)
    if world.provider_store:  # one memory per world, whoever asks for a provider
        assert world.provider().store is store is world.provider_store


def test_no_key_means_a_new_charge_every_time(world):
    provider = world.provider()
    first = provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k")
    second = provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k")
    assert first.id != second.id
    assert len(provider.charges()) == 2


def test_same_key_replays_the_first_charge(world):
    provider = world.provider()
    first = provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k", idempotency_key="charge#1")
    again = provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k", idempotency_key="charge#1")
    assert again.replayed and again.id == first.id and not first.replayed
    assert len(provider.charges()) == 1


def test_same_key_with_other_parameters_is_an_error(world):
    provider = world.provider()
    provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k", idempotency_key="charge#1")
    with pytest.raises(IdempotencyKeyReused, match="other parameters"):
        provider.charge(customer="alice", amount=900, currency="usd", reference="s3://b/k", idempotency_key="charge#1")
    assert len(provider.charges()) == 1


def test_charges_filter_by_reference(world):
    provider = world.provider()
    provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/one")
    provider.charge(customer="bob", amount=500, currency="usd", reference="s3://b/two")
    assert [c.customer for c in provider.charges(reference="s3://b/two")] == ["bob"]


def test_a_non_positive_amount_is_refused(world):
    with pytest.raises(ProviderError):
        world.provider().charge(customer="alice", amount=0, currency="usd", reference="s3://b/k")


# -- Stripe's rules (API v1): saved answers, conflicts, pruning, declines --------------------------
from idem.core.errors import CardDeclined, KeyInFlight, ProviderFailed, ProviderUnavailable  # noqa: E402
from idem.core.provider import DAY  # noqa: E402

ORDER = dict(customer="alice", amount=500, currency="usd", reference="s3://b/k")


def test_a_saved_500_is_replayed_as_the_same_500(world):
    provider = world.provider()
    with pytest.raises(ProviderFailed) as first:
        provider.charge(**ORDER, idempotency_key="k", outcome="provider_500")
    with pytest.raises(ProviderFailed) as again:
        provider.charge(**ORDER, idempotency_key="k")  # the fault is gone; the answer is saved
    assert first.value.http_status == again.value.http_status == 500
    assert again.value.replayed and not first.value.replayed
    assert len(provider.charges()) == 1  # it executed once: money moved, the caller never heard


@pytest.mark.parametrize("outcome, error, status", [
    ("provider_down", ProviderUnavailable, 503),  # fails before executing
    ("provider_409", KeyInFlight, 409),  # the key is in flight elsewhere
])
def test_an_answer_before_execution_saves_nothing(world, outcome, error, status):
    provider = world.provider()
    with pytest.raises(error) as answered:
        provider.charge(**ORDER, idempotency_key="k", outcome=outcome)
    assert answered.value.http_status == status
    assert not provider.charge(**ORDER, idempotency_key="k").replayed  # the retry executes
    assert len(provider.charges()) == 1


def test_a_decline_is_final_and_saved_for_the_key(world):
    provider = world.provider()
    with pytest.raises(CardDeclined) as declined:
        provider.charge(**ORDER, idempotency_key="k", outcome="declined")
    with pytest.raises(CardDeclined) as again:
        provider.charge(**ORDER, idempotency_key="k")
    assert declined.value.http_status == 402 and again.value.replayed
    assert provider.charges() == []


def test_a_key_is_pruned_after_the_retention_and_then_charges_again(world):
    provider = world.provider()
    first = provider.charge(**ORDER, idempotency_key="k")
    world.clock.advance(DAY - 1)
    assert provider.charge(**ORDER, idempotency_key="k").id == first.id
    world.clock.advance(2)  # 24 h and a second: the key is gone, the same key is a new request
    second = provider.charge(**ORDER, idempotency_key="k")
    assert second.id != first.id and not second.replayed
    assert [c.id for c in provider.find_charges("s3://b/k")] == [first.id, second.id]


def test_retention_is_a_setting_of_the_stand_in(world):
    from idem.core.provider import Provider

    keeps = Provider(world.dynamodb, world.provider_table, world.clock, retention_seconds=None,
                     store=world.provider_store)
    keeps.charge(**ORDER, idempotency_key="k")
    world.clock.advance(30 * DAY)
    assert keeps.charge(**ORDER, idempotency_key="k").replayed
    assert world.provider().retention_seconds == DAY  # the default is Stripe's 24 h, not never


def test_a_key_longer_than_stripes_255_characters_is_refused_and_saves_nothing(world):
    # "Idempotency keys are up to 255 characters long." https://docs.stripe.com/idempotency
    provider = world.provider()
    with pytest.raises(ProviderError, match="at most 255 characters") as refused:
        provider.charge(customer="alice", amount=500, currency="usd", reference="r", idempotency_key="k" * 256)
    assert refused.value.http_status == 400 and provider.charges() == []
    charge = provider.charge(customer="alice", amount=500, currency="usd", reference="r", idempotency_key="k" * 255)
    assert provider.charges() == [charge]


# -- the two stores, side by side ----------------------------------------------------------------
def _story(provider, clock):
    """Every rule once, in one story: what each request answered, and the charges kept."""
    answers = []

    def ask(**request):
        try:
            made = provider.charge(**{**ORDER, **request})
            answers.append((made.id, made.replayed, made.idempotency_key))
        except ProviderError as refused:
            answers.append((type(refused).__name__, refused.http_status, refused.replayed))

    ask(idempotency_key="a")
    ask(idempotency_key="a")  # replay
    ask(idempotency_key="a", amount=900)  # other parameters: 400
    ask(idempotency_key="b", outcome="provider_500")  # executes, saves the 500
    ask(idempotency_key="b")  # the saved 500, replayed
    ask(idempotency_key="c", outcome="provider_409")  # nothing saved
    ask(idempotency_key="c")  # so this executes
    ask(idempotency_key="d", outcome="declined")
    ask(idempotency_key="d")  # the decline, replayed
    ask(idempotency_key="e", outcome="provider_down")
    ask()  # no key: a new charge
    clock.advance(DAY + 1)
    ask(idempotency_key="a")  # pruned: charges again
    return answers, [(c.id, c.idempotency_key, c.amount) for c in provider.charges()]


def test_memory_and_table_answer_every_rule_alike():
    stories = []
    for in_memory in (False, True):
        with LocalWorld(prefix="test", provider_in_memory=in_memory) as w:
            stories.append(_story(w.provider(), w.clock))
    assert stories[0] == stories[1]
    answers, charges = stories[1]
    assert ("IdempotencyKeyReused", 400, False) in answers and ("ProviderFailed", 500, True) in answers
    assert len(charges) == 5  # a, b (the saved 500), c, no key, a again after pruning


def test_a_memory_store_charges_nothing_in_dynamodb_and_outlives_the_function():
    with LocalWorld(prefix="test", provider_in_memory=True) as w:
        calls = []
        original = w.dynamodb._make_api_call

        def counting(operation, params):
            calls.append(operation)
            return original(operation, params)

        w.dynamodb._make_api_call = counting
        try:
            w.provider().charge(**ORDER, idempotency_key="k")
            again = w.provider().charge(**ORDER, idempotency_key="k")  # a new client, as after a crash
        finally:
            del w.dynamodb._make_api_call
        assert calls == [] and again.replayed
        assert w.table_items(w.provider_table) == []  # the table is there, and empty
        assert len(w.provider().charges()) == 1


def test_a_charge_whose_payment_failed_later_is_no_charge(world):
    """A bank debit answered `processing`, then failed: no money moved; its key still replays."""
    provider = world.provider()
    first = provider.charge(**ORDER, idempotency_key="k")
    kept = provider.charge(**{**ORDER, "reference": "s3://b/other"}, idempotency_key="k2")
    provider.fail(first.id)
    assert provider.charges() == [kept]
    assert provider.charge(**ORDER, idempotency_key="k").id == first.id  # replayed, not charged again
    assert provider.charges() == [kept]
