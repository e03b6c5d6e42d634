"""Views for the chapters, by kind: tables (pandas), charts (matplotlib), explorers (ipywidgets),
and code and text shown as highlighted blocks.

Kept apart from the core on purpose: nothing that ships to Lambda imports this package.
Chapters use `from idem import views` and `views.<name>`: every public name of the modules
below is re-exported here.
"""
from __future__ import annotations

from .code import (BREAK_REASONS, explain_breaks, find_calls, fold, fold_report, folded_output, say_folded, show_call, show_json, show_lines,
                   show_source, show_text, template_lines)
from .tables import (OUTCOME_COLUMNS, TIME_ATTRIBUTES, VERDICT_COLOURS, Styled, Whole, attempts_frame, colour_key, attempts_of,
                     compact_items, fields_frame, footprints_frame, invocations_frame, items_by_handler,
                     items_frame, late_frame,
                     matrix_table, outcome_frame, report_frame, rows_frame, schedule_frame, verdicts_frame)
from .charts import (DELAY_CHOICES, LEASE_COLOUR, OUTCOME_LABELS, OUTCOME_MARKERS, RACE_COLOURS,
                     STORY_COLOURS, TTL_CHOICES, bench_chart, duration, lease_timeline, lease_timelines,
                     race_chart, timeline_legend, record_life_chart, story_grid, timeline, timelines)
from .audit import booked_frame, charged_frame, fix_frame
from .recipes import GRID_MEANINGS, decoding_frame, recipe_grid, stories_frame
from .widgets import (FAULTS, PATTERN_BOOKS, REPLAYS, HandlerChoices, Replay, check_explorer, copy_explorer,
                      explore, explore_check, explore_copy, explore_fault, explore_late_duplicate,
                      explore_zombie, explorer, fault_explorer, late_duplicate_explorer, make_explorer,
                      pinned, race_explore, race_explorer, replay_options, run_fault, run_race, run_replay,
                      run_scenario, run_zombie, show_copy, show_late_duplicate, show_outcomes, show_race,
                      show_replay, show_scenario, show_story, show_zombie, story_explore, story_explorer,
                      zombie_explorer)
from .intro import (RESULT_COLUMNS, ClaimCost, claim_costs, explore_outcome, lost_put, outcome_explorer,
                    result_frame, show_outcome)
from .cost import (CASE_COLOURS, CASE_LABELS, EXAMPLES, PART_COLOURS, bill_chart, bill_frame, bill_summary, designs_chart,
                   designs_frame, itemise_design, itemise_designs, meter_examples, check_units, EXAMPLE_HINTS, price_note, receipt_lines,
                   scratch_table, sized_item, units_table)
from .ship import (CHOICES, SYSTEMS, check_choices, pattern_rows, pattern_table, recommend, recommend_explore, recommend_explorer)
from .local_aws import (check_event_age, crossings_frame, lock_chart, lock_races, powertools_reads, probe_moto, run_runtime, runtime_explore, runtime_explorer)
from .sequence import (KINDS, Message, Sequence, attempt_name, sequence_chart, sequence_of, show_code,
                       source_without_docstring)

__all__ = [
    # code and text
    "BREAK_REASONS", "explain_breaks", "find_calls", "fold", "fold_report", "folded_output", "say_folded", "show_call", "show_json", "show_lines", "show_source", "show_text", "template_lines",
    # tables
    "OUTCOME_COLUMNS", "TIME_ATTRIBUTES", "VERDICT_COLOURS", "Styled", "Whole", "attempts_frame", "colour_key", "attempts_of",
    "compact_items", "fields_frame", "footprints_frame", "invocations_frame", "items_by_handler", "items_frame", "late_frame", "matrix_table",
    "outcome_frame", "report_frame", "rows_frame", "schedule_frame", "verdicts_frame",
    # charts
    "DELAY_CHOICES", "LEASE_COLOUR", "OUTCOME_LABELS", "OUTCOME_MARKERS", "RACE_COLOURS", "STORY_COLOURS",
    "TTL_CHOICES", "bench_chart", "duration", "lease_timeline", "lease_timelines", "race_chart",
    "record_life_chart", "story_grid", "timeline", "timeline_legend", "timelines",
    "booked_frame", "charged_frame", "fix_frame",  # audit: the readers' answers
    "GRID_MEANINGS", "decoding_frame", "recipe_grid", "stories_frame",  # chapter 03's recipes
    # explorers and their twins
    "FAULTS", "PATTERN_BOOKS", "REPLAYS", "HandlerChoices", "Replay", "check_explorer",
    "copy_explorer", "explore", "explore_check", "explore_copy", "explore_fault",
    "explore_late_duplicate", "explore_zombie", "explorer", "fault_explorer",
    "late_duplicate_explorer", "make_explorer", "pinned", "race_explore", "race_explorer", "replay_options",
    "run_fault", "run_race", "run_replay", "run_scenario", "run_zombie", "show_copy",
    "show_late_duplicate", "show_outcomes", "show_race", "show_replay", "show_scenario",
    "show_story", "show_zombie", "story_explore", "story_explorer", "zombie_explorer",
    # the first chapters (intro)
    "RESULT_COLUMNS", "ClaimCost", "claim_costs", "explore_outcome", "lost_put", "outcome_explorer", "result_frame", "show_outcome",
    "CASE_COLOURS", "CASE_LABELS", "EXAMPLES", "PART_COLOURS", "bill_chart", "bill_frame", "bill_summary", "designs_chart", "designs_frame", "itemise_design", "itemise_designs", "meter_examples", "check_units", "EXAMPLE_HINTS", "price_note", "receipt_lines", "scratch_table", "sized_item", "units_table",  # cost
    "CHOICES", "SYSTEMS", "check_choices", "check_event_age", "crossings_frame", "lock_chart", "lock_races", "pattern_rows", "pattern_table", "powertools_reads", "probe_moto", "recommend", "recommend_explore", "recommend_explorer", "run_runtime", "runtime_explore", "runtime_explorer",  # chapter 11 (ship) and chapter 12 (local_aws)
    # sequence diagrams of a run
    "KINDS", "Message", "Sequence", "attempt_name", "sequence_chart", "sequence_of", "show_code",
    "source_without_docstring",
]
