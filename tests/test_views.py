"""idem.views: one explorer factory behind every widget, and the names the chapters use."""
from __future__ import annotations

import re
from pathlib import Path

import ipywidgets as widgets
import pytest

from idem import views

ROOT = Path(__file__).resolve().parent.parent


def test_every_views_name_a_chapter_uses_is_there():
    used = set()
    for source in (ROOT / "notebooks" / "source").glob("[0-9][0-9]_*.py"):
        used |= set(re.findall(r"\bviews\.([A-Za-z_]\w*)", source.read_text()))
    assert used and not [name for name in sorted(used) if not hasattr(views, name)]
    assert not [name for name in used if name.startswith("_")]


def test_the_package_reexports_every_public_name_of_its_modules():
    from idem.views import charts, code, tables, widgets as explorers

    for module in (code, tables, charts, explorers):
        for name, value in vars(module).items():
            if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__:
                assert getattr(views, name) is value, f"views.{name} is not {module.__name__}.{name}"


def _explorer(links=None, rows=()):
    runs, shown = [], []
    controls = {"handler": widgets.Dropdown(options=("naive", "keyed"), value="naive"),
                "fault": widgets.Dropdown(options=("none", "after_charge"), value="after_charge"),
                "times": widgets.ToggleButtons(options=("once", "always"), value="once")}

    def run(**values):
        runs.append(values)
        return f"{values['handler']}/{values['fault']}/{values['times']}"

    box = views.make_explorer(controls, run, shown.append, rows=rows, links=links)
    return box, controls, runs, shown


def test_the_explorer_runs_once_at_start_and_again_on_every_change():
    box, controls, runs, shown = _explorer()
    assert runs == [{"handler": "naive", "fault": "after_charge", "times": "once"}]
    controls["handler"].value = "keyed"
    assert shown == ["naive/after_charge/once", "keyed/after_charge/once"]
    assert isinstance(box.children[-1], widgets.Output)
    assert list(box.children[:-1]) == list(controls.values())  # one control per row by default


def test_rows_put_controls_side_by_side():
    box, controls, _, _ = _explorer(rows=[("handler", "fault")])
    first, second, output = box.children
    assert isinstance(first, widgets.HBox)
    assert list(first.children) == [controls["handler"], controls["fault"]]
    assert second is controls["times"] and isinstance(output, widgets.Output)


def test_a_link_sets_another_control_without_a_second_run():
    def follow_fault(values):
        return {"disabled": values["fault"] == "none", "value": "once" if values["fault"] == "none"
                else values["times"]}

    box, controls, runs, _ = _explorer(links={"times": follow_fault})
    controls["times"].value = "always"
    assert len(runs) == 2 and not controls["times"].disabled
    controls["fault"].value = "none"  # the link moves times back to once: still one run
    assert controls["times"].disabled and controls["times"].value == "once"
    assert len(runs) == 3 and runs[-1] == {"handler": "naive", "fault": "none", "times": "once"}


def test_the_scenario_explorer_keeps_its_layout_and_disables_times_without_a_fault():
    box = views.explorer(fault="none")
    top, times, delivery, output = box.children
    assert [c.description for c in top.children] == ["handler", "fault"]
    assert times.disabled and times.description == "times" and delivery.description == "delivery"
    assert isinstance(output, widgets.Output)


def test_a_twin_shows_what_its_run_returns_and_returns_it():
    shown = []

    def run(threads: int = 8, rounds: int = 50):
        return threads * rounds

    twin = views.pinned(run, shown.append, "Multiply, and show it.")
    assert twin(2, rounds=3) == 6 and shown == [6]
    assert twin.__doc__ == "Multiply, and show it." and twin.__wrapped__ is run


def test_compact_items_fit_a_page_and_keep_what_tells_the_story():
    from idem.explore import scenarios as sc

    outcome = sc.run(sc.Scenario("keyed", "after_charge", "once"))
    frame = views.compact_items(outcome.items)
    assert list(frame.columns) == ["item", "status", "holds"]
    assert len(frame) == len(outcome.items)
    assert frame["item"].str.len().max() <= 24
    done = frame[frame["status"] == "done"].iloc[0]
    assert "charged ch_000001" in done["holds"] and "owner=" in done["holds"]
    # nothing said twice: the charge is in the result; a done record's lease ended with its commit
    assert "charge_id=" not in done["holds"] and "lease_until=" not in done["holds"]


def test_outcome_columns_say_what_they_count():
    from idem.explore import scenarios as sc

    outcome = sc.run(sc.Scenario("naive", "after_charge", "once"))
    row = views.outcome_frame([outcome]).iloc[0]
    assert set(views.OUTCOME_COLUMNS.values()) <= set(row.index)
    assert not set(views.OUTCOME_COLUMNS) & set(row.index), "an old, vague name is still there"
    # the provider charged twice, the ledger recorded once, over two invocations; naive writes
    # the ledger, and its DynamoDB calls count that write
    assert (row["charges"], row["ledger_charges"], row["invocations"]) == (2, 1, 2)
    assert (row["in_failure_queue"], row["record_status"], row["dynamodb_calls"]) == (0, "-", 1)
    assert list(views.result_frame([outcome]).columns) == list(views.RESULT_COLUMNS)


def test_a_timeline_has_a_legend_entry_for_each_mark_it_draws():
    from idem.explore import scenarios as sc

    fig = views.timeline(sc.run(sc.Scenario("naive", "after_charge", "once")))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert views.OUTCOME_LABELS["ok"] in labels and views.OUTCOME_LABELS["error"] in labels
    assert views.OUTCOME_LABELS["crash"] not in labels  # only what the run drew
    assert "money moved in this invocation" in labels


def test_a_lost_put_names_its_holder_and_claims_cost_what_they_say():
    from idem.sim.world import LocalWorld

    with LocalWorld() as world:
        response = views.lost_put(world, "charge#t", holder="someone")
        assert response["Error"]["Code"] == "ConditionalCheckFailedException"
        assert response["Item"]["owner"] == {"S": "someone"} and "ResponseMetadata" not in response
        costs = {c.approach: c for c in views.claim_costs(world)}
    assert [(c.winner_calls, c.duplicate_calls) for c in costs.values()] == [(1, 1), (1, 1), (2, 1)]
    assert costs["conditional put, ALL_OLD"].duplicate_learns == "won=False, owner=invocation-a"


# -- pictures (issue 21): a legend on every axes that draws more than one kind of mark ----------
def _kinds_of_mark(ax) -> int:
    """How many kinds of mark an axes draws: scatter sets, lines and bars (patches) each count."""
    kinds = set()
    for collection in ax.collections:
        kinds.add(("scatter", tuple(map(tuple, collection.get_facecolor()[:1]))))
    kinds |= {("line", line.get_color(), line.get_linestyle()) for line in ax.get_lines()}
    kinds |= {("bar", str(patch.get_facecolor()), patch.get_hatch()) for patch in ax.patches}
    return len(kinds)


def _legend_labels(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def _every_marked_axes_has_a_legend(fig) -> list[int]:
    return [n for n, ax in enumerate(fig.axes) if _kinds_of_mark(ax) > 1 and not _legend_labels(ax)]


def test_the_legend_check_can_fail():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.scatter([0], [0])
    ax.plot([0, 1], [0, 1])
    assert _every_marked_axes_has_a_legend(fig) == [0]
    plt.close(fig)


def test_every_panel_of_a_multi_panel_timeline_has_its_legend():
    from idem.explore import scenarios as sc

    poison = [sc.run(sc.Scenario(h, "at_charge", "always")) for h in ("claim_first", "robust")]
    fig = views.timelines(poison)
    assert len(fig.axes) == 2 and _every_marked_axes_has_a_legend(fig) == []
    assert all(views.OUTCOME_LABELS["error"] in _legend_labels(ax) for ax in fig.axes)


def test_the_lease_timelines_name_the_crash_marker_and_the_lease():
    from idem.explore import scenarios as sc

    runs = [sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=t)) for t in (30, 900)]
    fig = views.lease_timelines(*runs)
    assert _every_marked_axes_has_a_legend(fig) == []
    for ax in fig.axes:
        labels = _legend_labels(ax)
        assert views.OUTCOME_LABELS["crash"] in labels and "lease" in labels


def test_the_record_life_chart_shows_an_expired_record_ttl_has_not_swept_yet():
    from idem.lessons.auditing import expiry

    late = [expiry.late_duplicate("robust", ttl_seconds=600, delay=7200),
            expiry.late_duplicate("robust", ttl_seconds=600, delay=7200, swept=True)]
    fig = views.record_life_chart(late)
    ax = fig.axes[0]
    assert "expired, not yet deleted by TTL" in _legend_labels(ax)
    faded = [p for p in ax.patches if p.get_hatch() == ".."]
    assert len(faded) == 1  # only the unswept run: the record is still there at two hours
    assert faded[0].get_x() <= 600 / 3600 + 1e-9 and faded[0].get_x() + faded[0].get_width() >= 2


def test_a_sequence_chart_names_the_cross_of_a_lost_answer():
    from idem.explore import scenarios as sc

    fig = views.sequence_chart(sc.run(sc.Scenario("naive", "after_charge", "once")))
    assert "the request, or its answer, never arrived" in _legend_labels(fig.axes[0])


def test_the_reconciliation_report_cells_fit_uncut():
    from idem.core.reconcile.audit import Report

    frame = views.report_frame(Report("idem-uploads", 0.0))
    assert list(frame.columns) == ["finding", "what", "detail"]
    assert views.tables._object_name("s3://idem-uploads/carol/order-0103.csv?versionId=abc") == "carol/order-0103.csv"
    assert views.tables._object_name("idem-uploads/dave/order-0104.csv#773a") == "dave/order-0104.csv"
    # a record keyed per order names its order, not its bucket
    assert views.tables._object_name("dave#order#dave-order-0104") == "order dave-order-0104"


def test_show_lines_reads_a_module_without_importing_it():
    shown = views.show_lines("idem.sim.powertools_handler", "PRICE_CENTS").data
    assert shown.startswith("```python\nPRICE_CENTS = 500") and "def book_once" in shown
    assert "os.environ" in shown


# -- cells shown whole (issue 21: no cut cell in a stored output) ---------------------------------
def test_a_whole_frame_shows_a_long_cell_uncut_where_a_plain_frame_cuts_it():
    import pandas as pd

    long = "InjectedFault: injected failure before provider:charge (arrival 1)"
    assert "..." in pd.DataFrame({"result": [long]})._repr_html_()  # the check can fail
    frame = views.Whole({"attempt": [1], "result": [long]})
    for shown in (frame._repr_html_(), repr(frame), frame[["result"]]._repr_html_(), repr(frame.T)):
        assert long in shown and "..." not in shown
    assert type(frame[["result"]]) is views.Whole and type(frame.T) is views.Whole
    assert pd.get_option("display.max_colwidth") == 50  # no global option was changed


def test_the_views_that_cut_cells_before_show_them_whole():
    from idem.lessons.scribes import key_stories

    stories = views.stories_frame()
    assert isinstance(stories, views.Whole)
    assert all(s.note in stories._repr_html_() for s in key_stories.STORIES.values())
    items = [{"pk": "charge#x", "status": "done", "owner": "o" * 40, "lease_until": 0,
              "account": "alice", "cents": 500, "charge_id": "ch_000001", "booked_at": 0,
              "result": {"status": "charged", "charge_id": "ch_000001", "account": "alice"}}]
    for frame in (views.compact_items(items), views.items_frame(items).T):
        assert isinstance(frame, views.Whole) and "..." not in frame._repr_html_()


def test_chapter_08s_unit_check_points_to_the_rule_and_states_neither_rule_nor_number():
    from idem.sim.world import LocalWorld

    with LocalWorld() as world:
        right = views.check_units({"put a 2.5 KB item": 3, "put it again, condition failing": 3,
                                   "transaction putting two 600-byte items": 4}, world.dynamodb)
        blank = views.check_units(dict.fromkeys(views.EXAMPLES), world.dynamodb)
        wrong = views.check_units(dict.fromkeys(views.EXAMPLES, 2.5), world.dynamodb)
    assert right.count("right") == 3
    assert blank.startswith("No answer yet") and "says" not in blank and "rounds up to" not in blank
    assert wrong.count("not 2.5") == 3 and wrong.count("whole numbers") == 3 and wrong.count("?") >= 3
    # the hints once stated each rule ("rounded up to whole KB", "on the larger of the stored item
    # and the new one", "writes every item twice"): the list above states them, the hint only points
    for stated in ("rounded up", "larger", "twice", "3", "4"):
        assert stated not in wrong, stated
    assert all(len(line) <= 100 for line in wrong.splitlines())
    assert "has no prediction" in views.check_units({}, None)


def test_show_json_hides_the_named_fields_at_any_depth_and_leaves_the_value_alone():
    event = {"Records": [{"eventName": "ObjectCreated:Put", "userIdentity": {"principalId": "X"}}],
             "userIdentity": "top"}
    text = views.show_json(event, hide=("userIdentity",)).data
    assert '"userIdentity": "..."' in text and "principalId" not in text and '"top"' not in text
    assert '"eventName": "ObjectCreated:Put"' in text and text.startswith("```json\n")
    assert event["Records"][0]["userIdentity"] == {"principalId": "X"}  # the caller's value is untouched


def test_fields_frame_and_items_by_handler_label_every_row():
    from dataclasses import dataclass
    from types import SimpleNamespace

    @dataclass
    class Name:
        raw: str
        decoded: str

    frame = views.fields_frame(Name("a+b", "a b"))
    assert list(frame.columns) == ["field", "value"] and frame.values.tolist() == [["raw", "a+b"], ["decoded", "a b"]]
    runs = [SimpleNamespace(scenario=SimpleNamespace(handler=h), items=items) for h, items in
            (("naive", [{"pk": "account#alice", "cents": 500, "charges": 1}]),
             ("claim_first", [{"pk": "charge#k", "status": "claimed"}, {"pk": "charge#j", "status": "claimed"}]))]
    table = views.items_by_handler(runs)
    assert list(table.columns) == ["handler", "item", "status", "holds"]
    assert table["handler"].tolist() == ["naive", "claim_first", "claim_first"]
    assert table["item"].tolist() == ["account#alice", "charge#k", "charge#j"]


def test_a_lesson_names_its_columns_and_gets_how_each_scenario_was_set_up_beside_what_it_counted():
    """`columns=` keeps pandas out of the chapters: the named columns, in that order, including how a
    scenario was set up (SCENARIO_COLUMNS), and a KeyError for a column nobody holds."""
    from idem.explore import scenarios as sc
    from idem.views import tables

    runs = [sc.run(sc.Scenario("naive", "after_charge", "once", how=how, timeout=30)) for how in ("exception", "crash")]
    frame = tables.outcome_frame(runs, columns=("how", "timeout", "containers", "charges", "verdict"))
    assert list(frame.columns) == ["how", "timeout", "containers", "charges", "verdict"]
    assert list(frame["how"]) == ["exception", "crash"] and list(frame["timeout"]) == [30, 30]
    assert list(frame["containers"]) == ["reused", "reused"] and list(frame["charges"]) == [2, 2]
    assert list(tables.attempts_frame(runs[0], columns=("attempt", "outcome")).columns) == ["attempt", "outcome"]
    with pytest.raises(KeyError):
        tables.outcome_frame(runs, columns=("no such column",))
