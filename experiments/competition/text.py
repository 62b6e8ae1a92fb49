"""Text a submission controls -- its name, why it was disqualified, what it was refused, what it
printed -- made safe to store and to show: one cleaning, then one escaping per view.

    clean(reason)            # one line, no control characters, at most 300 characters: store this
    markdown(reason)         # ... and every character Markdown (or GitHub's HTML) reads as syntax escaped
    html_text(reason)        # ... and HTML-escaped
    clean_block(log)         # several lines kept (printed output), control characters dropped

A terminal needs no escaping beyond :func:`clean`: with no control character left there is no
escape sequence to run.
"""

from __future__ import annotations

import html
import unicodedata

#: the longest a reason, a refused operation or any other one-line text is kept
LINE_CHARS = 300
#: Unicode categories dropped: controls (ESC, CR, LF, DEL, C1), formats (bidi overrides, zero
#: width), line and paragraph separators
_DROPPED = frozenset({"Cc", "Cf", "Zl", "Zp"})
#: characters Markdown, GFM tables, GitHub's math and its HTML read as syntax; each is escaped
#: with a backslash (CommonMark's escape for any ASCII punctuation), so text renders as itself
_MARKDOWN = frozenset("\\`*_[]<>|#!~&$")


def clean(value, limit: int = LINE_CHARS) -> str:
    """``value`` as one line of at most ``limit`` characters: control and format characters become
    spaces, runs of spaces collapse, a longer text ends in an ellipsis."""
    text = str(value if value is not None else "")[: 4 * limit + 64]  # bounded work, whatever the input
    text = "".join(" " if unicodedata.category(c) in _DROPPED else c for c in text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_block(value, limit: int = 6000) -> str:
    """Printed output kept as lines (its last ``limit`` characters): control characters other than
    newlines and tabs dropped, so the text can be shown anywhere."""
    text = str(value if value is not None else "")[-limit:]
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in _DROPPED)


def markdown(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then escaped for Markdown: safe inside a table cell, a list item or a heading."""
    return "".join("\\" + c if c in _MARKDOWN else c for c in clean(value, limit))


def html_text(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then HTML-escaped (quotes included, so safe in an attribute too)."""
    return html.escape(clean(value, limit), quote=True)
