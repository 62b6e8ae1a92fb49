"""Text and files that come from outside the code -- a board file, a trace folder, a cost profile, a
fit file, what a submission printed -- made safe to show and bounded to read. It sits in the base
package, below every reader of such a file (``pldcore.cost``'s and ``pldcore.fits``' readers too);
the competition's views add their escaping on top (``competition/text.py``).

    clean(name)                     # one line, no control characters, at most 300 characters
    clean_block(log)                # several lines kept, control characters dropped
    read_json(path, limit, "board") # a regular file of at most ``limit`` bytes, nested at most MAX_DEPTH deep
    with open_regular(path, limit) as f: ...   # the same checks, for a file read a chunk at a time

A terminal needs no escaping beyond :func:`clean`: with no control character left there is no
escape sequence to run. Every refusal here is a :class:`PLDError` naming the file: one line, never
a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from pldcore.errors import PLDError

#: the longest a reason, a refused operation or any other one-line text is kept
LINE_CHARS = 300
#: Unicode categories dropped: controls (ESC, CR, LF, DEL, C1), formats (bidi overrides, zero
#: width), line and paragraph separators
_DROPPED = frozenset({"Cc", "Cf", "Zl", "Zp"})
#: how deep JSON read from a file may nest. Our files nest at most 6 levels (the board); past a few
#: hundred, json.dumps(indent=...) and any walk of the data would run out of Python's stack
MAX_DEPTH = 64


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


@contextlib.contextmanager
def open_regular(path: str | Path, limit: int, what: str = "file") -> Iterator[BinaryIO]:
    """``path`` open for reading in binary, refused unless it is a regular file of at most ``limit``
    bytes: a FIFO, a device (``/dev/zero``) or a huge file never blocks or fills the memory."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever
        f = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
    except OSError as exc:
        raise PLDError(f"{clean(path)} is not a readable {what} ({clean(exc.strerror or exc)})") from None
    with f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PLDError(f"{clean(path)} is not a readable {what} (not a regular file)")
        if info.st_size > limit:
            raise PLDError(f"{clean(path)} is not a readable {what} (over {_size(limit)})")
        yield f


def read_bytes(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, refused past ``limit`` bytes (:func:`open_regular`;
    at most ``limit + 1`` bytes are read, should the file grow meanwhile)."""
    with open_regular(path, limit, what) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise PLDError(f"{clean(path)} is not a readable {what} ({clean(exc.strerror or exc)})") from None
    if len(data) > limit:
        raise PLDError(f"{clean(path)} is not a readable {what} (over {_size(limit)})")
    return data


def parse_json(text: str | bytes, where: str | Path, what: str = "file", max_depth: int = MAX_DEPTH) -> Any:
    """``text`` parsed as JSON, refused when invalid or nested deeper than ``max_depth``."""
    try:
        value = json.loads(text)
    except RecursionError:  # json gives up past the interpreter's stack: far deeper than max_depth
        raise PLDError(f"{clean(where)} is not a readable {what} (nested deeper than {max_depth})") from None
    except ValueError as exc:  # invalid JSON, or bytes that are not UTF-8
        raise PLDError(f"{clean(where)} is not a readable {what} ({clean(exc)})") from None
    if too_deep(value, max_depth):
        raise PLDError(f"{clean(where)} is not a readable {what} (nested deeper than {max_depth})")
    return value


def read_json(path: str | Path, limit: int, what: str = "file", max_depth: int = MAX_DEPTH) -> Any:
    """:func:`read_bytes`, then :func:`parse_json`."""
    return parse_json(read_bytes(path, limit, what), path, what, max_depth)


def too_deep(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether lists and dicts in ``value`` nest deeper than ``max_depth`` (a loop, not recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth >= max_depth:
            return True
        stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n:,} bytes"
