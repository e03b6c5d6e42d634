"""Chapter 05's exercise: the check of a fix of robust's concurrent hole, and the entry point
that runs a handle function of the reader's own."""
from __future__ import annotations

from pathlib import Path

import pytest

from idem.core.errors import ConfigError
from idem.lessons.scribes.fix_check import check_fix, why
from idem.sim.runtime.handle_entry import load_handle

HEAD = '''from idem.core.handlers.common import charge_step, order_for, receipt
from idem.core.ledger import Status


def handle(obj, svc, context):
    order = order_for(obj, svc)
'''
WORK = '''    charge = charge_step(svc, order)
    svc.ledger.add_entry(order.account, order.amount_cents)
    svc.ledger.mark_done(order.key, receipt(charge))
    return receipt(charge)
'''
ROBUST = HEAD + '''    record = svc.ledger.get_record(order.key)
    if record and record.status is Status.DONE:
        return {"status": "duplicate"}
    if record is None and not svc.ledger.put_in_progress(order.key, order.source).won:
        return {"status": "duplicate"}
''' + WORK
STAND_DOWN = HEAD + '''    if not svc.ledger.put_in_progress(order.key, order.source).won:
        return {"status": "duplicate"}
''' + WORK
RAISE = HEAD + '''    if not svc.ledger.put_in_progress(order.key, order.source).won:
        record = svc.ledger.get_record(order.key)
        if record and record.status is Status.DONE:
            return {"status": "duplicate"}
        raise RuntimeError("another copy is at work")
'''
KEEPS_RECORD = RAISE + WORK
RIGHT = RAISE + '''    try:
        charge = charge_step(svc, order)
    except Exception:
        svc.ledger.client.delete_item(TableName=svc.ledger.table, Key={"pk": {"S": order.key}})
        raise
    svc.ledger.add_entry(order.account, order.amount_cents)
    svc.ledger.mark_done(order.key, receipt(charge))
    return receipt(charge)
'''
STAND_DOWN_AND_DELETE = HEAD + '''    if not svc.ledger.put_in_progress(order.key, order.source).won:
        return {"status": "duplicate"}
    try:
        charge = charge_step(svc, order)
    except Exception:
        svc.ledger.client.delete_item(TableName=svc.ledger.table, Key={"pk": {"S": order.key}})
        raise
    svc.ledger.add_entry(order.account, order.amount_cents)
    svc.ledger.mark_done(order.key, receipt(charge))
    return receipt(charge)
'''
NO_CHARGE = HEAD + '''    return {"status": "duplicate"}
'''


def write(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "my_robust.py"
    path.write_text(source)
    return path


def test_robust_unchanged_charges_twice_when_a_copy_starts_after_the_put(tmp_path):
    report = check_fix(write(tmp_path, ROBUST))
    assert not report.holds
    wrong = report.first_wrong()
    assert (wrong.kind, wrong.outcome.verdict) == ("copy", "double_charge")
    assert "after dynamodb:PutItem" in wrong.label and "what is left for the copy that loses it" in why(wrong)
    # the handler as the chapter gives it is the question: its check says what to do, not the fix
    assert report.unchanged and report.explain().startswith("No answer yet") and "must not" not in report.explain()
    from idem import views
    assert views.fix_frame(report) is None  # the unchanged handler's runs are not shown: the question's


def test_standing_down_on_a_lost_put_loses_the_retry_silently(tmp_path):
    report = check_fix(write(tmp_path, STAND_DOWN))
    assert all(r.ok for r in report.runs if r.kind == "copy")
    wrong = report.first_wrong()
    assert (wrong.kind, wrong.outcome.verdict) == ("down once", "silent_loss")
    assert "claim-first" in report.explain()


def test_keeping_the_record_of_a_failed_charge_strands_the_retry(tmp_path):
    wrong = check_fix(write(tmp_path, KEEPS_RECORD)).first_wrong()
    assert (wrong.kind, wrong.outcome.verdict) == ("down once", "failed_visibly")


def test_standing_down_loses_the_work_of_a_process_that_died(tmp_path):
    report = check_fix(write(tmp_path, STAND_DOWN_AND_DELETE))
    wrong = report.first_wrong()
    assert (wrong.kind, wrong.outcome.verdict) == ("dies", "silent_loss")
    assert "how can it end so that Lambda tries again" in report.explain()


def test_the_solution_holds_everywhere(tmp_path):
    report = check_fix(write(tmp_path, RIGHT))
    assert report.holds, report.explain()
    assert sum(r.kind == "copy" for r in report.runs) >= 4
    assert report.explain().startswith("Right")
    dies = report.runs[-1]
    assert (dies.kind, dies.outcome.verdict, dies.outcome.record) == ("dies", "failed_visibly", "in_progress")


def test_a_handler_that_never_charges_stops_at_the_clean_run(tmp_path):
    report = check_fix(write(tmp_path, NO_CHARGE))
    assert [r.kind for r in report.runs] == ["clean"] and "clean" not in report.explain().split(":")[0]
    assert "no fault" in report.explain()


def test_missing_files_and_functions_are_named(tmp_path):
    with pytest.raises(ConfigError, match="no file"):
        check_fix(tmp_path / "absent.py")
    path = write(tmp_path, "x = 1\n")
    with pytest.raises(ConfigError, match="defines no function handle"):
        load_handle(f"{path}:handle")
    assert load_handle(str(write(tmp_path, RIGHT))).__name__ == "handle"


@pytest.mark.parametrize("handler", ["ROBUST", "STAND_DOWN", "KEEPS_RECORD", "STAND_DOWN_AND_DELETE"])
def test_a_wrong_fix_gets_a_question_that_narrows_never_the_fix(tmp_path, handler):
    """Issue 43: a hint after a wrong answer narrows without stating the fix."""
    hint = why(check_fix(write(tmp_path, globals()[handler])).first_wrong())
    assert "?" in hint
    for fix in ("Delete the record", "delete the record", "must raise", "conditional put alone",
                "must not charge", "raise, not return", "then raise"):
        assert fix not in hint, (fix, hint)
