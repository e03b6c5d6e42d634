"""idem.views: one explorer factory behind every widget, and the names the chapters use."""
from __future__ import annotations

import re
from pathlib import Path

import ipywidgets as widgets

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
