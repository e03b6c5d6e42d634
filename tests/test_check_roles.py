"""A call the clean run never made, at a boundary whose name its clean run's call has (idem.sim.platform.call_roles):
the second round tells them apart by what they ask, a status word the handler's code writes included."""
from __future__ import annotations

import pytest
from check_cli import HANDLERS

from idem.explore.check import check_handler
from idem.explore.families import family_choice


@pytest.mark.parametrize("handler, holds", [("lambda_handler", False), ("raises_handler", True)])
def test_a_park_written_by_the_bookings_own_helper_is_failed_in_the_second_round(monkeypatch, handler, holds):
    """status_helper books a charge and parks an order with one UpdateExpression, `SET #s = :s, detail = :d`,
    at the same boundary (`UpdateItem #1`): only the value of `:s` tells "parked" from "done". Its park of an
    order whose file changed after its event (the family overwrite, in an unversioned bucket) swallows the
    park's failure and returns success; its twin `raises_handler` lets it raise. Before the status word was part
    of the call's role, the second round took the park for the clean run's booking, never failed it, and the
    handler held."""
    monkeypatch.setenv(family_choice.VARIABLE, "overwrite,second_fault")
    report = check_handler(f"{HANDLERS / 'status_helper.py'}:{handler}", retries=(0,), workers=1)
    assert report.holds is holds, report.explain()
    parks = [r for r in report.results if r.schedule.dimension == "second_fault"
             and "parked" in (r.schedule.fault.also.role or "")]
    assert parks, [r.schedule.label() for r in report.results]  # the park is failed, pinned to its own role
    # throttled, the park is lost (status_helper) or raises (its twin); its answer lost, botocore's resend of an
    # unconditional update parks it, and the upload fails visibly either way
    assert ("silent_loss" in {r.verdict for r in parks}) is not holds, report.tally()
    assert {r.verdict for r in parks} <= {"silent_loss", "failed_visibly"}, report.tally()
