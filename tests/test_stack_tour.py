"""Chapter 09's tour of the stack: template.yaml's own text, its linters' suppressions left in
the template, and the alarms as the production profile makes them."""
from __future__ import annotations

from idem.deploy import template as tp
from idem.lessons.shipping import stack_tour


def test_a_listing_keeps_the_template_text_but_not_the_lint_suppressions():
    whole = tp.section("ChargeFunction")
    shown = stack_tour.resource("ChargeFunction")
    assert "checkov:" in whole and "cfn-lint:" in whole
    assert "checkov" not in shown and "cfn-lint" not in shown and "CKV_AWS" not in shown
    assert "BuildMethod: makefile" in shown  # the rest of Metadata stays
    assert all(line in whole.splitlines() for line in shown.splitlines())  # nothing rewritten
    assert stack_tour.lint_lines("ChargeFunction") > 0


def test_keep_shows_the_named_properties_and_names_the_rest():
    shown = stack_tour.resource("UploadBucket", keep=("VersioningConfiguration",))
    assert "VersioningConfiguration:" in shown and "LifecycleConfiguration:" not in shown
    named = shown[shown.index("more in template.yaml:"):]  # the closing comment, wrapped to the page
    assert "LifecycleConfiguration" in named and all(line.lstrip().startswith("#") for line in named.splitlines()[1:])
    assert "Metadata:" not in shown  # only a lint block was in it


def test_the_production_alarms_include_the_parked_orders_count():
    rows = {r["alarm"]: r for r in stack_tour.alarm_rows("prod")}
    assert rows["NeedsAttentionAlarm"]["watches"] == "Idem needs_attention"
    assert rows["NeedsAttentionAlarm"]["fires when"] == "> 0"
    assert "ChargeErrorsAlarm" in rows and "DeclinedAlarm" in rows
