"""How readable the chapters are, measured on the stored notebooks.

    python tools/teaching.py [NAME ...]   # a report per chapter: prose, outputs, glossary order

The rules (tests/test_teaching.py holds them):
- prose: the markdown cells, without code blocks, tables, headings, HTML and link targets,
  split into sentences; at most 18 words per sentence on average, none over 40; the goal line
  (the bold line under the title) one sentence under 25 words;
- outputs: no stored text output longer than 25 lines (a line over 120 characters counts as
  the lines it wraps to), no HTML table with more than 25 rows or wider than 140 characters;
- the glossary (docs/glossary.md): no chapter uses a term before the chapter that defines it,
  the defining chapter writes the term in bold where it defines it, and a chapter writes in bold
  only glossary terms (or a lead-in that ends in punctuation, such as "**Next:**").
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GLOSSARY = ROOT / "docs" / "glossary.md"

MEAN_WORDS = 18
MAX_WORDS = 40
GOAL_WORDS = 25
MAX_LINES = 25
MAX_WIDTH = 120  # characters of text on a line before JupyterLab wraps it
MAX_TABLE_WIDTH = 140  # characters across a table (a laptop's notebook page)


def chapters(names: list[str] | None = None) -> list[Path]:
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if names:
        found = [p for p in found if p.stem in names or p.stem[:2] in names]
    return found


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def text_of(cell: dict) -> str:
    return "".join(cell["source"])


# -- prose ---------------------------------------------------------------------------------------
def prose(markdown: str) -> str:
    """The running text of a markdown cell: no code blocks, tables, headings, HTML or link targets."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    markdown = re.sub(r"<details>.*?</summary>", " ", markdown, flags=re.S)
    markdown = re.sub(r"<[^>]+>", " ", markdown)
    kept = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("|", "#")) or not stripped:
            kept.append("\n")  # a paragraph break
            continue
        if re.match(r"^([*-]|\d+\.)\s", stripped):  # a list item starts a new sentence
            kept.append("\n")
            stripped = re.sub(r"^([*-]|\d+\.)\s+", "", stripped)
        kept.append(stripped)
    text = " ".join(kept)
    text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text)  # [words](target) -> words
    return text.replace("**", "").replace("`", "")


def sentences(markdown: str) -> list[str]:
    found = []
    for paragraph in prose(markdown).split("\n"):
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])", paragraph):
            if words(sentence):
                found.append(sentence.strip())
    return found


def words(sentence: str) -> list[str]:
    return [w for w in sentence.split() if re.search(r"[A-Za-z0-9]", w)]


def goal_line(path: Path) -> str:
    """The bold line under the chapter's title."""
    first = text_of(cells(path)[0])
    match = re.search(r"^\*\*(.+?)\*\*\s*$", first, flags=re.M | re.S)
    return match.group(1).replace("\n", " ") if match else ""


@dataclass
class ProseReport:
    chapter: str
    sentences: int
    mean_words: float
    long: list[str] = field(default_factory=list)  # over MAX_WORDS
    goal: str = ""

    @property
    def goal_words(self) -> int:
        return len(words(self.goal))


def prose_report(path: Path) -> ProseReport:
    found = [s for c in cells(path) if c["cell_type"] == "markdown" for s in sentences(text_of(c))]
    counts = [len(words(s)) for s in found]
    return ProseReport(path.stem, len(found), round(sum(counts) / max(1, len(counts)), 1),
                       [s for s in found if len(words(s)) > MAX_WORDS], goal_line(path))


# -- outputs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Oversize:
    chapter: str
    cell: int  # the code cell's position among all cells
    what: str

    def __str__(self) -> str:
        return f"{self.chapter} cell {self.cell}: {self.what}"


def table_shape(html: str) -> tuple[int, int]:
    """An HTML table's body rows and its width in characters: each column as wide as its
    widest cell, plus three for the padding and the rule between columns."""
    rows = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S)]
    body = len(re.findall(r"<tr", html.split("<tbody", 1)[-1])) if "<tbody" in html else len(rows)
    widths: dict[int, int] = {}
    for row in rows:
        for n, cell in enumerate(row):
            plain = re.sub(r"<[^>]+>|&\w+;", "", cell).strip()
            widths[n] = max(widths.get(n, 0), len(plain))
    return body, sum(w + 3 for w in widths.values())


def output_ignored(cell: dict) -> bool:
    """nbval compares nothing in this cell: its tag (or the older comment marker)."""
    return ("nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])
            or text_of(cell).startswith("# NBVAL_IGNORE_OUTPUT"))


def oversized_outputs(path: Path) -> list[Oversize]:
    found = []
    for number, cell in enumerate(cells(path)):
        if cell["cell_type"] != "code" or output_ignored(cell):
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = "".join(data.get("text/html", ""))
            if html and "<table" in html:
                rows, width = table_shape(html)
                if rows > MAX_LINES:
                    found.append(Oversize(path.stem, number, f"a table of {rows} rows"))
                if width > MAX_TABLE_WIDTH:
                    found.append(Oversize(path.stem, number, f"a table about {width} characters wide"))
                continue
            if "image/png" in data or "application/vnd.jupyter.widget-view+json" in data:
                continue
            text = "".join(output.get("text", "")) or "".join(data.get("text/plain", ""))
            # JupyterLab wraps a long line of text: it takes the room of several.
            lines = sum(max(1, -(-len(line) // MAX_WIDTH)) for line in text.rstrip("\n").splitlines())
            if lines > MAX_LINES:
                found.append(Oversize(path.stem, number, f"{lines} lines of text (long lines wrapped)"))
    return found


def truncated_cells(path: Path) -> list[Oversize]:
    """Table cells pandas cut short: it ends a cell longer than its `max_colwidth` (50) with
    "...". A view that shortens on purpose ends with "\u2026" and is not counted."""
    found = []
    for number, cell in enumerate(cells(path)):
        if cell["cell_type"] != "code" or output_ignored(cell):
            continue
        for output in cell.get("outputs", []):
            html = "".join(output.get("data", {}).get("text/html", ""))
            for td in re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S):
                if td.strip().endswith("..."):
                    found.append(Oversize(path.stem, number, f"a cut cell: {td.strip()[:40]}"))
    return found


# -- the glossary --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    name: str
    chapter: int  # where it is defined
    forms: tuple[str, ...]  # the words that count as a use (regular expressions, case-insensitive)


def glossary() -> list[Term]:
    """The glossary's table rows: | term | chapter | forms | definition |."""
    terms = []
    for line in GLOSSARY.read_text().splitlines():
        match = re.match(r"^\| \*\*(.+?)\*\* \| \[(\d\d)\]", line)
        if match:
            forms = re.search(r"<!-- forms: (.+?) -->", line)
            names = [f.strip() for f in forms.group(1).split(";")] if forms else [match.group(1)]
            terms.append(Term(match.group(1), int(match.group(2)), tuple(names)))
    return terms


def term_pattern(term: Term) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(term.forms) + r")(?![\w-])", re.I)


def visible_text(path: Path) -> str:
    """What a reader sees: markdown, code and the text of every stored output."""
    parts = []
    for cell in cells(path):
        parts.append(text_of(cell))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                continue
            parts.append("".join(output.get("text", "")))
            # a code listing (views.show_source) is stored as markdown: read that, not its repr
            parts.append("".join(data.get("text/markdown", "")) or "".join(data.get("text/html", ""))
                         or "".join(data.get("text/plain", "")))
    return "\n".join(parts)


def early_uses(terms: list[Term] | None = None) -> list[str]:
    """Every use of a term in a chapter before the one that defines it."""
    terms = glossary() if terms is None else terms
    found = []
    for path in chapters():
        # a term may wrap across a line: spaces, newlines and a markdown comment's "# " are one space
        number, text = int(path.stem[:2]), " ".join(visible_text(path).split())
        for term in terms:
            if number < term.chapter:
                match = term_pattern(term).search(text)
                if match:
                    start = max(0, match.start() - 50)
                    context = text[start:match.end() + 30].replace("\n", " ")
                    found.append(f"{path.stem} uses {term.name!r} (defined in {term.chapter:02d}): ...{context}...")
    return found


def undefined_terms(terms: list[Term] | None = None) -> list[str]:
    """Terms whose defining chapter does not write them in bold in its markdown."""
    terms = glossary() if terms is None else terms
    by_number = {int(p.stem[:2]): p for p in chapters()}
    missing = []
    for term in terms:
        path = by_number.get(term.chapter)
        markdown = "\n".join(text_of(c) for c in cells(path) if c["cell_type"] == "markdown") if path else ""
        bold = [" ".join(b.split()) for b in re.findall(r"\*\*(.+?)\*\*", markdown, flags=re.S)]
        pattern = term_pattern(term)
        if not any(pattern.search(b) or pattern.search(b.replace("`", "")) for b in bold):
            missing.append(f"{term.name!r}: chapter {term.chapter:02d} does not define it in bold")
    return missing


#: Bold text that is not a term: navigation, and a lead-in that is a whole sentence or label
#: ("**The key names the work, not the attempt.**", "**Next:**").
NOT_A_TERM = re.compile(r"[.:?!]$")


def bold_phrases(path: Path) -> list[str]:
    """The bold phrases of a chapter's markdown, after its first cell (the title and goal line)."""
    markdown = "\n".join(text_of(c) for c in cells(path)[1:] if c["cell_type"] == "markdown")
    return [b.strip() for b in re.findall(r"\*\*(.+?)\*\*", markdown, flags=re.S)]


def unknown_bold_terms(terms: list[Term] | None = None) -> list[str]:
    """Bold phrases that look like terms (not a sentence or a label ending in punctuation) and
    match no glossary term: a chapter bolds only what the glossary defines."""
    terms = glossary() if terms is None else terms
    patterns = [term_pattern(term) for term in terms]
    found = []
    for path in chapters():
        for phrase in bold_phrases(path):
            plain = " ".join(phrase.split())
            if NOT_A_TERM.search(plain):
                continue
            if not any(p.search(plain) or p.search(plain.replace("`", "")) for p in patterns):
                found.append(f"{path.stem} bolds {plain!r}, which the glossary lacks")
    return found


def main(names: list[str]) -> int:
    for path in chapters(names):
        report = prose_report(path)
        print(f"{report.chapter}: {report.sentences} sentences, {report.mean_words} words on average, "
              f"{len(report.long)} over {MAX_WORDS}; goal {report.goal_words} words")
        for sentence in report.long:
            print(f"   long ({len(words(sentence))}): {sentence[:140]}")
        for oversize in oversized_outputs(path):
            print(f"   output: {oversize}")
    if GLOSSARY.exists():
        for problem in early_uses() + undefined_terms() + unknown_bold_terms():
            if not names or any(problem.startswith(n) for n in names) or problem.startswith("'"):
                print("glossary:", problem)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
