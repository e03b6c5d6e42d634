"""Chapter 03's views: the upload stories, how an object name is decoded, and the grid of
recipes against stories with a legend for its colours."""
from __future__ import annotations

from typing import Any, Iterable
from urllib.parse import unquote, unquote_plus

import pandas as pd
from matplotlib.patches import Patch

from ..lessons.scribes import key_stories
from .charts import STORY_COLOURS, story_grid
from .tables import Whole

#: What each colour of the grid means, in the legend's words.
GRID_MEANINGS = {"right": "right: each upload charged once",
                 "extra": "extra: a repeat charged again",
                 "missed": "missed: an upload never charged"}


def stories_frame(stories: Iterable[key_stories.Story] | None = None) -> pd.DataFrame:
    """One row per upload story: what is uploaded, how many events arrive, what happens."""
    stories = key_stories.STORIES.values() if stories is None else stories
    return Whole([{"story": s.title, "uploads": len(s.uploads), "events arriving": len(s.deliveries),
                          "what happens": s.note} for s in stories])


def decoding_frame(fields: Iterable[str]) -> pd.DataFrame:
    """Each object key as an event may carry it, decoded with `unquote` and `unquote_plus`."""
    return pd.DataFrame([{"key field in the event": f, "unquote(field)": unquote(f),
                          "unquote_plus(field)": unquote_plus(f)} for f in fields])


def recipe_grid(runs: Iterable[key_stories.StoryRun], title: str | None = None) -> Any:
    """`story_grid` with a legend: what each colour says about the charges."""
    runs = list(runs)
    fig = story_grid(runs, title)
    ax = fig.axes[0]
    kinds = [k for k in GRID_MEANINGS
             if any((r.extra and k == "extra") or (r.missed and not r.extra and k == "missed")
                    or (not r.extra and not r.missed and k == "right") for r in runs)]
    ax.legend(handles=[Patch(color=STORY_COLOURS[k], label=GRID_MEANINGS[k]) for k in kinds],
              loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(kinds), fontsize=8,
              frameon=False)
    fig.tight_layout()
    return fig


__all__ = ["GRID_MEANINGS", "decoding_frame", "recipe_grid", "stories_frame"]
