"""The vocabulary's strings, for drafters that ask for them (:meth:`lookup.base.Drafter.wants_vocab`).

Each id's text alone, as the tokenizer decodes ``[id]``: special tokens as their names, spaces and
newlines as themselves (``" the"``, ``"\\n"``), a byte-level token that is only part of a
character as U+FFFD. This is the form in which a drafter can spot punctuation or a line's end; the
tokenizer's own token forms (``convert_ids_to_tokens``: ``"Ġthe"``, ``"Ċ"``) depend on its byte
encoding. The shipped benchmark carries the same strings in a file beside its traces
(:func:`experiments.benchmarks.traces.read_vocab`), so a drafter sees them alike live and in replay.
"""

from __future__ import annotations

import weakref
from typing import Any

#: tokenizer -> its strings: decoding every id takes a few tenths of a second, so once per tokenizer
_CACHE: "weakref.WeakKeyDictionary[Any, tuple[str, ...]]" = weakref.WeakKeyDictionary()


def vocab_strings(tokenizer: Any, size: int | None = None) -> tuple[str, ...]:
    """The text of each id ``0 .. size - 1`` alone (``size``: default ``len(tokenizer)``; a model's
    vocabulary may have more rows than its tokenizer has tokens, and ids the tokenizer cannot decode
    read as ``""``). Computed once per tokenizer object and size."""
    size = len(tokenizer) if size is None else int(size)
    try:
        cached = _CACHE.get(tokenizer)
    except TypeError:  # a tokenizer that cannot be weakly referenced: decoded every time
        cached = None
    if cached is not None and len(cached) == size:
        return cached
    strings = tuple(_decode_one(tokenizer, i) for i in range(size))
    try:
        _CACHE[tokenizer] = strings
    except TypeError:
        pass
    return strings


def _decode_one(tokenizer: Any, token: int) -> str:
    try:
        text = tokenizer.decode([token], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    except (IndexError, KeyError, ValueError, TypeError, OverflowError):  # an id past the tokenizer's own
        return ""
    return text if isinstance(text, str) else ""
