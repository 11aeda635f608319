"""ui.format.md: data and model text made inert for Streamlit's Markdown."""

from __future__ import annotations

import re

from ui.format import md


def test_md_escapes_every_markdown_construct_and_breaks_autolinks() -> None:
    planted = (
        "![s](http://h/x?pan=A) [l](https://h) **b** <img src=x> :red[x] $x$ # h www.h.com a@b.c"
    )
    escaped = md(planted)
    # every ASCII punctuation character is preceded by a backslash
    assert not re.search(r"(?<!\\)[!\[\]()*<>:$#@]", escaped.replace("\\\\", ""))
    assert "http\\:\u2060\\/\\/" in escaped and "www\u2060\\." in escaped
    assert "\u2060\\@" in escaped
    # what a reader sees (escapes resolved, joiners invisible) is the original text
    assert re.sub(r"\\(.)", r"\1", escaped).replace("\u2060", "") == planted


def test_md_turns_carriage_returns_into_line_breaks_and_accepts_none() -> None:
    assert md("a\r\nb\rc") == "a\nb\nc"
    assert md(None) == ""
