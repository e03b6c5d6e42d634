"""Code and text as the chapters show them: syntax-highlighted blocks."""
from __future__ import annotations

import inspect
import textwrap
from typing import Any

from IPython.display import Markdown


def show_source(*objects: Any) -> Markdown:
    """The real source of idem functions, classes or modules, syntax-highlighted."""
    parts = [textwrap.dedent(inspect.getsource(obj)).rstrip() for obj in objects]
    return Markdown("```python\n" + "\n\n\n".join(parts) + "\n```")


def show_text(text: str, language: str = "") -> Markdown:
    """Any text (a template excerpt, a JSON message) as a highlighted block."""
    return Markdown(f"```{language}\n{text.rstrip()}\n```")

