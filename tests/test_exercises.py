"""Every exercise starts empty, and its checker answers the empty state with a hint (never the
answer), accepts the right answers and explains the plausible wrong ones (issue 30).

Chapters 05 and 11 ask the reader to fix a given handler: their cell starts as the handler to
fix, which is the question, not an answer; their checkers have tests of their own
(tests/test_fix_check.py, tests/test_chapter11_solution.py)."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from idem.lessons.scribes import alarms, claims, leases
from idem.lessons.auditing import auditor
from idem.lessons.answers import all_unfilled, not_yet, unfilled
from idem.lessons.scribes.recipe_check import check_recipe
from idem.lessons.scribes.retries import check_charges_guess, check_retries, check_retry_prediction
from idem.views import local_aws, ship

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "notebooks" / "source"


def _source(prefix: str) -> str:
    (path,) = SOURCES.glob(f"{prefix}_*.py")
    return path.read_text(encoding="utf-8")


def _exercise(prefix: str) -> str:
    """The chapter's Try it section, up to its solution."""
    text = _source(prefix)
    solution = text.rindex("<details><summary>Solution")
    return text[text.rindex("## Try it", 0, solution):solution]


# -- the starting state -------------------------------------------------------------------------
#: Each exercise's cell as the reader finds it: the line that must start empty.
STARTS = {
    "00": "my_guess = None", "01": "my_charges = {0: None, 1: None, 2: None}", "02": "return None  # your answer here",
    "03": "return None  # your answer here", "04": "return None  # your answer here",
    "06": "my_timeout = None", "07": "return None  # your answer here",
    "08": '"put a 2.5 KB item": None', "09": '{"invocations": None, "ledger entries": None',
    "10": "my_receives = None", "12": '{"invoice": None, "refund": None, "balance": None, "chat": None}',
    "11": "twice_within_a_day = ...  # True or False", "13": "my_attempts = None",
}


@pytest.mark.parametrize("chapter", sorted(STARTS))
def test_each_exercise_starts_empty(chapter):
    assert STARTS[chapter] in _exercise(chapter)


@pytest.mark.parametrize("chapter", sorted(STARTS))
def test_no_exercise_states_its_answer_before_the_check(chapter):
    """No dict of reasons beside the question (04's WHY), no expected value in the code cells."""
    cells = _exercise(chapter)
    code = "\n".join(line for line in cells.splitlines() if not line.startswith("#"))
    assert "WHY = {" not in code and "why = {" not in code and "expected" not in code


def test_the_unfilled_rule():
    assert unfilled(None) and unfilled(...) and unfilled({"a": None, "b": ...})
    assert not unfilled(0) and not unfilled("") and not unfilled({"a": None, "b": 1}) and not unfilled({})
    assert all_unfilled([None, ...]) and not all_unfilled([]) and not all_unfilled([None, 2])
    assert not_yet("x", "y.") == "No answer yet: x. y."


# -- 00: how many charges ---------------------------------------------------------------------
def test_chapter_00s_guess():
    assert check_charges_guess(None).startswith("No answer yet") and "3" not in check_charges_guess(None)
    assert check_charges_guess(3).startswith("Right: 3 charges")
    assert "naive keeps no record" in check_charges_guess(1)  # the charge we want, not the one we get
    assert "close" in check_charges_guess(2)  # forgot the retry or the duplicate
    assert "too many" in check_charges_guess(4)
    for wrong in (0, 1, 2, 4):  # a hint narrows, never states: no count, no word of the retry
        said = check_charges_guess(wrong)
        assert "3" not in said and "retr" not in said and "three" not in said, said
    assert "not a number" in check_charges_guess("3")


# -- 01: the retry setting ----------------------------------------------------------------------
def test_chapter_01s_retries():
    empty = check_retries(None)
    assert empty.startswith("No answer yet") and "One charge" not in empty
    assert check_retries(0).startswith("One charge.")
    assert check_retries(1).startswith("With 1 retry the customer pays 2 times")
    assert check_retries(2).startswith("With 2 retries the customer pays 2 times")  # the retry succeeds
    assert "not a setting Lambda accepts" in check_retries(3)


def test_chapter_01s_prediction_for_each_retry_setting_with_a_duplicate():
    empty = check_retry_prediction({0: None, 1: None, 2: None})
    assert empty.startswith("No answer yet") and not re.search(r"\d", empty)
    right = check_retry_prediction({0: 2, 1: 4, 2: 6})
    assert right.count(": right") == 3 and "Even with retries off" in right
    wrong = check_retry_prediction({0: 1, 1: 2, 2: 3})  # forgot the second copy
    assert wrong.count("too few") == 3 and "Even with retries off" not in wrong and "2 charges" not in wrong
    assert "each is invoked, and retried, on its own" not in wrong  # a question, not the rule (issue 43)
    assert wrong.count("How many copies of the event") == 3
    assert "too many" in check_retry_prediction({0: 2, 1: 4, 2: 9})
    assert "keep its three settings" in check_retry_prediction({0: 2})


# -- 02: the holder of a lost claim -------------------------------------------------------------
def test_chapter_02s_holder_check_never_prints_the_holder_before_a_right_answer():
    from idem.sim.world import LocalWorld

    def right(r):
        return r["Item"]["owner"]["S"], int(r["Item"]["expires_at"]["N"])

    with LocalWorld() as world:
        empty = claims.check_holder_of(lambda r: None, world)
        assert empty.startswith("No answer yet") and "invocation-" not in empty and "'N'" not in empty
        assert claims.check_holder_of(lambda r: ..., world).startswith("No answer yet")
        assert claims.check_holder_of(right, world).startswith("Right")
        text = claims.check_holder_of(lambda r: (r["Item"]["owner"]["S"], r["Item"]["expires_at"]["N"]), world)
        assert text.startswith("Close") and "is text" in text  # the number left as DynamoDB sends it
        assert claims.check_holder_of(lambda r: (r["Item"]["owner"], 0), world).startswith("Close")
        assert claims.check_holder_of(lambda r: r["Item"]["owner"]["S"], world).startswith("Not a pair")
        fixed = claims.check_holder_of(lambda r: ("invocation-7f3a", 1), world)  # values copied from a check
        assert "for two claims that differ" in fixed
        assert claims.check_holder_of(lambda r: ("first-invocation", 1), world).startswith("That is the holder")
        assert claims.check_holder_of(lambda r: r["Owner"], world).startswith("holder_of raised KeyError")
        wrong = claims.check_holder_of(lambda r: (r["Item"]["pk"]["S"], 1), world)
        assert wrong.startswith("Not the holder") and "expected" not in wrong
        # every hint narrows, none states the path or the conversion (issue 43)
        hints = [text, wrong, claims.check_holder_of(lambda r: (r["Item"]["owner"], 0), world),
                 claims.check_holder_of(lambda r: (r["Item"]["owner"]["S"], 1), world),
                 claims.check_holder_of(lambda r: r["Owner"], world)]
        for hint in hints:
            assert not any(token in hint for token in ('int(', "['S']", '["S"]', "'N'", '"N"', "typed", "Item")), hint


# -- 03: a key recipe ---------------------------------------------------------------------------
def test_chapter_03s_recipe_check():
    from idem.core import keys
    from idem.core.events import read_event

    empty = check_recipe(lambda record, context: None)
    assert not empty.passed and str(empty).startswith("No answer yet") and "versionId" not in str(empty)
    named = check_recipe(lambda record, context: f"{record['s3']['bucket']['name']}/{record['s3']['object']['key']}")
    assert not named.passed and "same bytes twice, versioned bucket" in named.failed
    with_context = check_recipe(lambda record, context: context.aws_request_id + record["s3"]["object"]["key"])
    assert "S3 delivers the event twice" in with_context.failed

    def right(record, context):
        obj = read_event({"Records": [record]}).objects[0]
        return keys.idempotency_key(obj, keys.recipe_for(obj, "version"))
    assert check_recipe(right).passed


# -- 04: an alarm for claim_first ---------------------------------------------------------------
def _claim_first_rows():
    from tests.test_claims_and_key_stories import CLAIM_FIRST_ROWS
    return CLAIM_FIRST_ROWS


def test_chapter_04s_alarm_check():
    rows = _claim_first_rows()
    empty = alarms.explain_alarm(lambda o: None, rows)
    assert empty.startswith("No answer yet") and "why it matters" not in empty
    queue = alarms.explain_alarm(lambda o: o.dlq > 0, rows)  # the common wrong answer
    assert "stays quiet on claim_first at_charge/once" in queue and "why it matters (silent_loss)" in queue
    always = alarms.explain_alarm(lambda o: True, rows)
    assert "fires on" in always and "why it matters (exactly_once)" in always

    def right(o):
        claimed = sum(item.get("status") == "claimed" for item in o.items)
        return o.charges != o.ledger or o.ledger < claimed
    assert alarms.explain_alarm(right, rows).startswith("Right: it fires on all 2 quiet failures")


# -- 06: a lease's length -----------------------------------------------------------------------
def test_chapter_06s_lease_check():
    empty = leases.check_lease(None)
    assert empty.startswith("No answer yet") and "50" not in empty and "45" not in empty and "retry" not in empty
    assert leases.check_lease(50).startswith("Right")
    assert leases.check_lease(30).startswith("Not yet (1)")  # shorter than the work
    assert leases.check_lease(90).startswith("Not yet (2)")  # past the first retry
    assert "not a Lambda timeout" in leases.check_lease(0)
    assert "whole number of seconds" in leases.check_lease(55.5)  # Lambda's timeout: whole seconds
    assert leases.check_lease(50.0).startswith("Right")


# -- 07: the reconciliation query ---------------------------------------------------------------
def test_chapter_07s_query_check():
    from tests.test_auditor import only_known_accounts, right

    empty = auditor.check_query(lambda booked, charged: None)
    assert not empty.right and empty.explain().startswith("No answer yet") and "dave" not in empty.explain()
    assert auditor.check_query(lambda booked, charged: set()).explain().count("missed") >= 1
    assert not auditor.check_query(only_known_accounts).right
    assert auditor.check_query(right).right


# -- 08: write units ----------------------------------------------------------------------------
def test_chapter_08s_units_check():
    from idem import views
    from idem.sim.world import LocalWorld

    with LocalWorld() as world:
        empty = views.check_units(dict.fromkeys(views.EXAMPLES), world.dynamodb)
        assert empty.startswith("No answer yet") and "says" not in empty
        right = views.check_units({"put a 2.5 KB item": 3, "put it again, condition failing": 3,
                                   "transaction putting two 600-byte items": 4}, world.dynamodb)
        assert right.count("right") == 3
        once = views.check_units({"put a 2.5 KB item": 3, "put it again, condition failing": 0,
                                  "transaction putting two 600-byte items": 2}, world.dynamodb)
    assert "not 0" in once and "not 2" in once  # a failed write is free; a transaction bills once


# -- 09: a poison event through the keyed stack -------------------------------------------------
STACK = SimpleNamespace(attempts=["1", "2", "3"], ledger_charges=0, dlq=1, record="in_progress")


def test_chapter_09s_stack_prediction_check():
    empty = ship.check_stack_prediction(dict.fromkeys(ship.STACK_PREDICTIONS), STACK)
    assert empty.startswith("No answer yet") and "right" not in empty and "in_progress" not in empty
    right = ship.check_stack_prediction({"invocations": 3, "ledger entries": 0, "events in the failure queue": 1,
                                         "the record's status": "in_progress"}, STACK)
    assert right.count("right") == 4
    verdict = ship.check_stack_prediction({"invocations": 1, "ledger entries": 1, "events in the failure queue": 0,
                                           "the record's status": "needs_attention"}, STACK)
    assert "invocations: not 1" in verdict and "not needs_attention" in verdict and "in_progress" not in verdict
    assert "has no prediction" in ship.check_stack_prediction({}, STACK)


def test_chapter_09_measures_what_the_checker_is_told():
    """The stack the chapter deploys on moto gives the values the checker's right answer expects."""
    from idem.deploy.local import lab

    result = lab.try_stack("keyed", "after_charge", "always")
    assert (len(result.attempts), result.ledger_charges, result.dlq, result.record) == (3, 0, 1, "in_progress")
    assert result.charges == 1  # chapter 00's table gives this one: the exercise does not ask it


# -- 12: which pattern -------------------------------------------------------------------------
def test_chapter_12s_choices_check():
    from tests.test_ship_and_local_aws_views import fake_row, HEADLINE

    rows = [fake_row("naive", {HEADLINE[3]: "double_charge", HEADLINE[6]: "double_charge"}, first=(1, 1.0, 0.0)),
            fake_row("claim_first", {HEADLINE[1]: "silent_loss", HEADLINE[3]: "silent_mismatch"}),
            fake_row("robust", {HEADLINE[3]: "double_charge", HEADLINE[7]: "double_charge"}, first=(4, 3.0, 1.0)),
            fake_row("keyed", key=True, first=(2, 7.0, 0.0)),
            fake_row("powertools", {HEADLINE[3]: "double_charge"}, first=(3, 3.0, 0.0))]
    empty = ship.check_choices(dict.fromkeys(ship.SYSTEMS), rows)
    assert empty.startswith("No answer yet") and "overwrite" in empty and "->" not in empty
    assert ship.check_choices(ship.ANSWERS, rows).endswith("All four right.")
    assert "1 of 4 right" in " ".join(ship.check_choices(dict.fromkeys(ship.SYSTEMS, "keyed"), rows).split())


# -- 13: the maximum event age ------------------------------------------------------------------
def test_chapter_13s_event_age_check():
    empty = local_aws.check_event_age(None, None)
    assert empty.startswith("No answer yet") and "EventAgeExceeded" not in empty
    assert local_aws.check_event_age(2, "EventAgeExceeded").count("right") == 2
    wrong = local_aws.check_event_age(3, "RetriesExhausted")  # the answer without the age
    assert "too many" in wrong and "Which limit stopped this event" in wrong
    assert "not a number" in local_aws.check_event_age("2", "EventAgeExceeded")
    for attempts, condition in ((1, "RetriesExhausted"), (3, "RetriesExhausted"), (4, "x")):
        said = local_aws.check_event_age(attempts, condition)  # a question that narrows, never the rule
        assert "EventAgeExceeded" not in said and "120 s after" not in said and "older than" not in said, said


#: The call that checks each exercise: every checker lives in idem, none in a chapter.
CHECKERS = {"00": "check_charges_guess(my_guess)", "01": "check_retry_prediction(my_charges)",
            "02": "claims.check_holder_of(holder_of, world)", "03": "check_recipe(my_recipe)",
            "04": "alarms.explain_alarm(my_alarm,", "06": "leases.check_lease(my_timeout",
            "07": "auditor.check_query(differences)", "08": "views.check_units(my_prediction,",
            "09": "views.ship.check_stack_prediction(my_prediction, result)",
            "10": "production.check_receive_count(my_receives)", "12": "views.check_choices(my_choices, rows)",
            "13": "views.check_event_age(my_attempts, my_condition"}


@pytest.mark.parametrize("chapter", sorted(CHECKERS))
def test_each_exercise_is_checked_by_a_checker_in_idem(chapter):
    exercise = _exercise(chapter)
    assert CHECKERS[chapter] in exercise
    assert not re.search(r"^def (?!my_|holder_of|differences)", exercise, flags=re.M)  # no helper defined here


# -- 10: sizing the upload queue's maxReceiveCount for a longer outage (Run it in production) -----
def test_the_production_chapters_numbers_come_from_the_template():
    from idem.deploy import template as tp
    from idem.lessons.shipping import production

    sam = tp.load()
    reserved = int(sam["Parameters"]["ReservedConcurrency"]["Default"])
    numbers = production.concurrency_numbers()
    assert numbers["reserved"] == reserved and numbers["account limit"] == reserved + 100
    assert numbers["shortest call (s)"] * numbers["stripe per second"] == reserved
    queue = production.upload_queue_numbers()
    props = sam["Resources"]["UploadQueue"]["Properties"]
    visibility, receives = props["VisibilityTimeout"], props["RedrivePolicy"]["maxReceiveCount"]
    # the first receive is the first try: N receives span N - 1 waits; one more wait, and SQS moves it
    assert queue["last try s"] == visibility * (receives - 1)
    assert queue["moved after s"] == visibility * receives
    assert queue["retention days"] * 86400 == props["MessageRetentionPeriod"]
    assert max(map(len, production.outage_lines().splitlines())) <= 96
    assert f"the last {visibility * (receives - 1) / 3600:g} hours" in production.outage_lines()


def test_the_receive_count_exercise_refuses_empty_and_wrong_answers_with_a_reason():
    from idem.lessons.shipping import production

    q = production.upload_queue_numbers()
    right = production.receives_needed()
    assert (right - 1) * q["visibility s"] >= production.EXERCISE_OUTAGE_HOURS * 3600
    assert (right - 2) * q["visibility s"] < production.EXERCISE_OUTAGE_HOURS * 3600
    empty = production.check_receive_count(None)
    assert empty.startswith("No answer yet") and str(right) not in empty
    assert production.check_receive_count(right).startswith("Right")
    assert production.check_receive_count(float(right)).startswith("Right")
    assert "is the least" in production.check_receive_count(right + 50)
    # one short gets a question about the first try, never the count or the rule (issue 43)
    close = production.check_receive_count(right - 1)
    assert "first try wait" in close and str(right) not in close and "at once" not in close
    for wrong, why in ((right - 1, "close"), (q["max receives"], "today's setting"),
                       (production.EXERCISE_OUTAGE_HOURS * 3600, "in seconds"), (10, "before Stripe is back")):
        answer = production.check_receive_count(wrong)
        assert answer.startswith("Not") and why in answer
    assert "Not a whole number" in production.check_receive_count("241")
    assert "Not a whole number" in production.check_receive_count(240.5)


def test_an_order_outlives_an_outage_in_prod_not_in_the_demo():
    from idem.lessons.shipping import production

    hours = production.upload_queue_numbers()["last try s"] / 3600
    assert production.outage_fate(hours, "prod").startswith("prod (UploadQueue): charged")  # its last try
    assert "failure queue" in " ".join(production.outage_fate(hours + 0.02, "prod").split())
    assert "failure queue" in " ".join(production.outage_fate(0.5, "demo").split())  # two retries, 3 minutes
    assert production.outage_fate(0.01, "demo").startswith("demo (direct invocation): charged")
    with pytest.raises(ValueError):
        production.outage_fate(1, "staging")


def test_chapter_04s_check_adds_two_uploads_the_chapter_did_not_run_and_catches_a_one_upload_rule():
    """Issue 43: an exercise asks about a case the chapter did not run. `ledger == 0` is right on
    the table's single-upload rows and misses one lost upload of two; the right rule is right."""
    unseen = alarms.unseen_runs()
    assert [(c.charges, c.ledger, c.verdict) for c in unseen] == [(2, 2, "exactly_once"), (1, 1, "silent_loss")]
    rows = _claim_first_rows()
    assert alarms.check_alarm(lambda o: o.ledger == 0, rows) == []
    one_upload = alarms.explain_alarm(lambda o: o.ledger == 0, rows + unseen)
    assert "stays quiet on claim_first, two uploads, the first one's charge failing once" in one_upload
    assert "no ledger entry" not in one_upload and "!=" not in one_upload  # the hint narrows, never states

    def right(o):
        claimed = sum(item.get("status") == "claimed" for item in o.items)
        return o.charges != o.ledger or o.ledger < claimed
    assert alarms.explain_alarm(right, rows + unseen).startswith("Right")
