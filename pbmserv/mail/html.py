"""The text of an HTML mail part, in one pass.

The standard library's HTMLParser takes quadratic time on some hostile input (20,000
unclosed ``<a`` take half a minute), so the few things needed here are done by hand:
tags dropped, ``script`` and ``style`` skipped, block tags made line breaks (one
where a block ends and the next begins), white space outside ``<pre>`` made one blank
as a browser shows it, character references decoded.  Every step moves forward, so
the work is linear.
"""

from __future__ import annotations

import html
import re

#: only this much of an HTML part is read (a command is on its first lines)
MAX_HTML = 64 * 1024
_BREAKS = frozenset({"br", "p", "div", "tr", "li", "blockquote", "h1", "h2", "h3", "h4",
                     "h5", "h6", "pre", "table"})
_SKIPPED = frozenset({"script", "style", "head", "title"})
_BLANKS = re.compile(r"[ \t\r\n\f]+")
_NAME = re.compile(r"/?\s*([A-Za-z][A-Za-z0-9]*)")


def html_to_text(source: str) -> str:
    text = source[:MAX_HTML]
    lower = text.lower()
    out: list[str] = []
    line_start = True  # nothing but line breaks written since the last line break

    pre = 0  # inside <pre>: white space is kept as it is

    def add(chunk: str) -> None:
        nonlocal line_start
        if not pre:
            # white space in the source (line breaks and indents included) is one
            # blank, and none at the start of a line
            chunk = _BLANKS.sub(" ", chunk)
            if line_start:
                chunk = chunk.lstrip(" ")
        if chunk:
            out.append(chunk)
            line_start = chunk.endswith("\n")

    i = 0
    n = len(text)
    while i < n:
        lt = text.find("<", i)
        if lt < 0:
            add(text[i:])
            break
        add(text[i:lt])
        if text.startswith("<!--", lt):
            end = text.find("-->", lt + 4)
            i = n if end < 0 else end + 3
            continue
        gt = text.find(">", lt + 1)
        if gt < 0:  # an unclosed tag: the rest is not text
            break
        match = _NAME.match(text, lt + 1, gt)
        i = gt + 1
        if match is None:
            continue
        name = match.group(1).lower()
        closing = text[lt + 1:match.start(1)].strip().startswith("/")
        if name in _SKIPPED and not closing:
            end = lower.find(f"</{name}", i)
            if end < 0:
                break
            close = text.find(">", end)
            i = n if close < 0 else close + 1
            continue
        if name == "pre":
            pre = max(0, pre + (-1 if closing else 1))
        # a line break for <br>; one for the edges of a block, unless a line just ended
        if name == "br" or (name in _BREAKS and not line_start):
            if out and out[-1].endswith(" "):
                out[-1] = out[-1].rstrip(" ")
            out.append("\n")
            line_start = True
    return html.unescape("".join(out))
