"""What every command-line tool here shares: one-line errors (argparse's included, with close matches),
exit codes, quiet libraries, the options for the user's own prompts."""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import sys
import traceback
from typing import Callable, NoReturn, Sequence

from experiments.benchmarks.untrusted import clean
from pldcore.errors import PLDError
from pldcore.names import unknown_name

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: the longest error line: room for a message that lists every name on a board, still one line
ERROR_CHARS = 2000
#: set (to anything) to print the traceback of an error above its one line (a drafter's own bug, say)
TRACEBACK_ENV = "PLD_LAB_TRACEBACK"


def guarded(main: Callable[..., int | None]) -> Callable[..., int]:
    """Run ``main``; a user mistake prints one line and exits 2, Ctrl-C exits 130 without a traceback.
    The line is cleaned whole: a message may quote a file name or a name read from a file."""

    @functools.wraps(main)
    def wrapper(*args, **kwargs) -> int:
        try:
            return int(main(*args, **kwargs) or 0)
        except PLDError as exc:
            if os.environ.get(TRACEBACK_ENV):  # the whole story, for a bug in a drafter of one's own
                traceback.print_exception(exc, file=sys.stderr)
            print(f"error: {clean(exc, ERROR_CHARS)}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("\ninterrupted: finished results were kept", file=sys.stderr)
            return EXIT_INTERRUPTED

    return wrapper


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose mistakes are one line, as every other error here is, and name what was meant:
    ``error: compare.py: unrecognized argument --max-tokens; did you mean --max-new-tokens? (--help
    lists the options)`` rather than the whole usage. A wrong choice (``--wandb of``, a subcommand)
    lists the close choices; subcommands' parsers are of this class too. Exits 2, as argparse does."""

    def parse_args(self, args: Sequence[str] | None = None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(self._unrecognized(extras, namespace))
        return namespace

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, unknown_name("choice", str(value), map(str, action.choices)))

    def _unrecognized(self, extras: Sequence[str], namespace: argparse.Namespace) -> str:
        """"unrecognized argument --x; did you mean --y?" for each flag among ``extras`` (the options
        of the subcommand chosen count too). Words after a wrong flag are most likely its value, so
        they are named only when no flag was wrong."""
        flags = [e.split("=", 1)[0] for e in extras if e.startswith("-") and e != "-"]
        if not flags:
            return f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}"
        options = self._option_names(namespace)
        parts = []
        for flag in flags:
            close = difflib.get_close_matches(flag, options, n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            parts.append(f"unrecognized argument {flag}{hint}")
        return "; ".join(parts)

    def _option_names(self, namespace: argparse.Namespace) -> list[str]:
        """This parser's long options, and those of the subcommand ``namespace`` chose."""
        names = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(namespace, action.dest, None) or "")
                if isinstance(chosen, ArgumentParser):
                    names += chosen._option_names(namespace)
        return sorted(set(names))

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {clean(message, ERROR_CHARS)} (--help lists the options)", file=sys.stderr)
        self.exit(EXIT_USAGE)


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


def add_traces_options(parser: argparse.ArgumentParser, default: str = "the embedded model's benchmark",
                       board_hash: bool = False) -> None:
    """``--traces DIR`` or ``--benchmark NAME`` (a shipped benchmark by name or hash prefix:
    :func:`experiments.benchmarks.traces.benchmark_folder`), one of them; both land in
    ``args.traces`` as a folder (None: ``default``). With ``board_hash`` (the leaderboard's commands)
    ``--benchmark`` may also be the hash (prefix) of a benchmark on a board, which only the board can
    resolve: it stays as given, in ``args.benchmark``."""
    from experiments.benchmarks.traces import benchmark_folder, shipped_benchmarks

    def shipped(name: str):
        try:
            return benchmark_folder(name)
        except PLDError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    names = ", ".join(shipped_benchmarks())
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--traces", default=None, metavar="DIR", help=f"trace folder (default: {default})")
    if board_hash:
        group.add_argument("--benchmark", default=None, metavar="NAME",
                           help=f"a shipped benchmark by name or unique prefix ({names}), "
                                "or a benchmark hash (prefix) on the board")
    else:
        group.add_argument("--benchmark", dest="traces", type=shipped, metavar="NAME",
                           help="a shipped benchmark by name or unique prefix: " + names)


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
