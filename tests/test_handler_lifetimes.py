"""Lifetimes that cover the work itself: a claim must outlive its invocation, and a charge
whose claim was swept by DynamoDB's TTL is still booked, never ended in silence."""
from __future__ import annotations

import pytest

from idem.core.handlers import keyed
from idem.core.ledger import booked_totals
from idem.sim.world import LocalWorld


def test_a_ttl_shorter_than_the_timeout_is_refused_at_cold_start():
    # The settings: TTL 60 s, maximum event age 60 s, timeout 900 s (accepted before).
    with pytest.raises(keyed.ConfigError, match="shorter than the function's timeout"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "RECORD_TTL_SECONDS": "60", "MAX_EVENT_AGE_SECONDS": "60",
                                 "PROVIDER_KEY_RETENTION_SECONDS": "86400", "FUNCTION_TIMEOUT_SECONDS": "900"})
    ok = keyed.settings_from_env({"LEDGER_TABLE": "t", "RECORD_TTL_SECONDS": "960",
                                  "FUNCTION_TIMEOUT_SECONDS": "900"})
    assert ok.function_timeout_seconds == 900


class SlowProvider:
    """A provider call so slow that DynamoDB's TTL sweeps the claim while it runs."""

    def __init__(self, world, key):
        self.world, self.key, self.inner = world, key, world.provider()

    def charge(self, **request):
        charge = self.inner.charge(**request)
        self.world.clock.advance(900)
        self.world.dynamodb.delete_item(TableName=self.world.ledger_table, Key={"pk": {"S": self.key}})  # the sweep
        return charge


def test_a_charge_whose_claim_was_swept_is_still_booked():
    with LocalWorld() as world:
        upload = keyed.Upload.of(world.upload("alice/order.csv"))
        charger = keyed.KeyedCharger(world.dynamodb, SlowProvider(world, upload.idempotency_key),
                                     keyed.Settings(world.ledger_table, record_ttl_seconds=60, order_identity="upload",
                                                    price_per_upload_cents=500),
                                     now=world.clock.now)
        result = charger.charge_once(upload, 900_000)
        assert result["status"] == "charged"  # not "superseded": money taken, and booked
        assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (1, 500)
        record = world.ledger().get_record(upload.idempotency_key)
        assert record.status is keyed.Status.DONE and not record.expires_at


def test_a_swept_claim_retaken_by_another_invocation_is_lost_ownership_not_silence():
    with LocalWorld() as world:
        upload = keyed.Upload.of(world.upload("alice/order.csv"))

        class TakenOver(SlowProvider):
            def charge(self, **request):
                charge = super().charge(**request)
                other = keyed.KeyedLedger(self.world.dynamodb, self.world.ledger_table, now=self.world.clock.now)
                assert other.claim(self.key, "the-next-invocation", self.world.clock.now() + 30).won
                return charge

        charger = keyed.KeyedCharger(world.dynamodb, TakenOver(world, upload.idempotency_key),
                                     keyed.Settings(world.ledger_table, record_ttl_seconds=60, order_identity="upload",
                                                    price_per_upload_cents=500),
                                     now=world.clock.now)
        assert charger.charge_once(upload, 900_000)["status"] == "superseded"  # logged, counted lost_ownership
