"""Chapter 11's exercise solution, as the chapter prints it, really holds: the solution's code is
read out of the chapter's source (so an edit there is checked here), put under the given handler's
module header, and run through the check the chapter asks for."""
from __future__ import annotations

import sys
from pathlib import Path

from idem.explore.check import check_handler

CHAPTER = Path(__file__).resolve().parent.parent / "notebooks" / "source" / "11_check_your_own_handler.py"


def _solution_module() -> str:
    text = CHAPTER.read_text()
    start = text.index("# %%writefile scratch/broken_handler.py\n") + len("# %%writefile scratch/broken_handler.py\n")
    header = text[start:text.index("\ndef lambda_handler", start)]  # imports, price, make_provider
    opened = text.index("# ```python\n", text.index("<summary>Solution</summary>")) + len("# ```python\n")
    block = text[opened:text.index("# ```\n", opened)]
    code = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in block.splitlines())
    return header + "\n" + code + "\n"


def test_chapter_11s_solution_holds_with_its_books_named(tmp_path, monkeypatch):
    (tmp_path / "ch11_solution.py").write_text(_solution_module())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        report = check_handler("ch11_solution:lambda_handler", effects=["dynamodb:UpdateItem"], retries=(1,))
    finally:
        sys.modules.pop("ch11_solution", None)
    assert report.holds, report.explain()
    assert report.tally().get("exactly_once", 0) > 0


def test_the_exercises_handler_breaks_so_the_prediction_has_something_to_find(tmp_path, monkeypatch):
    text = CHAPTER.read_text()
    start = text.index("# %%writefile scratch/keyed.py\n") + len("# %%writefile scratch/keyed.py\n")
    (tmp_path / "ch11_given.py").write_text(text[start:text.index("\n# %%", start)])
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        report = check_handler("ch11_given:lambda_handler", effects=["dynamodb:UpdateItem"], retries=(1,))
    finally:
        sys.modules.pop("ch11_given", None)
    assert not report.holds


def test_chapter_11s_solution_reads_an_unversioned_bucket_without_a_keyerror(tmp_path, monkeypatch):
    """An unversioned bucket's records carry no versionId: the solution reads the order file only
    while its eTag matches (IfMatch), so no schedule there ends in the failure queue but one: a
    second order written over the first before the first was read, whose bytes are gone (failing
    closed: nothing charged, the event in the failure queue with its reason: failed visibly, never
    a charge of the wrong order)."""
    (tmp_path / "ch11_unversioned.py").write_text(_solution_module())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        report = check_handler("ch11_unversioned:lambda_handler", effects=["dynamodb:UpdateItem"],
                               retries=(0,), versioning=("unversioned",))
    finally:
        sys.modules.pop("ch11_unversioned", None)
    assert report.holds, report.explain()
    overwrites = [r for r in report.results if r.schedule.overwrite == "unversioned"]
    assert overwrites and all(r.dlq == 0 for r in overwrites if r.schedule.second == "retried_put")
    lost = [r for r in overwrites if r.dlq]
    assert len(lost) < len(overwrites) and all(
        r.schedule.second == "order" and str(r.schedule.copy_at) == "before s3:GetObject"
        and r.verdict == "failed_visibly" for r in lost), [(r.schedule, r.dlq, r.verdict) for r in lost]
