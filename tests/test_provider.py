"""The payment provider stand-in: Stripe-style idempotency keys."""
from __future__ import annotations

import pytest

from idem.core.provider import IdempotencyKeyReused, ProviderError


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
