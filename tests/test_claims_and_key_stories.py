"""Claims under pressure (chapter 02), upload stories through key recipes (03), and the alarm check (04)."""
from __future__ import annotations

import pytest

from idem.core import keys
from idem.core.events import newer_sequencer
from idem.sim import atomic
from idem.explore import scenarios as sc
from idem.explore.judge.verdicts import judge_run
from idem.sim.world import LocalWorld
from idem.lessons.scribes import alarms, claims, key_stories


@pytest.fixture()
def world():
    with LocalWorld(prefix="storytest") as w:
        yield w


# -- chapter 02 ---------------------------------------------------------------------------

@pytest.mark.concurrency
def test_conditional_put_on_the_key_gives_one_winner_every_round():
    report = claims.race_with_condition("attribute_not_exists(pk)", threads=6, rounds=5)
    assert report.winners_per_round == (1,) * 5


@pytest.mark.concurrency
def test_condition_on_an_attribute_nobody_writes_lets_every_racer_win():
    # pins the trap of chapter 02's exercise: the put is conditional in name only
    report = claims.race_with_condition("attribute_not_exists(id)", threads=6, rounds=5)
    assert report.winners_per_round == (6,) * 5


@pytest.mark.concurrency
def test_condition_that_never_holds_lets_nobody_win():
    assert claims.race_with_condition("attribute_exists(pk)", threads=4, rounds=3).winners_per_round == (0,) * 3


def test_malformed_condition_is_a_clear_error_not_a_hang():
    with pytest.raises(ValueError, match="refused the condition 'attribute_not_exists"):
        claims.race_with_condition("attribute_not_exists(pk) AND", threads=4, rounds=3)


def test_race_needs_two_threads():
    with pytest.raises(ValueError, match="at least 2 threads"):
        claims.race_with_condition("attribute_not_exists(pk)", threads=1)


@pytest.mark.concurrency
def test_moto_as_shipped_race_puts_the_lock_back():
    claims.moto_as_shipped_race(threads=3, rounds=2, window=0.0005)
    assert atomic.is_atomic()


def test_lost_put_returns_the_holder_and_no_transport_metadata(world):
    response = claims.lost_put(world, "charge#t", holder="first-invocation")
    assert response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert response["Item"]["owner"] == {"S": "first-invocation"}
    assert "ResponseMetadata" not in response


def test_claim_costs_one_call_for_a_put_and_two_for_read_then_put(world):
    rows = {row.approach: row for row in claims.claim_costs(world)}
    assert (rows["conditional put"].winner_calls, rows["conditional put"].duplicate_calls) == (1, 1)
    assert (rows["conditional put, ALL_OLD"].winner_calls,
            rows["conditional put, ALL_OLD"].duplicate_calls) == (1, 1)
    assert "owner=invocation-a" in rows["conditional put, ALL_OLD"].duplicate_learns
    assert (rows["read, then conditional put"].winner_calls,
            rows["read, then conditional put"].duplicate_calls) == (2, 1)


# -- chapter 03: upload stories -------------------------------------------------------------

def test_version_key_charges_a_retried_and_duplicated_upload_once():
    run = key_stories.run_story("retry and duplicate", "version")
    assert run.charges == 1 and not run.extra and not run.missed
    assert [r.key for r in run.rows] == ["k1", "k1", "k1"]
    assert [r.status for r in run.rows] == ["charged", "duplicate", "duplicate"]


def test_clock_key_charges_every_repeat_again():
    run = key_stories.run_story("retry and duplicate", "clock")
    assert run.charges == 3 and run.extra == 2
    assert [r.key for r in run.rows] == ["k1", "k2", "k3"]


def test_etag_only_key_skips_a_reupload_of_the_same_bytes():
    run = key_stories.run_story("same bytes again", "etag_only")
    assert (run.charges, run.missed) == (1, 1)
    assert run.rows[1].verdict == "upload not charged"


def test_version_key_skips_a_reupload_when_versioning_is_off():
    run = key_stories.run_story("same bytes, versioning off", "version")
    assert (run.charges, run.missed) == (1, 1)
    assert {r.version for r in run.rows} == {"null"}


def test_content_key_is_right_in_every_story():
    for title in key_stories.STORIES:
        run = key_stories.run_story(title, "content")
        assert run.charges == run.wanted and not run.extra and not run.missed, title


def test_story_ledger_entry_matches_the_provider():
    run = key_stories.run_story("out of order", "content")
    entry = next(item for item in run.items if item["pk"] == "account#alice")
    assert entry["charges"] == run.charges == 2
    assert sum(item.get("status") == "claimed" for item in run.items) == 2


def test_a_recipe_function_is_registered_only_for_the_run():
    before = dict(keys.RECIPES)
    run = key_stories.run_story("same bytes, versioning off", lambda o: f"{o.key}#{o.version_id}")
    assert run.recipe == "custom" and run.missed == 1
    assert keys.RECIPES == before


def test_bad_recipes_are_refused_clearly():
    with pytest.raises(ValueError, match="unknown key recipe 'nope'"):
        key_stories.run_story("out of order", "nope")
    with pytest.raises(TypeError, match="a recipe is a name or a function"):
        key_stories.run_story("out of order", 42)  # type: ignore[arg-type]


def test_run_grid_covers_every_recipe_and_story():
    runs = key_stories.run_grid(["version", "uuid"], ["retry and duplicate"])
    assert [(r.recipe, r.charges) for r in runs] == [("version", 1), ("uuid", 3)]


# -- chapter 03: sequencers, operations, names, sizes ---------------------------------------

def test_sequencer_orders_a_late_upload_and_its_repeat_alike(world):
    v1 = world.upload("dave/order.csv", key_stories.ORDER)
    v2 = world.upload("dave/order.csv", key_stories.OTHER_ORDER)
    orders = [r.order for r in key_stories.sequencer_order([v2, v1, v1])]
    assert orders == ["newest so far", "older than the newest", "older than the newest"]
    assert [r.order for r in key_stories.sequencer_order([v1, v2, v2])] == [
        "newest so far", "newest so far", "same as the newest"]


def test_unpadded_comparison_gets_a_shorter_later_sequencer_wrong():
    later, earlier = "0055AED6DCD90282", "0055AED6DCD90281E5"
    assert newer_sequencer(later, earlier)
    assert not key_stories.naive_newer(later, earlier)


def test_a_shared_key_skips_the_receipt_and_scoped_keys_do_not(world):
    shared = key_stories.charge_and_receipt(world, world.upload("bob/a.csv"), scoped=False)
    assert [r.claimed for r in shared] == [True, False]
    scoped = key_stories.charge_and_receipt(world, world.upload("bob/b.csv"), scoped=True)
    assert [r.claimed for r in scoped] == [True, True]
    assert len(world.provider().charges()) == 2


def test_key_from_the_raw_field_differs_and_names_no_object(world):
    name = key_stories.encoded_name(world, "alice/my file.csv")
    assert (name.raw_field, name.decoded) == ("alice/my+file.csv", "alice/my file.csv")
    assert name.key_from_raw != name.key_from_decoded
    assert name.lookup_raw.startswith("not found") and name.lookup_decoded.startswith("found")


def test_hashed_key_fits_stripes_255_characters_where_the_recipe_text_does_not(world):
    """Stripe: "Idempotency keys are up to 255 characters long." (docs.stripe.com/idempotency);
    S3: a name's UTF-8 encoding is at most 1,024 bytes."""
    assert key_stories.STRIPE_MAX_KEY_CHARS == 255
    obj = world.upload("alice/" + "é" * 509)
    rows = {r["what"]: r for r in key_stories.key_sizes(obj)}
    assert rows["object key"]["bytes"] == 1024
    assert rows["recipe text (version)"]["characters"] > 255 >= rows["idempotency key (hashed)"]["characters"]
    assert rows["limit: Stripe's idempotency key"]["characters"] == 255
    assert rows["limit: DynamoDB partition key"]["bytes"] == keys.MAX_PARTITION_KEY_BYTES == 2048


# -- chapter 04 -----------------------------------------------------------------------------

def _outcome(fault: str, times: str, charges: int, ledger: int, dlq: int, claimed: bool = True):
    verdict = judge_run(charges, charges == ledger and charges >= 1, dlq, "claimed")
    items = [{"pk": "charge#x", "status": "claimed"}] if claimed else []
    return sc.Outcome(sc.Scenario("claim_first", fault, times), charges, ledger, 2, dlq, "claimed",
                      charges == ledger and charges >= 1, 2, verdict, items=items)


CLAIM_FIRST_ROWS = [_outcome("none", "-", 1, 1, 0), _outcome("at_charge", "once", 0, 0, 0),
                    _outcome("after_charge", "once", 1, 0, 0), _outcome("after_commit", "once", 1, 1, 0)]


def test_a_failure_queue_alarm_misses_claim_firsts_silent_failures():
    problems = alarms.check_alarm(lambda o: o.dlq > 0, CLAIM_FIRST_ROWS)
    assert [p.split(":")[0] for p in problems] == [
        "stays quiet on claim_first at_charge/once", "stays quiet on claim_first after_charge/once"]


def test_an_alarm_comparing_claims_charges_and_entries_is_right():
    def alarm(o):
        claims = sum(i.get("status") == "claimed" for i in o.items)
        return o.dlq > 0 or o.charges != o.ledger or o.ledger < claims
    assert alarms.check_alarm(alarm, CLAIM_FIRST_ROWS) == []


def test_an_alarm_that_always_fires_is_told_so():
    problems = alarms.check_alarm(lambda o: True, CLAIM_FIRST_ROWS)
    assert problems and all(p.startswith("fires on") for p in problems)
