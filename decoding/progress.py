"""The one progress bar of the project: on a terminal only.

    with progress_bar(total, "replay") as bar:   # a tqdm bar on stderr, or a silent one
        ...
        bar.update()

A bar redraws itself with ``\\r`` several times a second: on a terminal that is one line, in a
piped or redirected log it is hundreds of lines of noise. So a bar is drawn only when stderr is a
terminal (and the caller wants one); otherwise it counts silently, and the tool's own lines (its
tables, warnings and errors) are all the log holds.

It lives in ``decoding`` (measuring a cost profile draws one) so that every layer above uses the
same rule: no module of ours builds a tqdm bar itself.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Iterator

from tqdm import tqdm

__all__ = ["library_bars", "on_terminal", "progress_bar", "transformers_bars"]


def on_terminal() -> bool:
    """Whether stderr, where bars are drawn, is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def progress_bar(total: int, desc: str, unit: str = "case", enabled: bool = True, **kwargs) -> tqdm:
    """A tqdm bar over ``total`` ``unit``s, drawn on stderr only when it is a terminal and ``enabled``
    (a disabled bar still takes ``update`` and ``set_postfix_str`` calls). ``kwargs`` go to tqdm
    (``initial``, ``leave``...)."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not (enabled and on_terminal()), dynamic_ncols=True,
                **kwargs)


@contextlib.contextmanager
def library_bars(module) -> Iterator[None]:
    """Within this block, the bars ``module`` (a library's module that draws ``tqdm(...)`` by the name
    ``tqdm``, with no way to turn it off) draws follow the same rule: on a terminal only. transformers'
    GGUF conversion is one (``transformers.modeling_gguf_pytorch_utils``: one bar over every tensor,
    which ignores ``transformers.utils.logging.disable_progress_bar``)."""
    drawn = getattr(module, "tqdm", None)
    if drawn is None or on_terminal():
        yield
        return
    module.tqdm = functools.partial(drawn, disable=True)
    try:
        yield
    finally:
        module.tqdm = drawn


@contextlib.contextmanager
def transformers_bars() -> Iterator[None]:
    """Within this block, the bars transformers draws through its own switch
    (``transformers.utils.logging``: "Loading weights" at every ``from_pretrained``) follow the same
    rule: on a terminal only. The switch is put back as it was (a CLI may have turned it off for good)."""
    from transformers.utils import logging as hf_logging

    if on_terminal() or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()
