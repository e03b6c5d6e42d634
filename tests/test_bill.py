"""Each pattern's DynamoDB bill per upload, metered on its real requests (idem.cost.bill)."""
from __future__ import annotations

import pytest

from idem.cost import bill

# handler -> case -> (calls, write units, read units). Every item here is under 1 KB, so a
# write is 1 unit, a transactional write 2 per item, a strongly consistent read 1 unit.
EXPECTED = {
    "naive": {"first": (1, 1, 0), "duplicate": (1, 1, 0), "retry": (1, 1, 0)},
    "claim_first": {"first": (2, 2, 0), "duplicate": (1, 1, 0), "retry": (2, 2, 0)},
    # get (1 read), put in_progress, the entry, done
    "robust": {"first": (4, 3, 1), "duplicate": (1, 0, 1), "retry": (5, 3, 2)},
    # the claim (1), then the commit: one owner-fenced update that turns the claim into the
    # ledger line (1) and enters it into the sparse by_account index (1). Before issue 13 the
    # commit was a transaction of three items (record, booked-once entry, totals counter),
    # each billed twice: 7 units. The duplicate's failed put still bills 1; on the retry
    # case the caught error first releases the lease (one owner-fenced update), then the
    # retry claims (1) and commits (2)
    "keyed": {"first": (2, 3, 0), "duplicate": (1, 1, 0), "retry": (4, 5, 0)},
    # Powertools' put and update of its record, and the ledger entry
    "powertools": {"first": (3, 3, 0), "duplicate": (1, 1, 0), "retry": (5, 5, 0)},
}


@pytest.mark.parametrize("handler", list(EXPECTED))
def test_request_units_per_upload_are_pinned(handler):
    for case, (calls, wru, rru) in EXPECTED[handler].items():
        got = bill.measure(handler, case)
        assert (got.calls, got.wru, got.rru) == (calls, wru, rru), (handler, case)


def test_dollars_follow_the_units_at_the_named_price():
    keyed = bill.measure("keyed", "first")
    assert keyed.dollars_per_million == pytest.approx(3 * 0.625)  # us-east-1, $0.625 per million WRU


def test_keyed_first_delivery_costs_no_more_than_powertools_and_a_duplicate_one_failed_write():
    keyed, powertools = bill.measure("keyed", "first"), bill.measure("powertools", "first")
    assert keyed.wru <= powertools.wru  # powertools' figure includes the application's ledger write
    assert bill.measure("keyed", "duplicate").wru == 1


def test_an_unknown_case_is_refused():
    with pytest.raises(ValueError, match="choose one of first, duplicate, retry"):
        bill.measure("keyed", "later")


def test_a_bigger_item_costs_more():
    """An object name of 1,000 bytes makes keyed's record (which keeps what the key was made
    from) pass 1 KB: the claim bills 2 units and the commit 2 (the larger of the item before
    and after); the index entry holds no name and stays at 1."""
    long_key = "alice/" + "x" * 994 + ".csv"
    assert bill.measure("keyed", "first", key=long_key).wru == 5
    assert bill.measure("keyed", "duplicate", key=long_key).wru == 2
