"""The list items of a knowledge base's sections about one thing (places, a trade's vocabulary): the
items under a heading that names it and under its sub-headings, with the group each stands in."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

_HEADING_RE = re.compile(r"^\s*(#{1,6})\s+(.+?)\s*#*\s*$")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)、])\s+(.+?)\s*$")


def list_items_under(
    markdown: str,
    heading_re: re.Pattern[str],
    *,
    heading: str = "",
    group_of: Callable[[str, bool], str] = lambda title, _top: title,
) -> Iterator[tuple[str, str]]:
    """(group, item text without Markdown emphasis) for each list item under a heading `heading_re`
    finds, or under one of its sub-headings. `heading`: the heading of a section given without it.
    `group_of(title, top)` names the group a heading's items stand in (`top`: the matching heading
    itself, else a sub-heading)."""
    level: int | None = 0 if heading and heading_re.search(heading) else None
    group = group_of(heading, True) if level is not None else ""
    for line in markdown.splitlines():
        found = _HEADING_RE.match(line)
        if found:
            depth, title = len(found.group(1)), found.group(2)
            if level is not None and depth > level:
                group = group_of(title, False)
            else:
                level = depth if heading_re.search(title) else None
                group = group_of(title, True) if level is not None else ""
            continue
        item = _LIST_ITEM_RE.match(line)
        if level is not None and item is not None:
            yield group, re.sub(r"[*_`]", "", item.group(1))


__all__ = ["list_items_under"]
