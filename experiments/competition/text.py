"""Text a submission controls -- its name, why it was disqualified, what it was refused, what it
printed -- made safe to store and to show: one cleaning, then one escaping per view.

    clean(reason)            # one line, no control characters, at most 300 characters: store this
    markdown(reason)         # ... and every character Markdown (or GitHub's HTML) reads as syntax escaped
    html_text(reason)        # ... and HTML-escaped
    clean_block(log)         # several lines kept (printed output), control characters dropped
    portable_refusal(line)   # a refused operation naming its path as on any machine (no home folder)

The cleaning itself lives in ``experiments.benchmarks.untrusted`` (one implementation, in the
lowest layer that shows text from files: the CLIs' error lines and the tables use it too). A
terminal needs no escaping beyond :func:`clean`: with no control character left there is no
escape sequence to run.
"""

from __future__ import annotations

import html

import os
from pathlib import Path

from experiments.benchmarks.paths import local_path, portable_path
from experiments.benchmarks.untrusted import LINE_CHARS, clean, clean_block

__all__ = ["LINE_CHARS", "clean", "clean_block", "markdown", "html_text", "portable_refusal"]

#: characters Markdown, GFM tables, GitHub's math and its HTML read as syntax; each is escaped
#: with a backslash (CommonMark's escape for any ASCII punctuation), so text renders as itself
_MARKDOWN = frozenset("\\`*_[]<>|#!~&$")


def markdown(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then escaped for Markdown: safe inside a table cell, a list item or a heading."""
    return "".join("\\" + c if c in _MARKDOWN else c for c in clean(value, limit))


def html_text(value, limit: int = LINE_CHARS) -> str:
    """:func:`clean`, then HTML-escaped (quotes included, so safe in an attribute too)."""
    return html.escape(clean(value, limit), quote=True)


#: folders whose paths are the same on every machine: a refusal names them as they are (``/proc/1/cmdline``
#: says what was tried; its name alone would not)
SYSTEM_ROOTS = ("/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64")


def _homes() -> list[str]:
    """This machine's home folders: ``$HOME``'s and the password database's (they may differ)."""
    homes = {os.path.expanduser("~")}
    try:
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError):
        pass
    return sorted(h.rstrip("/") for h in homes if h.startswith("/") and h.rstrip("/"))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def portable_refusal(refused: str) -> str:
    """A refused operation as the sandbox records it (``os.scandir /root/.cache/pld-lab/traces``),
    with its path named as the rest of the board names paths, so that no board names the home
    folder of the machine that built it: relative to the checkout or as ``$PLD_LAB_CACHE/...``
    (:func:`experiments.benchmarks.paths.portable_path`); else under the home folder as ``~/...``;
    else under a folder every machine has (:data:`SYSTEM_ROOTS`) as it is; else by its name alone.
    An operation without a path (``subprocess.Popen``, ``socket.getaddrinfo``) and one already
    portable stay as they are, so a view may apply this to what a board file holds."""
    refused = clean(refused)  # what a board file holds may be anything: one line, no control character
    event, sep, path = refused.partition(" ")
    if not sep or not path.startswith("/"):
        return refused
    if path == "/" or any(_under(path, root) for root in SYSTEM_ROOTS):
        return refused
    try:
        shown = portable_path(path)
        portable = os.path.normpath(local_path(shown)) == os.path.normpath(Path(path).resolve())
    except (OSError, ValueError, RuntimeError):  # a path this machine cannot even resolve: its name alone
        shown, portable = Path(path).name, False
    if not portable:  # neither in the checkout nor in the cache: portable_path kept the name alone
        home = next((h for h in _homes() if _under(path, h)), None)
        if home is not None:
            shown = "~" + path[len(home):]
    return f"{event} {shown}"
