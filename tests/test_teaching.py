"""The chapters read as a course: terms in order, short sentences, outputs a reader can take in.

The measures live in tools/teaching.py (`python tools/teaching.py` prints them per chapter).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import teaching  # noqa: E402

CHAPTERS = teaching.chapters()


def test_the_glossary_lists_terms_in_the_order_of_their_chapters():
    terms = teaching.glossary()
    assert len(terms) >= 30
    assert [t.chapter for t in terms] == sorted(t.chapter for t in terms)
    assert all(0 <= t.chapter < len(CHAPTERS) for t in terms)


def test_no_chapter_uses_a_term_before_the_chapter_that_defines_it():
    assert teaching.early_uses() == []


def test_every_term_is_written_in_bold_where_its_chapter_defines_it():
    assert teaching.undefined_terms() == []


def test_the_glossary_check_catches_an_early_use():
    """The check can fail: a term placed after its first use is reported."""
    late = teaching.Term("verdict", 5, (r"verdicts?",))
    assert any("00_start_here uses 'verdict'" in p for p in teaching.early_uses([late]))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_sentences_are_short(path):
    report = teaching.prose_report(path)
    assert report.mean_words <= teaching.MEAN_WORDS, f"{report.mean_words} words per sentence on average"
    assert report.long == [], f"sentences over {teaching.MAX_WORDS} words"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_goal_is_one_short_sentence(path):
    report = teaching.prose_report(path)
    assert report.goal, "no bold goal line under the title"
    assert report.goal_words < teaching.GOAL_WORDS, report.goal
    assert len(teaching.sentences(report.goal)) == 1, report.goal


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_title_asks_the_chapters_one_question(path):
    first = teaching.text_of(teaching.cells(path)[0])
    questions = [line for line in first.splitlines() if line.strip().endswith("?")]
    assert len(questions) == 1, "the first cell states exactly one question"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_output_drowns_the_page(path):
    assert [str(o) for o in teaching.oversized_outputs(path)] == []


def test_the_measures_can_fail():
    long = "word " * 41 + "."
    assert [len(teaching.words(s)) for s in teaching.sentences(long + " Short one.")] == [41, 2]
    assert teaching.sentences("| a | table |\n```\ncode. More code.\n```\nOne. Two.") == ["One.", "Two."]
    html = "<table><thead><tr><th>" + "</th><th>".join(["x" * 30] * 5) + "</th></tr></thead>" \
           + "<tbody>" + "<tr><td>1</td></tr>" * 26 + "</tbody></table>"
    assert teaching.table_shape(html) == (26, 165)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_links_to_the_glossary(path):
    markdown = "\n".join(teaching.text_of(c) for c in teaching.cells(path) if c["cell_type"] == "markdown")
    assert "](../docs/glossary.md)" in markdown
