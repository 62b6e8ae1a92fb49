"""progress.py: the one progress bar draws on a terminal only, so a piped log holds no \\r updates;
measuring a cost profile draws through it, and no other module of ours builds a bar itself."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from toys import tiny_llama

from decoding import cost, progress


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty,enabled,drawn", [(True, True, True), (False, True, False), (True, False, False)])
def test_a_bar_is_drawn_only_on_a_terminal_and_when_wanted(monkeypatch, tty, enabled, drawn):
    stream = Stream(tty)
    monkeypatch.setattr(progress.sys, "stderr", stream)
    with progress.progress_bar(5, "replay", enabled=enabled, file=stream, mininterval=0) as bar:
        for _ in range(5):
            bar.update()  # taken either way
    assert ("replay" in stream.getvalue()) == drawn
    assert ("\r" in stream.getvalue()) == drawn


def test_a_stderr_without_isatty_counts_as_no_terminal(monkeypatch):
    monkeypatch.setattr(progress.sys, "stderr", object())
    assert progress.on_terminal() is False


@pytest.mark.measures_profile
@pytest.mark.parametrize("tty", [False, True])
def test_measuring_a_profile_draws_its_bar_on_a_terminal_only(monkeypatch, tty):
    stream = Stream(tty)
    monkeypatch.setattr(progress.sys, "stderr", stream)  # tqdm draws on sys.stderr
    cost.measure_cost_profile(tiny_llama(), sizes=(1, 2), contexts=(8,), repeats=1, progress=True)
    assert ("cost profile" in stream.getvalue()) == tty
    assert ("\r" in stream.getvalue()) == tty


def test_no_module_of_ours_builds_a_tqdm_bar_itself():
    root = Path(__file__).resolve().parents[2]
    found = set()
    for package in ("pldcore", "lookup", "decoding", "experiments"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] == "tqdm" for n in names):
                    found.add(path.relative_to(root).as_posix())
    assert found == {"decoding/progress.py"}


def test_a_library_s_own_bar_follows_the_rule_within_library_bars(monkeypatch):
    import io
    import types

    from tqdm import tqdm

    from decoding import progress

    library = types.SimpleNamespace(tqdm=tqdm)  # a module that draws tqdm(...) with no way to turn it off
    for tty in (False, True):
        stream = io.StringIO()
        stream.isatty = lambda tty=tty: tty
        monkeypatch.setattr(progress.sys, "stderr", stream)
        with progress.library_bars(library):
            for _ in library.tqdm(range(3), desc="converting", file=stream, mininterval=0):
                pass
        assert library.tqdm is tqdm  # restored
        assert ("\r" in stream.getvalue()) == tty


def test_transformers_own_bars_follow_the_rule_within_transformers_bars(monkeypatch):
    """transformers' "Loading weights" bar (its own tqdm, behind its own switch) is off within the
    block when stderr is no terminal, and the switch is put back as it was."""
    from transformers.utils import logging as hf_logging

    for tty in (False, True):
        monkeypatch.setattr(progress.sys, "stderr", Stream(tty))
        hf_logging.enable_progress_bar()
        with progress.transformers_bars():
            assert hf_logging.is_progress_bar_enabled() == tty
        assert hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # turned off by a CLI: stays off
    with progress.transformers_bars():
        pass
    assert not hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()
