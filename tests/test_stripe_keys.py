"""What Stripe does to keys over time, on the loopback Stripe (idem.sim.stripe.keys): an
idempotency key pruned once 24 h old charges anew (both layers forget it), a younger one is
kept; an expired API key is answered 401 api_key_expired, while a new key works; a read's 500
is answered and saves nothing."""
from __future__ import annotations

import pytest
import stripe

from idem.sim.stripe.keys import DAY, expire_api_key, prune_idempotency_keys
from idem.sim.stripe.server import NoRealSleep, loopback_stripe, seed_customer
from idem.sim.world import LocalWorld


@pytest.fixture(params=[True, False], ids=["memory-store", "table-store"])
def world(request):
    with LocalWorld(provider_in_memory=request.param) as w:
        yield w


@pytest.fixture
def server(world):
    with loopback_stripe(world) as s:
        s.provider.retention_seconds = None  # keys kept until pruned by hand
        yield s


def sdk(server, key="sk_test_loopback"):
    return stripe.StripeClient(key, base_addresses={"api": server.url}, max_network_retries=0,
                               http_client=NoRealSleep(timeout=(2.0, 8.0)))


def charge(client, customer, method, key):
    params = {"amount": 1250, "currency": "usd", "customer": customer, "payment_method": method,
              "off_session": True, "confirm": True}
    return client.v1.payment_intents.create(params=params, options={"idempotency_key": key})


def test_a_key_pruned_at_24_hours_charges_anew_and_a_younger_one_replays(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    first = charge(client, customer, method, "order-1")
    world.clock.advance(DAY - 1)
    young = charge(client, customer, method, "order-2")
    assert prune_idempotency_keys(server.account) == 0  # nothing is 24 h old yet
    assert charge(client, customer, method, "order-1").id == first.id  # replayed
    world.clock.advance(1)
    assert prune_idempotency_keys(server.account) == 1  # order-1's key, now 24 h old
    again = charge(client, customer, method, "order-1")
    assert again.id != first.id  # a new request: a second charge
    assert charge(client, customer, method, "order-2").id == young.id  # still kept
    assert len([i for i in server.account.intents() if i["status"] == "succeeded"]) == 3


def test_keys_are_never_pruned_younger_than_24_hours(server):
    with pytest.raises(ValueError, match="at least 24 h"):
        prune_idempotency_keys(server.account, DAY - 1)


def test_an_expired_api_key_is_answered_401_and_a_new_key_works(server):
    customer, method = seed_customer(server)
    expire_api_key(server.account, "sk_test_old")
    with pytest.raises(stripe.AuthenticationError) as refused:
        charge(sdk(server, "sk_test_old"), customer, method, "order-1")
    assert refused.value.http_status == 401 and refused.value.error.code == "api_key_expired"
    assert "sk_test_old" not in str(refused.value)  # the key is not echoed whole
    assert not server.account.intents()  # nothing executed, nothing saved
    assert charge(sdk(server, "sk_test_new"), customer, method, "order-1").status == "succeeded"


def test_a_reads_500_is_answered_once_and_saves_nothing(server):
    customer, _ = seed_customer(server)
    server.inject("api_error", method="GET", path="/v1/customers")
    client = sdk(server)
    with pytest.raises(stripe.APIError) as failed:
        client.v1.customers.retrieve(customer)
    assert failed.value.http_status == 500
    assert client.v1.customers.retrieve(customer).id == customer  # the next read is answered
