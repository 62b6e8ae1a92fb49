"""Hostile files on the parent's side: a board file, a trace folder or a lock that someone else
wrote. Whatever they hold, what reaches the terminal is inert text (no escape sequence, no bidi
override, one line per error), a bad file is refused with one ``error:`` line and exit 2 (never a
traceback, never memory without bound), and no lock or write follows a symbolic link out of the
board's folder."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import tracemalloc
import unicodedata
import zlib
from pathlib import Path

import pytest
from toys_competition import make_trace_folder  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.benchmarks import traces
from experiments.benchmarks.traces import append_case, read_cases
from experiments.cli import guarded
from experiments.competition import board as board_file
from experiments.competition import render
from experiments.competition.board import Board
from experiments.reporting.tables import render as render_table
from pldcore.errors import PLDError

#: what a terminal runs rather than shows: a window title (OSC 0), clear screen and cursor home (CSI),
#: a hyperlink (OSC 8), a C1 CSI, bidi overrides and isolates, a carriage return, a new line, a backspace
ESCAPES = ("\x1b]0;owned\x07\x1b[2J\x1b[H\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
           "\x9b31m\u202eevil\u2066\r\n\x08")
BENCH = "b" * 16


def assert_inert(text: str) -> None:
    """No byte below 0x20 but a new line, no DEL or C1 control, no format character (bidi, zero width)."""
    bad = sorted({f"U+{ord(c):04X}" for c in text
                  if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F
                  or unicodedata.category(c) in ("Cf", "Zl", "Zp")})
    assert not bad, f"{bad} reached the terminal in {text!r}"


def one_error_line(capsys, argv) -> str:
    """Run the leaderboard CLI: exit 2, nothing on stdout, one inert ``error:`` line on stderr."""
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert_inert(out + err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def entry(name: str, **extra) -> dict:
    groups = {"copy": {"tau": 2.0, "est_speedup": 1.2, "est_speedup_gpu": 1.5}}
    return {"name": name, "kind": "submission", "benchmark": BENCH, "status": "ok", "score": 1.2, "score_gpu": 1.5,
            "tau": 2.0, "drafter_us_per_step": 10.0, "groups": groups, "refused_count": 0, **extra}


def gap(cases=3) -> dict:
    parts = {p: 0.1 for p in ("missed", "wrong", "short", "long", "beyond", "drafter")}
    return {"plain": 2.0, "oracle": 1.0, "run": 1.6, "parts": parts, "cases": cases}


# -- 1. every string from a file is cleaned before it reaches the terminal -------------------------------------
def test_show_name_cleans_the_oracle_gap_it_prints(tmp_path, capsys):
    """``show NAME`` prints the entry's breakdown per group: hostile group names are cleaned, and a
    breakdown whose numbers are text (escape sequences in ``cases``) is not printed at all."""
    board = Board(tmp_path)
    board.record(entry("named", oracle_gap={"copy" + ESCAPES: gap(), "chat" + ESCAPES: gap(5)}))
    board.record(entry("odd", oracle_gap={"copy": gap(cases=ESCAPES)}))
    assert cli.main(["show", "named", "--board", str(tmp_path), "--benchmark", BENCH]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert "where named loses time against the cost-aware oracle" in out and "copy ]0;owned" in out
    assert cli.main(["show", "odd", "--board", str(tmp_path), "--benchmark", BENCH]) == 0
    assert_inert(capsys.readouterr().out)


def test_tables_clean_every_cell_and_header():
    text = render_table(["name" + ESCAPES, "x"], [[ESCAPES, 1.5], ["plain", None]])
    assert_inert(text)
    assert len(text.splitlines()) == 4  # a header, a rule, two rows: no cell breaks a line
    assert_inert(render_table(["h"], [[ESCAPES]], markdown=True))


def test_show_of_an_unknown_name_lists_the_board_names_cleaned(tmp_path, capsys):
    board = Board(tmp_path)
    board.record(entry("known"))
    board.record(entry("zz" + ESCAPES))  # a name no submission could get, written into the file by hand
    err = one_error_line(capsys, ["show", "nobody", "--board", str(tmp_path), "--benchmark", BENCH])
    assert "unknown entry 'nobody'" in err and "known" in err


def test_show_benchmark_lists_the_recorded_hashes_cleaned(tmp_path, capsys):
    board = Board(tmp_path)
    board.record(entry("a"))
    board.record({**entry("b"), "benchmark": "b" * 15 + ESCAPES})
    err = one_error_line(capsys, ["show", "--board", str(tmp_path), "--benchmark", "b"])
    assert "is ambiguous" in err and BENCH in err
    board.record({**entry("c"), "benchmark": ["not", "a", "hash"]})  # and a hash that is no string
    assert "is ambiguous" in one_error_line(capsys, ["show", "--board", str(tmp_path), "--benchmark", "b"])


@pytest.fixture
def folder(tmp_path) -> Path:
    return make_trace_folder(tmp_path / "traces", seed=3)


def show_traces(capsys, tmp_path, folder) -> str:
    return one_error_line(capsys, ["show", "--board", str(tmp_path / "board"), "--traces", str(folder)])


def test_a_trace_folder_with_a_hostile_file_name_gives_one_clean_line(tmp_path, folder, capsys):
    (folder / ("x" + ESCAPES.replace("/", "") + ".jsonl.gz")).write_bytes(gzip.compress(b""))
    assert "is not a trace file name" in show_traces(capsys, tmp_path, folder)


def test_duplicate_prompts_under_hostile_case_names_give_one_clean_line(tmp_path, folder, capsys):
    path = folder / "copy-n40.jsonl.gz"
    append_case(path, dataclasses.replace(read_cases(path)[0], case="dup" + ESCAPES))
    assert "have the same prompt" in show_traces(capsys, tmp_path, folder)


@pytest.mark.parametrize("content", [json.dumps({"hash": ESCAPES}), "[1, 2]", "{not json" + ESCAPES])
def test_a_hostile_benchmark_file_gives_one_clean_line(tmp_path, folder, capsys, content):
    (folder / traces.BENCHMARK_FILE).write_text(content)
    assert traces.BENCHMARK_FILE in show_traces(capsys, tmp_path, folder)


def test_guarded_cleans_the_whole_error_line(capsys):
    @guarded
    def main() -> int:
        raise PLDError(f"cannot read {ESCAPES}.json ({ESCAPES})")

    assert main() == 2
    err = capsys.readouterr().err
    assert_inert(err)
    assert err.startswith("error: cannot read") and err.count("\n") == 1


# -- 2. hostile files: one line, bounded memory -----------------------------------------------------------------
def test_a_board_nested_200000_deep_gives_one_line(tmp_path, capsys):
    (tmp_path / "board.json").write_text("[" * 200_000 + "]" * 200_000)
    err = one_error_line(capsys, ["show", "--board", str(tmp_path), "--benchmark", BENCH])
    assert "board.json is not a readable board (nested deeper than" in err
    # deep enough to break writing it back (json.dumps with indent recurses), yet JSON can read it
    (tmp_path / "board.json").write_text('{"entries": [], "x": ' + "[" * 500 + "]" * 500 + "}")
    assert "nested deeper than" in one_error_line(capsys, ["show", "--board", str(tmp_path), "--benchmark", BENCH])


def test_a_board_over_its_size_limit_gives_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(board_file, "MAX_BOARD_BYTES", 1 << 16)
    Board(tmp_path).record(entry("big", padding="x" * (1 << 16)))
    assert "(over 65,536 bytes)" in one_error_line(capsys, ["show", "--board", str(tmp_path), "--benchmark", BENCH])


def gzip_of_zeros(mib: int) -> bytes:
    """One gzip member of ``mib`` MiB of zeros, built without compressing them all: a full flush
    makes a deflate segment independent of what came before, so one MiB's segment repeats."""
    zeros = bytes(1 << 20)
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = raw.compress(zeros) + raw.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)  # an empty final block
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + segment * mib + end + crc.to_bytes(4, "little") + ((mib << 20) & 0xFFFFFFFF).to_bytes(4, "little")


def test_the_bomb_builder_makes_a_valid_gzip():
    assert gzip.decompress(gzip_of_zeros(3)) == bytes(3 << 20)


def test_a_gzip_bomb_in_a_trace_folder_stops_at_the_cap(tmp_path, folder, capsys, monkeypatch):
    """600 MiB of zeros in 0.6 MB on disk: refused once the decompressed bytes pass the cap (set
    lower here to keep the test cheap), with one line, never decompressed whole."""
    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 16 << 20)
    bomb = folder / "copy-n40.jsonl.gz"
    bomb.write_bytes(gzip_of_zeros(600))
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(PLDError, match="copy-n40.jsonl.gz is not a readable trace file"):
            read_cases(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 << 20, f"{peak >> 20} MiB to refuse a bomb capped at 16 MiB"
    assert "over 16 MiB decompressed" in show_traces(capsys, tmp_path, folder)
    # many small members add up the same way
    bomb.write_bytes(gzip.compress(bytes(1 << 20)) * 40)
    assert "over 16 MiB decompressed" in show_traces(capsys, tmp_path, folder)


def test_a_trace_line_nested_200000_deep_gives_one_line(tmp_path, folder, capsys):
    with gzip.open(folder / "copy-n40.jsonl.gz", "at") as f:
        f.write("[" * 200_000 + "]" * 200_000 + "\n")
    assert "nested deeper than" in show_traces(capsys, tmp_path, folder)


# -- 3. locks and writes never follow a symbolic link out of the folder --------------------------------------------
@pytest.mark.parametrize("existing", [False, True])
def test_a_lock_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path, capsys, existing):
    folder, outside = tmp_path / "board", tmp_path / "elsewhere" / "target"
    folder.mkdir()
    outside.parent.mkdir()
    if existing:
        outside.write_text("theirs")
        os.utime(outside, (0, 0))
    os.symlink(outside, folder / ".board.lock")

    @guarded
    def record() -> int:
        Board(folder).record(entry("a"))
        return 0

    assert record() == 2
    err = capsys.readouterr().err
    assert_inert(err)
    assert err.count("\n") == 1 and ".board.lock (it is a symbolic link)" in err
    if existing:
        assert outside.read_text() == "theirs" and outside.stat().st_mtime == 0
    else:
        assert not outside.exists()
    assert not (folder / "board.json").exists()


def test_writes_replace_a_symlink_in_the_folder_and_never_its_target(tmp_path):
    """(A check that the writers were already safe: a rename replaces the link itself.)"""
    folder, outside = tmp_path / "board", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    theirs = '{"entries": []}'  # a board (reading one through a link is fine; writing through it is not)
    for name in ("board.json", "LEADERBOARD.md", "leaderboard.json", "index.html"):
        (outside / name).write_text(theirs)
        os.symlink(outside / name, folder / name)
    board = Board(folder)
    board.record(entry("a"))
    render.write_outputs(board.entries(BENCH), {"hash": BENCH}, folder)
    for name in ("board.json", "LEADERBOARD.md", "leaderboard.json", "index.html"):
        assert (outside / name).read_text() == theirs
        assert not (folder / name).is_symlink() and (folder / name).stat().st_size > 0
    assert sorted(p.name for p in folder.iterdir()) == [
        ".board.lock", "LEADERBOARD.md", "board.json", "index.html", "leaderboard.json"]
