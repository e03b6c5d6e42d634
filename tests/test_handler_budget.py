"""Every call the handler to copy makes is bounded, and the slowest path of one upload fits in
the function's timeout: a hung DynamoDB call ends in seconds, not in botocore's 60 s + 60 s."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import boto3
import pytest
import yaml
from botocore.exceptions import ReadTimeoutError  # type: ignore[import-untyped, unused-ignore]

from idem.core import buffer
from idem.core.handlers import keyed, keyed_settings, keyed_stripe

ROOT = Path(__file__).resolve().parent.parent


def test_the_slowest_path_fits_in_the_stacks_timeout():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=Loader)
    timeout = template["Globals"]["Function"].get("Timeout") if "Globals" in template else None
    charge = template["Resources"]["ChargeFunction"]["Properties"]
    timeout = charge.get("Timeout", timeout)
    assert keyed_settings.SLOWEST_PATH_SECONDS < timeout == 60
    # every call the handler can make for one upload, the rarer paths' three included: 8 AWS calls
    # of at most 3.5 s and 3 provider calls of 4 s still end before the function does
    assert buffer.WORST_PATH_SECONDS == 8 * 3.5 + 3 * 4.0 == 40.0 < timeout
    assert int(charge["Environment"]["Variables"]["FUNCTION_TIMEOUT_SECONDS"]) == timeout


def test_one_stripe_call_keeps_within_its_share():
    connect, read = keyed_stripe.TIMEOUT_SECONDS
    retries = keyed_stripe.MAX_NETWORK_RETRIES
    worst = (retries + 1) * (connect + read) + sum(min(0.5 * 2 ** n, 2.0) for n in range(retries))
    assert worst <= keyed_settings.PROVIDER_CALL_SECONDS


def test_a_timeout_too_short_for_the_slowest_path_is_refused_at_cold_start():
    with pytest.raises(keyed.ConfigError, match="slowest path"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "FUNCTION_TIMEOUT_SECONDS": "20"})


class _Address(str):
    """The silent server's address, and the connections it holds (`held`)."""

    held: list[socket.socket]


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers: a hung call."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held, done = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = _Address(f"http://127.0.0.1:{listener.getsockname()[1]}")
    url.held = held
    yield url
    done.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_hung_dynamodb_call_is_bounded(silent_server):
    """botocore honours the handler's config: two attempts, each ended by the 0.75 s read timeout.
    The wall-clock bound is loose on purpose (a loaded CI host once took 7 s for the 2.4 s this
    takes idle); botocore's defaults would take 60 s for one attempt alone."""
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=silent_server,
                          aws_access_key_id="x", aws_secret_access_key="x", config=keyed_settings.aws_config())
    attempts = []
    client.meta.events.register("before-send.dynamodb.PutItem", lambda **kwargs: attempts.append(1))
    started = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        client.put_item(TableName="ledger", Item={"pk": {"S": "k"}})
    took = time.monotonic() - started
    assert len(attempts) == keyed_settings.AWS_MAX_ATTEMPTS == 2
    assert (client.meta.config.connect_timeout, client.meta.config.read_timeout) == (0.5, 0.75)
    assert took >= keyed_settings.AWS_MAX_ATTEMPTS * keyed_settings.AWS_READ_SECONDS, took
    assert took < 30, took  # botocore's defaults: 60 s per attempt


def test_a_hung_stripe_call_is_bounded(silent_server):
    """One attempt (no retry inside the SDK), ended by the 3 s read timeout, not the SDK's 80 s."""
    stripe = pytest.importorskip("stripe")
    provider = keyed_stripe.StripeProvider.from_secret("sk_test_x", api_base=silent_server)
    started = time.monotonic()
    with pytest.raises(stripe.APIConnectionError, match="Read timed out"):
        provider.charge(customer="a", amount=500, currency="usd", reference="r", idempotency_key="k")
    took = time.monotonic() - started
    assert keyed_stripe.TIMEOUT_SECONDS[1] <= took < 30, took
    assert len(silent_server.held) == 1  # one connection: the SDK did not send it again


def test_every_client_the_handler_builds_is_bounded(monkeypatch):
    built, real = [], boto3.client

    def client(name, **kwargs):
        built.append((name, kwargs.get("config")))
        return real(name, region_name="us-east-1", **kwargs)  # a real one: the handler registers a hook on it

    monkeypatch.setattr(keyed.boto3, "client", client)
    monkeypatch.setattr(keyed, "_charger", None)
    monkeypatch.setattr(keyed, "make_provider", lambda: object())
    monkeypatch.setenv("LEDGER_TABLE", "ledger")

    class Context:
        aws_request_id, function_name = "r", "f"

    assert keyed.lambda_handler({"Event": "s3:TestEvent"}, Context())["status"] == "test_event"
    assert {name for name, _ in built} == {"dynamodb", "s3"}
    for _, config in built:
        assert config.connect_timeout == keyed_settings.AWS_CONNECT_SECONDS
        assert config.read_timeout == keyed_settings.AWS_READ_SECONDS
        assert config.retries == {"mode": "standard", "total_max_attempts": keyed_settings.AWS_MAX_ATTEMPTS}


# -- the key's mode against the stage: refused at cold start, one log line, nothing charged ----------
@pytest.mark.parametrize("key, stage, refused", [
    ("sk_live_x", "demo", "a live Stripe key where STAGE is demo"),
    ("rk_live_x", "", "a live Stripe key where STAGE is unset"),
    ("sk_test_x", "prod", "a test Stripe key where STAGE is prod"),
    ("pk_live_x", "prod", "neither a live nor a test"),
    ("sk_live_x", "prod", None), ("rk_test_x", "dev", None),
])
def test_a_key_of_the_wrong_mode_for_the_stage_is_refused(capsys, key, stage, refused):
    if refused is None:
        keyed_stripe.check_key_mode(key, stage)
        return
    with pytest.raises(keyed.ConfigError, match=refused):
        keyed_stripe.check_key_mode(key, stage)
    lines = [line for line in capsys.readouterr().out.splitlines() if "refused to start" in line]
    assert len(lines) == 1 and key not in lines[0]
