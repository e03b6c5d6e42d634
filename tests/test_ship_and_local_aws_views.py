"""The views of chapters 12 (what to ship) and 13 (the local AWS): every cell computed, every
recommendation and check explained from measured rows."""
from __future__ import annotations

import pytest

from idem import views
from idem.core.clock import VirtualClock
from idem.explore import scenarios as sc
from idem.cost.bill import Bill
from idem.views import local_aws, ship

HEADLINE = [ship._label(s) for s in sc.headline_scenarios(["naive"])]


def fake_row(pattern: str, verdicts: dict[str, str] | None = None, key: bool = False,
             first: tuple[int, float, float] = (2, 2.0, 0.0)) -> ship.PatternRow:
    """A row with chosen verdicts (exactly_once where none is given) and a chosen bill."""
    chosen = {label: (verdicts or {}).get(label, "exactly_once") for label in HEADLINE}
    return ship.PatternRow(pattern, chosen, key, Bill(pattern, "first", *first),
                            Bill(pattern, "duplicate", 1, 1.0, 0.0))


@pytest.fixture(scope="module")
def fake_rows() -> list[ship.PatternRow]:
    return [
        fake_row("naive", {HEADLINE[3]: "double_charge", HEADLINE[6]: "double_charge"}, first=(1, 1.0, 0.0)),
        fake_row("claim_first", {HEADLINE[1]: "silent_loss", HEADLINE[3]: "silent_mismatch"}),
        fake_row("robust", {HEADLINE[3]: "double_charge", HEADLINE[7]: "double_charge"}, first=(4, 3.0, 1.0)),
        fake_row("keyed", key=True, first=(2, 7.0, 0.0)),
        fake_row("powertools", {HEADLINE[3]: "double_charge"}, first=(3, 3.0, 0.0)),
    ]


@pytest.fixture(scope="module")
def measured() -> list[ship.PatternRow]:
    return ship.pattern_rows()


# -- chapter 13 ----------------------------------------------------------------------------------
def test_the_measured_table_separates_the_patterns(measured):
    table = ship.pattern_table(measured)
    assert list(table.index) == list(ship.PATTERNS)
    assert table.loc["keyed", ["double charge", "silent loss", "silent mismatch"]].tolist() == ["no"] * 3
    assert table.loc["naive", "double charge"] != "no"
    assert table.loc["claim_first", "silent loss"] != "no" and table.loc["claim_first", "double charge"] == "no"
    assert table.loc["powertools", "double charge"] != "no"
    assert table["key to provider"].to_dict() == {p: "yes" if p == "keyed" else "no" for p in ship.PATTERNS}
    assert all(row.rows == len(HEADLINE) for row in measured)


def test_the_table_fits_the_page(measured):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import teaching

    rows, width = teaching.table_shape(ship.pattern_table(measured).to_html())
    assert rows == len(ship.PATTERNS) and width <= teaching.MAX_TABLE_WIDTH


def test_passes_key_reads_the_providers_charges():
    assert ship.passes_key("keyed") is True
    assert ship.passes_key("robust") is False


def test_units_and_cost_say_what_they_count():
    assert ship.units(Bill("robust", "first", 4, 3.0, 1.0)) == "3 W + 1 R"
    assert ship.units(Bill("x", "first", 0, 0.0, 0.0)) == "0 W"
    assert ship.cost(Bill("naive", "first", 1, 1.0, 0.0)) == "1 call, 1 W"
    assert ship.cost(Bill("keyed", "first", 2, 0.5, 0.0)) == "2 calls, 0.5 W"


@pytest.mark.parametrize("effect, lost_ok, cost, library, pattern, row", [
    ("an overwrite", "no", "matters little", "hand-rolled", "an overwrite, no record", "naive"),
    ("a charge, provider takes keys", "no", "matters little", "hand-rolled", "keyed (the handler to copy)", "keyed"),
    ("a charge, provider takes keys", "no", "matters little", "Powertools",
     "Powertools, with its key passed to the provider", "powertools"),
    ("a charge, provider takes keys", "yes, and reconciled", "matters most", "hand-rolled",
     "claim_first, watched by reconciliation", "claim_first"),
    ("a charge, provider takes keys", "yes, and reconciled", "matters little", "hand-rolled",
     "keyed (the handler to copy)", "keyed"),
    ("a write to your own table", "no", "matters little", "hand-rolled",
     "one transaction: the effect and the done record", "keyed"),
    ("a charge, provider takes no keys", "no", "matters little", "hand-rolled",
     "keyed's claim and commit, a look-up instead of the key", "keyed"),
])
def test_recommend_walks_the_decision_diagram(fake_rows, effect, lost_ok, cost, library, pattern, row):
    found = ship.recommend(fake_rows, effect, lost_ok, "can overlap", cost, library)
    assert (found.pattern, found.row) == (pattern, row)
    assert "reconcile" in found.reasons[-1]


def test_recommend_quotes_the_rows_it_was_given(fake_rows):
    cheap = ship.recommend(fake_rows, "a charge, provider takes keys", "yes, and reconciled",
                            "can overlap", "matters most")
    text = " ".join(cheap.text().split())  # the reasons wrap
    assert "silent loss in 1 of 8 rows" in text and "silent mismatch in 1" in text
    assert "$3.125 per million" in text  # keyed 7 W - claim_first 2 W, at $0.625 per million W (as the table rounds)
    assert "robust, which reads first, ends in double_charge" in text
    no_key = " ".join(ship.recommend(fake_rows, "a charge, provider takes no keys").text().split())
    assert "double charge in 2 of 8 rows" in no_key
    never = " ".join(ship.recommend(fake_rows, copies="never overlap").text().split())
    assert "make no such promise" in never


def test_recommend_refuses_an_unknown_choice(fake_rows):
    with pytest.raises(ValueError, match="choose one of"):
        ship.recommend(fake_rows, effect="a fax")


def test_the_exercise_check_explains_each_answer(fake_rows):
    assert ship.check_choices(ship.ANSWERS, fake_rows).endswith("All four right.")
    everywhere = " ".join(ship.check_choices({s: "keyed" for s in ship.SYSTEMS}, fake_rows).split())
    assert "invoice -> keyed: more than needed" in everywhere
    assert "chat -> keyed: wrong" in everywhere and "double charges in 2 of 8 rows" in everywhere
    assert "1 of 4 right" in everywhere
    claim = " ".join(ship.check_choices({**ship.ANSWERS, "refund": "claim_first"}, fake_rows).split())
    assert "refund -> claim_first: wrong" in claim and "silent loss in 1 of 8 rows" in claim
    assert "choose one of" in ship.check_choices({**ship.ANSWERS, "chat": "retry"}, fake_rows)
    assert "unknown systems" in ship.check_choices({"fax": "keyed"}, fake_rows)


def test_every_system_and_choice_has_a_reason(fake_rows):
    rows = ship._by_name(fake_rows)
    for system in ship.SYSTEMS:
        verdicts = [ship._why(system, choice, rows)[0] for choice in ship.CHOICES]
        assert verdicts.count("right") == 1
        assert ship.CHOICES[verdicts.index("right")] == ship.ANSWERS[system]


def test_the_explorers_build(fake_rows):
    assert ship.recommend_explorer(fake_rows).children
    assert local_aws.runtime_explorer().children


# -- chapter 13 ----------------------------------------------------------------------------------
def test_the_runtime_retries_then_gives_the_event_to_the_failure_queue():
    outcome = local_aws.run_runtime(2, "always", "exception", "warm")
    assert [a.start for a in outcome.trace] == [0.0, 60.0, 180.0]
    assert local_aws.where_it_ended(outcome).startswith("in the failure queue: condition RetriesExhausted")
    crashed = local_aws.run_runtime(1, "always", "crash", "warm")
    assert [a.cold for a in crashed.trace] == [True, True]
    assert local_aws.where_it_ended(local_aws.run_runtime(2, "once")).startswith("finished after 2")


def test_an_event_older_than_its_maximum_age_is_dropped():
    young = local_aws.event_age_run(21_600)
    assert (young.attempts, young.condition) == (3, "RetriesExhausted")
    old = local_aws.event_age_run(120)
    assert (old.attempts, old.starts, old.condition) == (2, (0.0, 60.0), "EventAgeExceeded")


def test_the_event_age_check_explains_a_wrong_prediction():
    assert local_aws.check_event_age(2, "EventAgeExceeded") == ("Attempts: right, 2 (at t = 0, 60 s).\n"
                                                           "Condition: right, EventAgeExceeded.")
    wrong = local_aws.check_event_age(3, "RetriesExhausted")
    assert "too many" in wrong and "Which limit stopped this event" in wrong
    assert "too few" in local_aws.check_event_age(1, "EventAgeExceeded")


def test_the_crossings_show_the_lost_answer():
    frame = local_aws.crossings_frame(sc.run(sc.Scenario("keyed", "after_charge", "once")))
    lost = frame[frame["injected"] == "exception"]
    assert lost["boundary"].tolist() == ["after provider:charge"]
    assert frame["ended"].tolist()[-1] == "ok"


@pytest.mark.concurrency
def test_the_lock_gives_one_winner_per_round():
    unlocked, locked = local_aws.lock_races(threads=4, rounds=3)
    assert locked.clean_rounds == locked.rounds == 3
    assert unlocked.rounds == 3 and len(unlocked.winners_per_round) == 3
    figure = local_aws.lock_chart(unlocked, locked)
    assert len(figure.axes[0].get_legend().get_texts()) == 3


def test_powertools_reads_the_virtual_clock_inside_the_shim_only():
    clock = VirtualClock()
    clock.advance(3600)
    read = local_aws.powertools_reads(clock)
    assert read["inside the shim"] == read["virtual clock"] == "2026-01-01T01:00:00.000Z"
    assert read["outside, it reads the wall clock"] is True


def test_moto_still_leaves_out_what_the_workbook_fills():
    """If a moto upgrade adds these, chapter 13's story (and the workbook's gap-filling) must change."""
    probe = local_aws.probe_moto()
    assert "versionId" not in probe["object fields"] and "sequencer" not in probe["object fields"]
    assert probe["put_object returned a versionId"] is True
    assert probe["TTL"] == "ENABLED" and probe["expired item still read"] is True


def test_the_views_package_exports_chapter_12_and_13_views():
    for name in ("pattern_rows", "pattern_table", "recommend_explorer", "recommend_explore",
                 "check_choices", "runtime_explorer", "runtime_explore", "check_event_age",
                 "crossings_frame", "lock_races", "lock_chart", "powertools_reads", "probe_moto"):
        home = ship if hasattr(ship, name) else local_aws
        assert name in views.__all__ and getattr(views, name) is getattr(home, name)


def test_chapter_09s_tables_show_each_profiles_handler_and_every_text_in_full():
    table = ship.profile_table()
    assert set(table["handler (in idem.core)"]) == {"handlers.keyed.lambda_handler", "entry.lambda_handler"}
    settings = " ".join(ship.production_settings().split())
    assert "https://docs.stripe.com/rate-limits" in settings and "HandlerMode" not in settings
    printed = ship.alarms_text()
    assert max(map(len, (ship.production_settings() + "\n" + printed).splitlines())) <= ship.WIDTH
    assert len(printed.splitlines()) <= 25  # a chapter's output fits a screen


def test_chapter_09s_alarms_each_have_something_to_do_and_their_real_trigger():
    prod = ship.tp.resources_of_type(ship.tp.load(), "AWS::CloudWatch::Alarm")
    assert set(ship.ALARM_TODO) == set(prod)  # a new alarm in the template needs its row here
    rows = {row["alarm"]: row for row in ship.alarm_rows("prod")}
    assert set(rows) == set(prod) and all(row["family"] in ship.ALARM_FAMILIES for row in rows.values())
    demo_has_none = {"UploadQueueAgeAlarm", "WebhookErrorsAlarm", "WebhookThrottlesAlarm", "WebhookSignatureAlarm"}  # prod's resources
    assert {row["alarm"] for row in ship.alarm_rows("demo")} == set(prod) - demo_has_none
    assert rows["FailureQueueAgeAlarm"]["fires on"] == "oldest > 1 day"
    assert rows["UploadQueueAgeAlarm"]["fires on"] == "oldest > 15 min"
    assert rows["PendingAlarm"]["fires on"] == "> 20% in 1 hour"  # a share: the webhook settles each one
    assert (rows["WebhookErrorsAlarm"]["family"], rows["WebhookErrorsAlarm"]["fires on"]) == ("webhook", "any in 5 min")
    assert rows["ChargeErrorsAlarm"]["fires on"] == "any in 5 min"
    printed = ship.alarms_text()
    assert printed.startswith(f"{len(prod)} alarms") and all(todo in printed for todo in ship.ALARM_TODO.values())
    assert ship.alarms_text(profile="demo").startswith(f"{len(prod) - len(demo_has_none)} alarms")


def _readme_alarm_commands() -> dict[str, list[str]]:
    """README.md's alarm table: alarm -> the commands its "Do" cell gives, in backticks."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("### The alarms, and what to do when one fires", 1)[1].split("\n\n", 2)[1]
    command = re.compile(r"`((?:python -m )?idem (?:settle|refund|redrive)|aws (?:lambda|sqs|logs) [^` ]+|sam logs)[^`]*`")
    found = {}
    for line in table.splitlines()[2:]:
        name, _means, do = [cell.strip() for cell in line.strip("|").split(" | ")]
        found[name.strip("`")] = [m.group(1).removeprefix("python -m ") for m in command.finditer(do)]
    return found


def test_each_alarms_line_names_the_commands_the_readme_gives_for_it():
    readme = _readme_alarm_commands()
    assert set(readme) == set(ship.ALARM_TODO)
    assert all(readme.values()), "every README row names a command"
    missing = {name: [c for c in commands if c not in ship.ALARM_TODO[name]]
               for name, commands in readme.items()}
    assert {name: c for name, c in missing.items() if c} == {}
    # and the chapter prints them: each row's "do" is on the alarm's line
    printed = ship.alarms_text()
    for name, commands in readme.items():
        (line,) = [line for line in printed.splitlines() if line.endswith(ship.ALARM_TODO[name])]
        assert all(c in line for c in commands)


def test_the_files_to_copy_and_the_stacks_metrics_are_counted():
    from idem.core.handlers import keyed, keyed_stripe

    listed = ship.files_to_copy(keyed, keyed_stripe)
    assert "stripe" in ship.imports_of(ship.Path(keyed_stripe.__file__)) and "idem" not in listed
    assert "7 from the handler" in ship.custom_metrics_note(7, 6) and "$0.90 a month" in ship.custom_metrics_note(7, 6)


def test_chapter_09_and_10s_first_lines_count_the_resolved_template():
    from idem.deploy import template as tp

    prod = tp.resolve(ship.expanded_template(), {"Profile": "prod"})
    demo = tp.resolve(ship.expanded_template(), {"Profile": "demo"})
    line = ship.template_summary(False)
    assert f"{len(tp.load()['Parameters'])} parameters" in line and line.endswith("real AWS cells off")
    assert f"{len(prod['Resources'])} resources in prod, {len(demo['Resources'])} resources in demo" in line
    assert ship.template_summary(True).endswith("real AWS cells ON")
    assert ship.production_summary() == (f"production: {len(prod['Resources'])} resources after the SAM "
                                         f"transform, {len(ship.alarms('prod'))} alarms")


def test_the_reconciliation_view_lists_each_difference_with_its_finding():
    from idem.core.reconcile import job as reconcile_job
    from idem.core.reconcile.job import Entry

    def entry(charge_id: str, at: float) -> Entry:
        return Entry(charge_id=charge_id, key=f"charge#{charge_id}", account="alice", cents=500, at=at)

    lost = reconcile_job.UploadSeen("uploads", "bob/order-3.txt", "v1", "e", 40)
    lost_key = "charge#order#" + "ab" * 32
    report = reconcile_job.compare([entry("ch_booked", 10), entry("ch_lost", 20)],
                                   [entry("ch_booked", 10), entry("ch_extra", 30)], 0, 3600,
                                   uploads=[(lost, lost_key)], status_of=lambda key: ("", {}))
    frame = ship.reconcile_frame(report)
    assert list(frame.columns) == ["finding", "about", "settle with"]
    assert dict(zip(frame["about"], frame["finding"])) == {"ch_extra": "a charge with no ledger line",
                                                          "ch_lost": "a ledger line with no charge",
                                                          "bob/order-3.txt": "an upload with no ledger line"}
    settle = dict(zip(frame["about"], frame["settle with"]))
    assert settle["bob/order-3.txt"] == "idem settle --key charge#order#abababab\u2026"
    assert settle["ch_extra"] == "idem settle --key charge#ch_extra"
    assert "1 upload(s), 2 ledger line(s), 2 charge(s), 3 difference(s)" in ship.reconcile_line(report)
    assert ship.reconcile_frame(reconcile_job.compare([], [], 0, 3600)).empty


@pytest.mark.parametrize("chapter", ["09_deploy_to_aws", "10_run_in_production", "12_what_to_ship"])
def test_the_chapters_state_the_listing_limit_past_which_the_job_reads_the_inventory(chapter):
    from pathlib import Path

    from idem.core.reconcile import job as reconcile_job

    text = (Path(__file__).resolve().parents[1] / "notebooks" / "source" / f"{chapter}.py").read_text()
    prose = " ".join(line.lstrip("# ").strip() for line in text.splitlines())  # the cells' lines joined
    assert f"{reconcile_job.MAX_LISTED_VERSIONS:,}" in prose and "a day or more late" in prose
