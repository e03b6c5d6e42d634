"""Lifetimes that cover the work itself: keyed's records never expire, so no TTL setting can make
one vanish while its invocation charges; and a charge whose claim was deleted from under it (by hand,
or by a TTL a table's owner set on another attribute) is still booked, never ended in silence."""
from __future__ import annotations

import pytest

from idem.core.handlers import keyed
from idem.core.ledger import booked_totals
from idem.core.settings import Settings as TeachingSettings
from idem.sim.world import LocalWorld


def test_keyed_reads_no_record_ttl_since_its_records_never_expire():
    # The settings an earlier review found: TTL 60 s, maximum event age 60 s, timeout 900 s. keyed
    # refused them, saying DynamoDB's TTL could delete its claim; but no record of keyed's carries
    # expires_at (test below, docs/money_contract.md), so it starts, and reads no RECORD_TTL_SECONDS.
    settings = keyed.settings_from_env({"LEDGER_TABLE": "t", "RECORD_TTL_SECONDS": "60", "MAX_EVENT_AGE_SECONDS": "60",
                                        "PROVIDER_KEY_RETENTION_SECONDS": "86400", "FUNCTION_TIMEOUT_SECONDS": "900"})
    assert settings.function_timeout_seconds == 900 and not hasattr(settings, "record_ttl_seconds")
    # the lifetime that can run out is the provider's memory of a key: shorter than Lambda's retries, refused
    with pytest.raises(keyed.ConfigError, match="PROVIDER_KEY_RETENTION_SECONDS is 60 s, shorter than MAX_EVENT_AGE"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "MAX_EVENT_AGE_SECONDS": "3600",
                                 "PROVIDER_KEY_RETENTION_SECONDS": "60"})


def test_the_teaching_patterns_records_expire_so_their_ttl_must_outlast_lambdas_retries():
    with pytest.raises(keyed.ConfigError, match="RECORD_TTL_SECONDS is 60 s, shorter than MAX_EVENT_AGE_SECONDS"):
        TeachingSettings("robust", "ledger", "provider", record_ttl_seconds=60, max_event_age_seconds=3600)
    assert TeachingSettings("robust", "ledger", "provider", record_ttl_seconds=3600,
                            max_event_age_seconds=3600).record_ttl_seconds == 3600


class SlowProvider:
    """A provider call so slow that the claim is deleted from under it (a sweep) while it runs."""

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
                                     keyed.Settings(world.ledger_table, order_identity="upload",
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
                                     keyed.Settings(world.ledger_table, order_identity="upload",
                                                    price_per_upload_cents=500),
                                     now=world.clock.now)
        assert charger.charge_once(upload, 900_000)["status"] == "superseded"  # logged, counted lost_ownership
