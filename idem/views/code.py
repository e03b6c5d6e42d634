"""Code and text as the chapters show them: syntax-highlighted blocks."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import pkgutil
import contextlib
import io
import sys
import textwrap
from types import ModuleType
from pathlib import Path
from typing import Any, Iterator

from IPython.display import Markdown

from ..console import fold_report


def show_source(*objects: Any) -> Markdown:
    """The real source of idem functions, classes or modules, syntax-highlighted."""
    parts = [textwrap.dedent(inspect.getsource(obj)).rstrip() for obj in objects]
    return Markdown("```python\n" + "\n\n\n".join(parts) + "\n```")


def show_lines(module: str, start: str, end: str = "") -> Markdown:
    """The source of `module` (a dotted name: read from its file, not imported, so a module
    that reads its settings at import shows as well) from the line that starts with `start`
    up to (not including) the line that starts with `end`, or to the end of the file."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ValueError(f"no module {module}")
    lines = Path(spec.origin).read_text(encoding="utf-8").splitlines()
    first = next((n for n, line in enumerate(lines) if line.startswith(start)), None)
    if first is None:
        raise ValueError(f"no line of {module} starts with {start!r}")
    last = next((n for n, line in enumerate(lines[first + 1:], first + 1)
                 if end and line.startswith(end)), len(lines))
    return Markdown("```python\n" + "\n".join(lines[first:last]).rstrip() + "\n```")


def find_calls(package: ModuleType, keyword: str, callee: str = "",
               prefix: str = "") -> list[tuple[str, str, str]]:
    """Every call that passes `keyword` in the modules of `package` (or in the one module given)
    whose name starts with `prefix`: as a keyword argument (`keyword=...`) or as a key of a dict
    argument (`options={"keyword": ...}`), to a function or method named `callee` (any, if "").
    Each as (file, enclosing function, the statement's source). Found by name in the parsed
    source, so the call is found wherever a refactor moves it."""
    modules = [package]
    if hasattr(package, "__path__"):
        modules += [importlib.import_module(f"{package.__name__}.{info.name}")
                    for info in pkgutil.iter_modules(package.__path__) if info.name.startswith(prefix)]
    found: list[tuple[str, str, str]] = []
    for module in modules:
        path = Path(inspect.getsourcefile(module) or "")
        text = path.read_text(encoding="utf-8")
        lines, tree = text.splitlines(), ast.parse(text)
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        simple = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not hasattr(n, "body")]
        for call in ast.walk(tree):
            func = getattr(call, "func", None)
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            if not (isinstance(call, ast.Call) and (not callee or name == callee) and _passes(call, keyword)):
                continue
            inside = [n for n in simple if n.lineno <= call.lineno and call.end_lineno <= (n.end_lineno or 0)]
            statement = min(inside, key=lambda n: (n.end_lineno or 0) - n.lineno) if inside else call
            owners = [f for f in functions if f.lineno <= call.lineno <= (f.end_lineno or 0)]
            owner = min(owners, key=lambda f: (f.end_lineno or 0) - f.lineno).name if owners else "<module>"
            source = textwrap.dedent("\n".join(lines[statement.lineno - 1:statement.end_lineno]))
            if (entry := (_relative(path), owner, source)) not in found:
                found.append(entry)
    return found


def _passes(call: ast.Call, keyword: str) -> bool:
    if any(k.arg == keyword for k in call.keywords):
        return True
    values = list(call.args) + [k.value for k in call.keywords]
    return any(isinstance(d, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == keyword for k in d.keys)
               for v in values for d in ast.walk(v))


def _relative(path: Path) -> str:
    parts = path.parts
    return "/".join(parts[parts.index("idem"):]) if "idem" in parts else path.name


def show_call(package: ModuleType, keyword: str, callee: str = "", prefix: str = "") -> Markdown:
    """The real statements that pass `keyword` to a call in `package`'s modules, each under a
    comment naming its file and function (see `find_calls`)."""
    found = find_calls(package, keyword, callee, prefix)
    if not found:
        raise ValueError(f"no call passes {keyword} in {package.__name__} ({prefix or 'every'} module)")
    parts = [f"# {path}, in {function}()\n{source}" for path, function, source in found]
    return Markdown("```python\n" + "\n\n".join(parts) + "\n```")


def show_text(text: str, language: str = "") -> Markdown:
    """Any text (a template excerpt, a JSON message) as a highlighted block."""
    return Markdown(f"```{language}\n{text.rstrip()}\n```")


def _hidden(value: Any, hide: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: "..." if k in hide else _hidden(v, hide) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v, hide) for v in value]
    return value


def show_json(value: Any, hide: tuple[str, ...] = ()) -> Markdown:
    """A JSON value (an event, a message Lambda sent) as a highlighted block; every field named
    in `hide`, at any depth, is shown as "..." (the value itself is left untouched)."""
    return show_text(json.dumps(_hidden(value, tuple(hide)), indent=2), "json")


WIDTH = 96  # explanations wrap here, to fit the page
#: Why a handler breaks, by verdict: what a schedule with that verdict says about the code.
BREAK_REASONS = {
    "double_charge": "a retry or a copy charged again. The provider cannot tell it is the same "
                     "request: pass it an idempotency key made from the order, the same on every attempt.",
    "double_effect": "an effect you named happened twice: a retry repeated it after the answer was lost. "
                     "Make that write conditional, so it lands once per charge.",
    "silent_mismatch": "money moved, the books never heard, and nothing alerts. The books can be lost after "
                       "the charge: every attempt that reaches the charge must also reach the books.",
    "silent_loss": "no money moved and nothing alerts. A claim taken before the work stands down forever: "
                   "the retry finds it and skips work that never happened.",
}
#: The families that send an order again a day or more later (idem.explore.families.timed, sqs_timed).
DAYS_LATER_FAMILIES = ("late", "again")
#: A double charge seen only there: the key is right, and Stripe has forgotten it.
PAST_KEY_WINDOW_REASON = (
    "the order came again a day or more later and was charged again. Stripe keeps an idempotency "
    "key for 24 hours, so the key alone guards one day: keep each order's first attempt, with its "
    "time, in your own table, and look an order older than about 23 hours up at Stripe before "
    "charging it, or leave it to a person.")


def explain_breaks(report: Any) -> str:
    """What a check report (`idem.explore.report.check_report.CheckReport`) says about the handler: for each kind of
    break, how often, the smallest schedule it happened in, and what that means."""
    if report.holds:
        return textwrap.fill(f"holds: in all {len(report.results)} schedules every effect happened as "
                             "often as in the clean run, or the failure queue shows what did not.", WIDTH)
    lines = [f"breaks in {len(report.broken)} of {len(report.results)} schedules:"]
    for verdict, n in report.tally().items():
        if verdict not in BREAK_REASONS:
            continue
        smallest = report.smallest(verdict)
        why = BREAK_REASONS[verdict]
        if verdict == "double_charge" and all(r.schedule.dimension in DAYS_LATER_FAMILIES
                                              for r in report.broken if r.verdict == verdict):
            why = PAST_KEY_WINDOW_REASON
        reason = f"- {verdict} ({n}): {why}"
        lines += [textwrap.fill(reason, WIDTH, subsequent_indent="  "),
                  f"  smallest: {smallest.schedule.label()}"]
    return "\n".join(lines)


def fold(line: str, width: int = 96) -> str:
    """One long line (a JSON log line, say) wrapped to the page, its continuation indented."""
    return textwrap.fill(line, width, subsequent_indent="    ", break_long_words=True,
                         break_on_hyphens=False)


def say_folded(line: str) -> None:
    """Print one line of a deploy's report folded to the page:
    `MotoDeployment(..., say=views.say_folded)`."""
    print(fold_report(line))


@contextlib.contextmanager
def folded_output(width: int = 96) -> Iterator[None]:
    """Print what the block prints (a handler's log lines) folded to the page's width."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        yield
    for line in printed.getvalue().splitlines():
        print(fold(line, width) if line else line, file=sys.stdout)


def template_lines(*starts: str) -> Markdown:
    """The lines of template.yaml that start with each of `starts` (after their indent), as YAML:
    a template's one-line entries, such as its Transform or a condition, shown where a chapter
    explains them."""
    from ..deploy.template import TEMPLATE

    lines = TEMPLATE.read_text(encoding="utf-8").splitlines()
    found = []
    for start in starts:
        line = next((line for line in lines if line.lstrip().startswith(start)), None)
        if line is None:
            raise ValueError(f"no line of template.yaml starts with {start!r}")
        found.append(line.strip())
    return show_text("\n".join(found), "yaml")
