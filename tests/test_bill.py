"""Each pattern's DynamoDB bill per upload, metered on its real requests (idem.cost.bill)."""
from __future__ import annotations

import pytest

from idem.cost import bill

# handler -> case -> (calls, write units, read units). Every item here is under 1 KB, so a
# write is 1 unit, a transactional write 2 per item, a strongly consistent read 1 unit:
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
# ("DynamoDB rounds the item size up to the next 1 KB"; a failed conditional write still bills).
EXPECTED = {
    "naive": {"first": (1, 1, 0), "duplicate": (1, 1, 0), "retry": (1, 1, 0)},
    "claim_first": {"first": (2, 2, 0), "duplicate": (1, 1, 0), "retry": (2, 2, 0)},
    # get (1 read), put in_progress, the entry, done
    "robust": {"first": (4, 3, 1), "duplicate": (1, 0, 1), "retry": (5, 3, 2)},
    # the claim (1), then the commit: one owner-fenced put that turns the claim into the ledger
    # line (1); the line carries `account` and `booked_day`, so it enters both sparse indexes,
    # by_account (1) and the reconciliation's by_day (1): an item put into a global secondary
    # index costs one write there, sized on the index entry ("Larger index entries require
    # additional write capacity units"), and a write that needs no index update costs the
    # index nothing (the claim, the release, a failed put): idem/cost/capacity.py applies
    # https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes
    # Before issue 13 the commit was a transaction of three items, each billed twice: 7 units.
    # The duplicate's failed put still bills 1 (and writes no index). On the retry case the
    # caught error first releases the lease (one owner-fenced update, no index key: 1), then
    # the retry claims (1) and commits (1 + 2 index entries). Each attempt that claims reads who
    # pays, the account's customer mapping (a strongly consistent GetItem of an item under 4 KB:
    # 1 read unit). The retry's claim meets the released record (a failed put: 1) and takes it
    # over, keeping its first attempt (a fenced put: 1).
    "keyed": {"first": (3, 4, 1), "duplicate": (1, 1, 0), "retry": (7, 7, 2)},
    # Powertools' put and update of its record, and the ledger entry (in no index)
    "powertools": {"first": (3, 3, 0), "duplicate": (1, 1, 0), "retry": (5, 5, 0)},
}
#: keyed -> case -> (index write units, S3 GETs): keyed reads the order file (GetObject, by its
#: version) in every attempt before it claims, the duplicate too: the order_id names the key.
KEYED_INDEX_AND_GETS = {"first": (2, 1), "duplicate": (0, 1), "retry": (2, 2)}


@pytest.mark.parametrize("handler", list(EXPECTED))
def test_request_units_per_upload_are_pinned(handler):
    for case, (calls, wru, rru) in EXPECTED[handler].items():
        got = bill.measure(handler, case)
        assert (got.calls, got.wru, got.rru) == (calls, wru, rru), (handler, case)


def test_keyed_s_index_writes_and_order_reads_are_pinned():
    for case, (index_wru, gets) in KEYED_INDEX_AND_GETS.items():
        got = bill.measure("keyed", case)
        assert (got.index_wru, got.s3_gets) == (index_wru, gets), case
    for handler in ("naive", "claim_first", "robust", "powertools"):  # they read no order file
        assert (bill.measure(handler, "first").index_wru, bill.measure(handler, "first").s3_gets) == (0, 0)


def test_dollars_follow_the_units_at_the_named_price():
    keyed = bill.measure("keyed", "first")
    # us-east-1, $0.625 per million WRU, $0.125 per million RRU (the customer mapping's read)
    assert keyed.dollars_per_million == pytest.approx(4 * 0.625 + 0.125)
    # the order file's GET is S3's bill: $0.0004 per 1,000 GET requests (idem/deploy/prices.py)
    assert keyed.s3_dollars_per_million == pytest.approx(0.40)


def test_the_stacks_cost_assumes_keyeds_measured_write_units():
    """idem/deploy/prices.py's cost of a million uploads (README.md states it) counts the write
    and read units keyed's first delivery is measured to bill."""
    from idem.deploy.prices import Usage

    assert Usage().wru_per_upload == bill.measure("keyed", "first").wru
    # and the read unit of its customer mapping's strongly consistent GetItem (who pays)
    assert Usage().rru_per_upload == bill.measure("keyed", "first").rru == 1.0


def test_keyed_writes_the_table_no_more_than_powertools_and_a_duplicate_one_failed_write():
    """keyed's claim and line are 2 table writes against Powertools' 3 (its record's put and
    update, and the application's ledger entry). keyed's 2 more are its line's index entries,
    which Powertools' entry lacks: one account's totals by Query, and the reconciliation's day."""
    keyed, powertools = bill.measure("keyed", "first"), bill.measure("powertools", "first")
    assert keyed.wru - keyed.index_wru <= powertools.wru - powertools.index_wru
    assert keyed.index_wru == 2 and powertools.index_wru == 0
    assert bill.measure("keyed", "duplicate").wru == 1


def test_an_unknown_case_is_refused():
    with pytest.raises(ValueError, match="choose one of first, duplicate, retry"):
        bill.measure("keyed", "later")


def test_a_bigger_item_costs_more():
    """With ORDER_IDENTITY=object-name the record keeps the object's name (its `source`): a name
    of 1,000 bytes makes it pass 1 KB, so the claim bills 2 units and the commit 2 (the larger of
    the item before and after, rounded up to the next KB); the by_account entry holds no name and
    stays at 1, the by_day entry projects `source` and passes 1 KB too: 2. A duplicate's failed
    put bills the item it would have replaced: 2. With the default order-id the record keeps the
    order's id as its `source`, and the first upload's name once, in the charge's metadata (every
    attempt of the order sends the same, docs/money_contract.md): a name of 1,000 bytes takes the
    claim and the commit past 1 KB too, 6 units where a short name costs 4."""
    long_key = "alice/" + "x" * 994 + ".csv"
    big = bill.measure("keyed", "first", key=long_key, ORDER_IDENTITY="object-name")
    assert (big.wru, big.index_wru) == (7, 3)
    assert bill.measure("keyed", "duplicate", key=long_key, ORDER_IDENTITY="object-name").wru == 2
    assert bill.measure("keyed", "first").wru == 4 and bill.measure("keyed", "first", key=long_key).wru == 6
