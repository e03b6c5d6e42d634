"""Effects judged by what they leave (idem.explore.judge.state): a write that leaves the clean run's
state is not a second effect; an item too many is; other content is a break."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from idem.explore.judge import state
from idem.explore.check import check_handler
from idem.explore.judge.verdicts import Verdict

HANDLERS = Path(__file__).resolve().parent / "handlers"
PUT = "dynamodb:PutItem"


def found(content: dict, key: str = "a", effect: str = PUT) -> state.Found:
    return state.Found(effect, "table", "t", {"pk": key}, {"pk": key, **content})


def clean(first: list[state.Found], second: list[state.Found] | None = None) -> state.CleanState:
    return state.CleanState.of(first, second if second is not None else first)


def test_names_read_a_schedules_own_names_as_placeholders():
    obj = SimpleNamespace(key="in/check00042/a.json", sequencer="0055AED6DCD90281E5", etag="abc123ef", version_id=None)
    names = state.Names(42, [obj], "check-uploads")
    assert names({"k": "in/check00042/a.json", "o": "A-1-00042-2", "s": "s3://check-uploads/x",
                  "q": "0055AED6DCD90281E5000"}) == \
        {"k": "<key1>", "o": "A-1-#####-2", "s": "s3://<bucket>/x", "q": "<sequencer>000"}


def test_another_accounts_upload_is_expected_under_its_own_folder_not_folded_into_the_first(monkeypatch):
    """docs/check_from_a_template.md P13: the family accounts' second upload (other#####/, or under
    an --object KEY's account folder) is an order of its own name: its output is expected beside the
    first's. A copy written only once, under the first account's folder, is short of it."""
    from idem.explore.run import objects

    assert state.Names(42)("out/other00042/a.json") == "out/other#####/a.json"
    assert state.Names(42, trigger="sqs")("out/other00042/a.json") == "out/check#####/a.json"  # one batch's state
    monkeypatch.setattr(objects, "CURRENT", objects.UserObject("a.json", "alice/a.json", b"{}", exact=True))
    assert state.Names(42)("out/alice/a.json") == "out/check#####/a.json"
    first = state.Found("s3:PutObject", "object", "b", "out/check#####/a.json", "x")
    other = state.Found("s3:PutObject", "object", "b", "out/other#####/a.json", "x")
    c = clean([first])
    assert state.judge(c, [first, other], ["s3:PutObject"], {"s3:PutObject": 1}, {"s3:PutObject": 2},
                       orders=[1, 2], renamed=True).findings == []
    short = state.judge(c, [first], ["s3:PutObject"], {"s3:PutObject": 1}, {"s3:PutObject": 2},
                        orders=[1, 2], renamed=True)
    assert short.findings and short.counts["s3:PutObject"] < 2


def test_the_same_item_again_is_the_clean_runs_state():
    c = clean([found({"v": "1"})])
    judged = state.judge(c, [found({"v": "1"})], [PUT], {PUT: 1}, {PUT: 3})
    assert judged.counts == {PUT: 1} and not judged.findings and not judged.mismatch


def test_fields_that_differ_between_two_clean_runs_are_left_out():
    own = "check#####/a.json"  # the run's own name: each run its own item
    c = clean([found({"v": "1", "at": "t0"}, own)], [found({"v": "1", "at": "t1"}, own)])
    assert c.volatile[("table", "t")] == {"at"} and not c.counted
    assert state.judge(c, [found({"v": "1", "at": "t9"}, own)], [PUT], {PUT: 1}, {PUT: 2}).counts == {PUT: 1}
    assert state.judge(c, [found({"v": "2", "at": "t9"}, own)], [PUT], {PUT: 1}, {PUT: 1}).mismatch


def test_an_overwrite_with_different_content_is_a_break():
    c = clean([found({"v": "1"})])
    judged = state.judge(c, [found({"v": "2"})], [PUT], {PUT: 1}, {PUT: 1})
    assert judged.mismatch and judged.findings
    assert state.worse(Verdict.EXACTLY_ONCE.value, judged, 0, {PUT: 1}, {PUT: 1}) == Verdict.SILENT_MISMATCH.value
    assert state.worse(Verdict.EXACTLY_ONCE.value, judged, 1, {PUT: 1}, {PUT: 1}) == Verdict.NEEDS_ATTENTION.value
    # written more often than the clean run, with other content: the effect happened twice
    assert state.worse(Verdict.EXACTLY_ONCE.value, judged, 0, {PUT: 2}, {PUT: 1}) == Verdict.DOUBLE_EFFECT.value


def test_an_item_too_many_is_a_double_effect_and_none_is_a_loss():
    # a uuid key: it differs between the clean runs, so items are compared by content, as many as it left
    c = clean([found({"v": "1"}, key="u1")], [found({"v": "1"}, key="u2")])
    assert ("table", "t") in c.keyless
    two = state.judge(c, [found({"v": "1"}, key="u3"), found({"v": "1"}, key="u4")], [PUT], {PUT: 1}, {PUT: 2})
    assert two.counts == {PUT: 2} and not two.mismatch
    assert state.worse(Verdict.EXACTLY_ONCE.value, two, 0, {PUT: 2}, {PUT: 1}) == Verdict.DOUBLE_EFFECT.value
    assert state.judge(c, [], [PUT], {PUT: 1}, {}).counts == {PUT: 0}


def test_two_orders_expect_the_later_orders_state_at_one_key():
    c = clean([found({"order": "A-#####"})])
    assert c.expected([1, 2]) == Counter({(PUT, "table", "t", '{"pk": "a"}', '{"order": "A-#####-2", "pk": "a"}'): 1})
    stale = state.judge(c, [found({"order": "A-#####"})], [PUT], {PUT: 1}, {PUT: 2}, orders=[1, 2])
    assert stale.mismatch  # the older order's content written last: caught


def test_the_ordering_rule_lets_an_older_upload_skip_its_write():
    assert state.skipped_by_rule("sequencer", 0, [1, 2]) and not state.skipped_by_rule("sequencer", 1, [1, 2])
    assert not state.skipped_by_rule("none", 0, [1, 2]) and not state.skipped_by_rule("sequencer", 0, [1, 1])


def test_a_handler_writing_the_same_item_again_holds():
    report = check_handler(f"{HANDLERS / 'state_same_item.py'}:lambda_handler", effects=[PUT], retries=(0,),
                           books="none")
    assert report.holds, report.explain()
    assert report.baseline == {PUT: 1, "provider:charge": 0}
    duplicate = next(r for r in report.results if r.schedule.fault is None and r.schedule.delivery == "duplicate"
                     and not r.schedule.overwrite)
    assert duplicate.verdict == Verdict.EXACTLY_ONCE.value and duplicate.effects[PUT] == 1
    text = report.explain()
    assert "charge" not in text.lower() and "books" not in text.lower(), text


def test_a_counter_overwritten_with_other_content_breaks():
    report = check_handler(f"{HANDLERS / 'state_counter.py'}:lambda_handler", effects=["dynamodb:UpdateItem"],
                           retries=(0,), books="none")
    assert not report.holds
    duplicate = next(r for r in report.results if r.schedule.fault is None and r.schedule.delivery == "duplicate"
                     and not r.schedule.overwrite)
    assert duplicate.verdict == Verdict.DOUBLE_EFFECT.value, duplicate.findings
    assert any("other items than the clean run" in f for f in duplicate.findings), duplicate.findings


def test_a_running_total_every_run_shares_is_counted_by_its_calls():
    # pk "total" names nothing of the run's own, and its n differs between two clean runs
    total = lambda n: state.Found("dynamodb:UpdateItem", "table", "t", {"pk": "total"}, {"pk": "total", "n": n})  # noqa: E731
    c = clean([total("1")], [total("2")])
    assert c.counted == {"dynamodb:UpdateItem"} and c.by_state(["dynamodb:UpdateItem", PUT]) == (PUT,)
    judged = state.judge(c, [total("5")], ["dynamodb:UpdateItem"], {"dynamodb:UpdateItem": 1}, {"dynamodb:UpdateItem": 2})
    assert judged.counts == {} and not judged.findings  # its count stays its calls
