"""The key-recipe check of chapter 03: idem's own recipe passes every pitfall, and each wrong
recipe fails exactly the pitfalls it should, with a reason that says why."""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from urllib.parse import unquote_plus

import pytest

from idem.core import keys
from idem.core.events import read_event
from idem.lessons.scribes import recipe_check
from idem.lessons.scribes.recipe_check import check_recipe

SOURCE = Path(__file__).resolve().parent.parent / "notebooks" / "source" / "03_choosing_a_key.py"
RETRY, DUPLICATE, VERSIONED, UNVERSIONED, NULL_VERSION, SEQUENCER, LONG = recipe_check.PITFALLS


def decoded(record):
    return read_event({"Records": [record]}).objects[0]


def idem_recipe(record, context):
    obj = decoded(record)
    return keys.idempotency_key(obj, keys.recipe_for(obj, "version"))


def sha(text: str) -> str:
    return "charge#" + hashlib.sha256(text.encode()).hexdigest()


def fields(record, name, null_is_a_version=False):
    """bucket/name#versionId or, without one (missing or "null"), #eTag#sequencer: idem's fields,
    any name. `null_is_a_version` takes the text "null" for a version (the wrong reading)."""
    s3 = record["s3"]
    o = s3["object"]
    version = o.get("versionId")
    if version == "null" and not null_is_a_version:
        version = None
    tail = version or f"{o['eTag']}#{o['sequencer']}"
    return f"{s3['bucket']['name']}/{name}#{tail}"


WRONG = {
    # from the attempt: the clock moves between a delivery and its repeats
    "clock": (lambda r: sha(fields(r, unquote_plus(r["s3"]["object"]["key"])) + str(time.time_ns())),
              {RETRY, DUPLICATE}),
    # the invocation's request id: kept by Lambda's retries, new on S3's second delivery
    "request id": (lambda r, context: idem_recipe(r, context) + "#" + context.aws_request_id,
                   {DUPLICATE}),
    # the bytes, not the upload
    "etag only": (lambda r: keys.idempotency_key(decoded(r), "etag_only"),
                  {VERSIONED, UNVERSIONED, NULL_VERSION}),
    # version id without the fallback: every unversioned upload is version null
    "version, no fallback": (lambda r: keys.idempotency_key(decoded(r), "version"),
                             {UNVERSIONED, NULL_VERSION}),
    "version field read directly": (
        lambda r: sha(f"{unquote_plus(r['s3']['object']['key'])}#{r['s3']['object']['versionId']}"),
        {UNVERSIONED, NULL_VERSION}),
    # the fallback taken only when the field is missing: "null" is read as a version (issue 43)
    "null taken for a version": (
        lambda r: sha(fields(r, unquote_plus(r["s3"]["object"]["key"]), null_is_a_version=True)),
        {NULL_VERSION}),
    # readable, not hashed: json.dumps writes each é as \u00e9, six bytes
    "json, not hashed": (lambda r: "charge#" + json.dumps(fields(r, unquote_plus(r["s3"]["object"]["key"]))),
                         {LONG}),
    # the sequencer alone: it orders one name's events; another name's may be the same text
    "sequencer only": (lambda r: "charge#" + r["s3"]["object"]["sequencer"], {SEQUENCER}),
    "etag and sequencer": (lambda r: sha(r["s3"]["object"]["eTag"] + r["s3"]["object"]["sequencer"]), {SEQUENCER}),
    # the chapter's starter: the bucket and the name as sent
    "bucket and raw name": (lambda r: f"{r['s3']['bucket']['name']}/{r['s3']['object']['key']}",
                            {VERSIONED, UNVERSIONED, NULL_VERSION, LONG}),
}


def test_idems_recipe_passes_every_pitfall():
    report = check_recipe(idem_recipe)
    assert report.passed and report.failed == []
    assert str(report).splitlines()[-1] == f"Right: the recipe passes all {len(recipe_check.PITFALLS)} pitfalls."


def test_the_content_recipe_passes_every_pitfall_too():
    assert check_recipe(lambda r: keys.idempotency_key(decoded(r), "content")).passed


@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_recipe_fails_exactly_its_pitfalls(name):
    recipe, expected = WRONG[name]
    report = check_recipe(recipe)
    assert set(report.failed) == expected
    assert not report.passed


def test_each_failure_says_why_in_one_sentence_on_short_lines():
    for recipe, _ in WRONG.values():
        for finding in check_recipe(recipe).findings:
            if finding.passed:
                assert str(finding) == f"pass  {finding.pitfall}"
                continue
            assert finding.why and ". " not in finding.why
            assert all(len(line) <= 100 for line in str(finding).splitlines())


def test_the_reasons_name_the_cause():
    def why(recipe, pitfall):
        return next(f.why for f in check_recipe(recipe).findings if f.pitfall == pitfall)

    assert "request id" in why(WRONG["request id"][0], DUPLICATE)
    assert "a clock or a random id" in why(WRONG["clock"][0], DUPLICATE)
    assert "KeyError" in why(WRONG["version field read directly"][0], UNVERSIONED)
    assert "no versionId field" in why(WRONG["version field read directly"][0], UNVERSIONED)
    # each reason ends in a question that narrows; it once named the fix ("add the sequencer",
    # "add the versionId", "hash the recipe's text (sha256)", "leave the context out")
    assert why(WRONG["version, no fallback"][0], UNVERSIONED).endswith("which field still differs per upload there?")
    assert why(WRONG["etag only"][0], VERSIONED).endswith("which field of the record is new for every upload?")
    assert why(WRONG["null taken for a version"][0], NULL_VERSION).endswith('does "null" name a version?')
    for wrong in WRONG.values():
        for finding in check_recipe(wrong[0]).findings:
            assert not any(fix in finding.why for fix in ("add the", "sha256", "hash", "leave the context out",
                                                          "sequencer,", "versionId,")), finding.why
    assert re.search(r"is [\d,]+ characters, over Stripe's 255-character limit", why(WRONG["json, not hashed"][0], LONG))


def test_a_recipe_that_returns_none_is_the_unfilled_exercise_and_gets_a_hint():
    report = check_recipe(lambda record: None)
    assert not report.passed and str(report).startswith("No answer yet")


def test_a_recipe_that_returns_no_string_fails_every_pitfall_and_says_so():
    report = check_recipe(lambda record: 0)
    assert report.failed == list(recipe_check.PITFALLS)
    assert all("returned 0" in f.why for f in report.findings)


def test_a_recipe_that_changes_its_record_does_not_change_the_next_pitfalls_records():
    def destructive(record):
        key = idem_recipe(record, None)
        record["s3"]["object"].clear()
        return key

    assert check_recipe(destructive).passed


@pytest.mark.concurrency
def test_the_retry_comes_a_minute_later_and_the_clock_is_restored():
    seen = []
    real_time, real_time_ns = time.time, time.time_ns
    before = time.time()
    check_recipe(lambda r: seen.append(time.time()) or idem_recipe(r, None))
    assert max(seen) - before >= recipe_check.RETRY_DELAY
    # restored: the very functions, not "less than a minute later" (a loaded machine may be slow)
    assert time.time is real_time and time.time_ns is real_time_ns


def test_the_events_are_what_s3_sends():
    ev = recipe_check.events()
    first, second = ev.versioned_pair
    assert first["s3"]["object"]["versionId"] != second["s3"]["object"]["versionId"]
    assert first["s3"]["object"]["eTag"] == second["s3"]["object"]["eTag"]
    assert all("versionId" not in r["s3"]["object"] for r in ev.unversioned_pair)
    assert ev.unversioned_pair[0]["s3"]["object"]["sequencer"] != ev.unversioned_pair[1]["s3"]["object"]["sequencer"]
    assert len(unquote_plus(ev.long["s3"]["object"]["key"]).encode()) == 1024


# -- the chapter's exercise ------------------------------------------------------------------
def test_the_chapters_starter_is_empty_and_its_solution_passes():
    text = SOURCE.read_text()
    starter = text.split("# %%\ndef my_recipe", 1)[1].split("\n# %%", 1)[0]
    namespace: dict = {}
    exec("def my_recipe" + starter, namespace)  # noqa: S102 - the chapter's own cell
    assert str(check_recipe(namespace["my_recipe"])).startswith("No answer yet")
    block = text.split("<details>", 1)[1].split("# ```python\n", 1)[1].split("# ```", 1)[0]
    solution: dict = {}
    exec("\n".join(line[2:] for line in block.splitlines()), solution)  # noqa: S102
    assert check_recipe(solution["my_recipe"]).passed


# -- the chapter's views -----------------------------------------------------------------------
def test_a_raw_name_passes_the_check_which_says_decoding_is_the_chapters_lesson():
    """S3 writes each name one way only (a space as `+`), so a key from the raw field is still
    one key per upload: the check cannot fail it, and its docstring says so."""
    assert check_recipe(lambda r: sha(fields(r, r["s3"]["object"]["key"]))).passed
    assert "not a pitfall here" in recipe_check.__doc__


def test_the_decoding_table_shows_unquote_keep_the_plus_and_unquote_plus_read_a_space():
    from idem import views

    frame = views.decoding_frame(["alice/my+file.csv", "alice/a%2Bb.csv"])
    assert list(frame["unquote(field)"]) == ["alice/my+file.csv", "alice/a+b.csv"]
    assert list(frame["unquote_plus(field)"]) == ["alice/my file.csv", "alice/a+b.csv"]


def test_the_grid_has_a_legend_entry_for_each_colour_it_shows():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from idem import views
    from idem.lessons.scribes import key_stories

    runs = key_stories.run_grid(["version", "clock"], ["retry and duplicate", "same bytes, versioning off"])
    fig = views.recipe_grid(runs)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == list(views.GRID_MEANINGS.values())  # right, extra and missed all appear
    right_only = views.recipe_grid([r for r in runs if not r.extra and not r.missed])
    assert [t.get_text() for t in right_only.axes[0].get_legend().get_texts()] == [views.GRID_MEANINGS["right"]]
    plt.close("all")


def test_the_stories_table_has_a_row_per_story():
    from idem import views
    from idem.lessons.scribes import key_stories

    assert list(views.stories_frame()["story"]) == list(key_stories.STORIES)
