"""Text a submission controls -- its name, why it was disqualified, what it was refused, what it
printed -- made safe to store and to show: one cleaning, then one escaping per view.

    clean(reason)            # one line, no control characters, at most 300 characters: store this
    markdown(reason)         # ... and every character Markdown (or GitHub's HTML) reads as syntax escaped
    html_text(reason)        # ... and HTML-escaped
    clean_block(log)         # several lines kept (printed output), control characters dropped

The cleaning itself lives in ``experiments.benchmarks.untrusted`` (one implementation, in the
lowest layer that shows text from files: the CLIs' error lines and the tables use it too). A
terminal needs no escaping beyond :func:`clean`: with no control character left there is no
escape sequence to run.
"""

from __future__ import annotations

import html

from experiments.benchmarks.untrusted import LINE_CHARS, clean, clean_block

__all__ = ["LINE_CHARS", "clean", "clean_block", "markdown", "html_text"]

#: characters Markdown, GFM tables, GitHub's math and its HTML read as syntax; each is escaped
#: with a backslash (CommonMark's escape for any ASCII punctuation), so text renders as itself
_MARKDOWN = frozenset("\\`*_[]<>|#!~&$")


def markdown(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then escaped for Markdown: safe inside a table cell, a list item or a heading."""
    return "".join("\\" + c if c in _MARKDOWN else c for c in clean(value, limit))


def html_text(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then HTML-escaped (quotes included, so safe in an attribute too)."""
    return html.escape(clean(value, limit), quote=True)
