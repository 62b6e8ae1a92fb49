"""What every command-line tool here shares: one-line errors, exit codes, quiet libraries, the options
for the user's own prompts."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Callable

from experiments.benchmarks.untrusted import clean
from lookup.errors import PLDError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: the longest error line: room for a message that lists every name on a board, still one line
ERROR_CHARS = 2000


def guarded(main: Callable[..., int | None]) -> Callable[..., int]:
    """Run ``main``; a user mistake prints one line and exits 2, Ctrl-C exits 130 without a traceback.
    The line is cleaned whole: a message may quote a file name or a name read from a file."""

    @functools.wraps(main)
    def wrapper(*args, **kwargs) -> int:
        try:
            return int(main(*args, **kwargs) or 0)
        except PLDError as exc:
            print(f"error: {clean(exc, ERROR_CHARS)}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("\ninterrupted: finished results were kept", file=sys.stderr)
            return EXIT_INTERRUPTED

    return wrapper


def add_prompt_file_options(parser: argparse.ArgumentParser) -> None:
    """``--questions``, ``--dataset``, ``--template`` and ``--category``: prompts from the user's own
    file instead of the embedded suites (read by :func:`experiments.running.cases.select_prompts`)."""
    parser.add_argument("--questions", default=None, metavar="FILE",
                        help="your own prompts: a JSONL file in the MT-bench / Spec-Bench question format "
                             "(question_id, category, turns); replaces --tasks")
    parser.add_argument("--dataset", default=None, metavar="FILE",
                        help="your own data: a local .jsonl/.json/.parquet file, one prompt per record via --template")
    parser.add_argument("--template", default=None,
                        help='prompt template for --dataset, e.g. "Summarize:\\n{article}"')
    parser.add_argument("--category", default=None, help="category name for --questions/--dataset prompts")


def quiet_libraries() -> None:
    """Silence the progress bars and warnings of transformers so our own output stays readable."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network at run time
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="transformers")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass
