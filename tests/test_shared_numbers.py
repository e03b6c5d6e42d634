"""A number two chapters state is defined once in idem (idem/lessons/facts.py): every place that
writes it must write that number, so two chapters cannot differ."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from idem.lessons.facts import FACTS, Fact

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks" / "source").glob("[0-9][0-9]_*.py"))
GLOSSARY = ROOT / "docs" / "glossary.md"


def _texts() -> dict[str, str]:
    texts = {p.stem[:2]: " ".join(line.lstrip("# ").strip() for line in p.read_text(encoding="utf-8").splitlines())
             for p in SOURCES}
    texts["glossary"] = GLOSSARY.read_text(encoding="utf-8")
    return texts


def mentions(fact: Fact, texts: dict[str, str]) -> list[tuple[str, str]]:
    """(where, the number as written) for each phrase of the fact found in the texts."""
    found = []
    for phrase in fact.phrases:
        before, after = (re.escape(part) for part in phrase.split("{}"))
        pattern = re.compile(before + r"([\d,]+|[a-z]+)" + after)
        for where, text in texts.items():
            found += [(where, m.group(1)) for m in pattern.finditer(text)]
    return found


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_every_chapter_states_the_shared_number_as_idem_defines_it(fact):
    found = mentions(fact, _texts())
    assert len({where for where, _ in found}) >= 2, f"{fact.name}: stated in fewer than two places: {found}"
    wrong = [(where, written) for where, written in found if written not in fact.spellings()]
    assert wrong == [], f"{fact.name} is {fact.value} ({fact.source}); written otherwise in {wrong}"


def test_the_check_catches_a_chapter_that_differs():
    fact = FACTS[0]
    texts = {"06": "Stripe may prune a key once it is 24 hours old.", "11": "The key guards the first 48 hours."}
    found = mentions(fact, texts)
    assert ("11", "48") in found and ("11", "48") not in [(w, s) for w, s in found if s in fact.spellings()]


def test_the_facts_carry_their_sources():
    assert all(f.source.startswith("https://") for f in FACTS)
    assert {f.value for f in FACTS} >= {24, 255, 6, 2, 900}
