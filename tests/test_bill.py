"""Each pattern's DynamoDB bill per upload, metered on its real requests (idem.local.bill)."""
from __future__ import annotations

import pytest

from idem.local import bill

# handler -> case -> (calls, write units, read units). Every item here is under 1 KB, so a
# write is 1 unit, a transactional write 2 per item, a strongly consistent read 1 unit.
EXPECTED = {
    "naive": {"first": (1, 1, 0), "duplicate": (1, 1, 0), "retry": (1, 1, 0)},
    "claim_first": {"first": (2, 2, 0), "duplicate": (1, 1, 0), "retry": (2, 2, 0)},
    # get (1 read), put in_progress, the entry, done
    "robust": {"first": (4, 3, 1), "duplicate": (1, 0, 1), "retry": (5, 3, 2)},
    # the claim (1), then a commit of three items in one transaction (3 x 2): today's price
    # of the owner fence and the booked-once entry; the duplicate's failed put still bills 1;
    # on the retry case the caught error first releases the lease (one owner-fenced update)
    "keyed": {"first": (2, 7, 0), "duplicate": (1, 1, 0), "retry": (4, 9, 0)},
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
    assert keyed.dollars_per_million == pytest.approx(7 * 0.625)  # us-east-1, $0.625 per million WRU


def test_an_unknown_case_is_refused():
    with pytest.raises(ValueError, match="choose one of first, duplicate, retry"):
        bill.measure("keyed", "later")
