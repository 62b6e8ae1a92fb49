"""Red team, part two: attacks on what surrounds the sandbox -- the cases, the board, the parent.

Each attack is a submission (or a board file, or an installed plug-in) an entrant controls:

* **cross-case memory** (``attacks/cross_case_memory.py``): keeps every case's committed tokens in
  a module global, a class attribute, files in its scratch and files in folders other cases share,
  and drafts from them, on a benchmark where each case repeats the one before. Per request it must
  score exactly what a fresh instance scores case by case in this process; as a stream entry
  (one drafter for every case, in order) it keeps its memory, which shows the check can tell.
* **a channel out** (``attacks/printer.py``): prints every case's prompt and tokens every way it
  can, and at the last case raises with them. On a benchmark that is not public nothing of them
  may reach board.json, its views or ``show``; on the public one only a disqualified entry keeps
  (at most 500 characters of) its output.
* **a plug-in that runs code at import**: an installed distribution whose ``pld_lab.drafters``
  entry point ``peer:evil`` writes a marker when imported. ``build``'s parent (its peers, its
  baselines) and ``Submission.builtin`` must never import it; as an entry it runs in the sandbox only.
* **a hostile board**: entries whose ``source`` names a payload file (as a "builtin" path, or a
  file outside the board's store). Nothing is loaded, nothing runs; ``--verify`` skips them.
* **a burner under --verify** (``attacks/burner.py``): a thread burning CPU between its calls,
  verified with its honest twin. One sandbox at a time: the burner's is closed before the twin's
  opens (checked structurally, not by timing).

Three holes found while writing these are closed and checked here: an audit event the entry names
itself (``socket.<anything>``) is listed as ``socket`` on a board that is not public; a ``slow``
report in the entry's own words (it can raise the child's ``TooSlow``) is restated by the parent;
and ``--verify`` on a benchmark that is not public keeps no word of a failing entry either.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
from toys_competition import QUICK, VOCAB, make_trace_folder, top_rows  # tests/experiments/competition is on sys.path

import lookup
import lookup.peers
from experiments import leaderboard as cli
from experiments.benchmarks.traces import TraceCase, append_case, load_trace_sets
from experiments.competition import entries, render
from experiments.competition.board import Board
from experiments.competition.loader import entry_of
from experiments.competition.sandbox import Sandbox, Submission, evaluate
from experiments.competition.scoring import benchmark_info
from experiments.running.replay import replay_case
from lookup import registry
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

ATTACKS = Path(__file__).resolve().parent / "attacks"
MARK = "LEAK-7f3a"  # what printer.py puts before everything it prints


def steps_of(out) -> list[tuple[int, int, int]]:
    return [(s.drafted, s.accepted, s.committed) for s in out.stats.steps]


def ids(tokens) -> str:
    return ",".join(str(int(t)) for t in tokens)


# -- 1. cross-case memory ------------------------------------------------------------------------------
def make_repeating_folder(folder: Path, cases: int = 4, seed: int = 11) -> Path:
    """One task whose cases all answer the same 40 distinct tokens to random prompts: a case's own
    context predicts almost nothing of its answer, the cases before it predict all of it."""
    rng = np.random.default_rng(seed)
    answer = rng.permutation(np.arange(3, VOCAB))[:40].tolist()
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(cases):
        prompt = rng.integers(3, VOCAB, 54).tolist()  # over 50 tokens: the attacks tell it from the warm-up
        append_case(folder / "repeat-n40.jsonl.gz",
                    TraceCase(f"repeat/{i:03d}", "repeat", 1, prompt, answer, [0.05] * len(answer), "toy", VOCAB,
                              [2], len(answer), top=top_rows(rng, prompt + answer)))
    CostProfile((1, 2, 8, 64), (0.06, 0.09, 0.1, 0.25), model="toy", device="cpu").save(folder / "profile.json")
    return folder


class Memory:
    """The repeating benchmark, a folder outside every sandbox's scratch for the 'shared' store,
    and each (store, stream) run of the attack at most once."""

    def __init__(self, root: Path) -> None:
        self.traces = make_repeating_folder(root / "repeat")
        self.sets = load_trace_sets(self.traces)
        self.shared = root / "shared"
        self.shared.mkdir()
        self.runs: dict[tuple, object] = {}

    def params(self, store: str) -> dict:
        return {"store": store, "shared": ["/tmp", "/dev/shm", str(self.shared)]}

    def run(self, store: str, stream: bool = False):
        if (store, stream) not in self.runs:
            sub = Submission.file(ATTACKS / "cross_case_memory.py", f"memory-{store}", self.params(store))
            self.runs[store, stream] = evaluate(sub, self.sets, QUICK, **({"stream": True} if stream else {}))
        return self.runs[store, stream]

    def in_process(self, store: str, root: Path, fresh: bool = True) -> list:
        """Each case replayed here with a new instance of the attack: with ``fresh``, from the file
        exec'ed anew with empty HOME, TMPDIR and shared folders (a fresh process per case, as the
        sandbox promises); without, one module and one set of folders for every case, in order."""
        outs, namespace, folders = [], None, None
        with pytest.MonkeyPatch.context() as mp:
            for i, case in enumerate(self.sets[0].cases):
                if fresh or namespace is None:
                    folders = root / f"case-{i}"
                    for sub in ("home/tmp", "shared"):
                        (folders / sub).mkdir(parents=True)
                    mp.setenv("HOME", str(folders / "home"))
                    mp.setenv("TMPDIR", str(folders / "home" / "tmp"))
                    namespace = {"__name__": f"memory_{i}"}
                    exec(compile((ATTACKS / "cross_case_memory.py").read_text(), "cross_case_memory.py", "exec"),
                         namespace)
                drafter = namespace["CrossCaseMemory"](store=store, shared=[str(folders / "shared")])
                outs.append(replay_case(case, drafter, self.sets[0].profile))
        return outs


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Memory:
    return Memory(tmp_path_factory.mktemp("memory"))


@pytest.mark.parametrize("store", ["global", "class", "file", "all"])
def test_memory_does_not_carry_from_one_case_to_the_next(memory, tmp_path, store):
    ev = memory.run(store)
    assert ev.ok, ev.reason
    reference = memory.in_process(store, tmp_path)
    assert len(ev.cases) == len(reference) == 4
    for (_, case, out), ref in zip(ev.cases, reference):
        assert out.tokens == ref.tokens == case.output
        assert (out.stats.tau, out.stats.accepted) == (ref.stats.tau, ref.stats.accepted), f"{case.case} ({store})"
        assert steps_of(out) == steps_of(ref), f"{case.case} ({store}): memory of earlier cases helped"


@pytest.mark.parametrize("store", ["global", "class", "file"])
def test_a_stream_entry_keeps_its_memory_so_the_check_can_tell(memory, store):
    alone, stream = memory.run(store), memory.run(store, stream=True)
    assert stream.ok, stream.reason
    assert [case.case for _, case, _ in stream.cases] == [case.case for _, case, _ in alone.cases]
    firsts = [out.stats.tau for ev in (alone, stream) for _, _, out in ev.cases[:1]]
    assert firsts[0] == firsts[1]  # nothing to remember yet
    for (_, case, one), (_, _, kept) in zip(alone.cases[1:], stream.cases[1:]):
        assert kept.stats.tau > 2 * one.stats.tau, f"{case.case} ({store}): the stream kept no memory"


def test_the_shared_folder_store_works_as_memory_where_nothing_isolates_it(memory, tmp_path):
    """Not vacuous: in one process with one set of folders, the 'all' attack's memory (the shared
    folder's file among its stores) does help."""
    fresh = memory.in_process("shared", tmp_path / "fresh")
    kept = memory.in_process("shared", tmp_path / "kept", fresh=False)
    assert all(k.stats.tau > 2 * f.stats.tau for f, k in zip(fresh[1:], kept[1:]))
    refused = memory.run("all").refused
    assert any("pld-memory.txt" in r for r in refused), refused  # it tried: the sandbox refused the writes


# -- 2. no channel out ---------------------------------------------------------------------------------
class Printing:
    """The printer on a benchmark that is not public and, on a board of its own, on a public one;
    every Evaluation kept (what the attack did print) beside its board entry."""

    def __init__(self, root: Path) -> None:
        self.traces = make_trace_folder(root / "toy", seed=7, tasks=("copy",), cases=2)
        self.sets = load_trace_sets(self.traces)
        self.info = benchmark_info(self.sets, self.traces)
        self.cases = [c for s in self.sets for c in s.cases]
        self.last = self.cases[-1]
        self.boards = {False: Board(root / "private-board"), True: Board(root / "public-board")}
        self.runs: dict[tuple, tuple] = {}

    def run(self, name: str, public: bool, **params) -> tuple:
        """(Evaluation, board entry) of printer.py with ``params`` through ``entries.run_submission``."""
        if (name, public) not in self.runs:
            seen = []

            def keep(*args, **kwargs):
                seen.append(evaluate(*args, **kwargs))
                return seen[-1]

            info = {**self.info, "public": public}
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(entries, "evaluate", keep)
                entry = entries.run_submission(self.boards[public], Submission.file(ATTACKS / "printer.py", name, params),
                                               self.sets, info, "submission", QUICK)
            self.runs[name, public] = seen[-1], entry
        return self.runs[name, public]

    def raises(self) -> dict:
        return {"raise_on": self.last.prompt[:6]}

    def needles(self) -> list[str]:
        """What of the cases the attack printed: its mark, each prompt's and each answer's ids as it
        writes them (a run of a few is enough to be unmistakable)."""
        return [MARK, *(ids(c.prompt[i:i + 5]) for c in self.cases for i in (0, 30)),
                *(ids(c.output[:5]) for c in self.cases)]

    def everything_shown(self, public: bool, capsys, names=()) -> dict[str, str]:
        """board.json, the three views and `show` (the board and each named entry), as text."""
        board = self.boards[public]
        bench = self.info["hash"]
        texts = {"board.json": board.path.read_text()}
        for path in render.write_outputs(board.entries(bench), self.info, board.folder):
            texts[path.name] = path.read_text()
        capsys.readouterr()
        for name in (None, *names):
            assert cli.main(["show", *([name] if name else []), "--board", str(board.folder), "--benchmark", bench]) == 0
            texts[f"show {name or ''}"] = capsys.readouterr().out
        return texts


@pytest.fixture(scope="module")
def printing(tmp_path_factory) -> Printing:
    return Printing(tmp_path_factory.mktemp("printing"))


def leaks(texts: dict[str, str], needles: list[str]) -> list[tuple[str, str]]:
    return [(where, needle) for where, text in texts.items() for needle in needles if needle in text]


def test_nothing_an_entry_prints_reaches_a_board_that_is_not_public(printing, capsys):
    assert printing.info.get("public") is False  # a trace folder of our own: not the shipped benchmark
    scored_ev, scored = printing.run("printer", False)
    raised_ev, raised = printing.run("printer-raises", False, **printing.raises())
    assert scored["status"] == "ok" and raised["status"] == "disqualified"
    needles = printing.needles()
    # not vacuous: the attack did print every needle, and its exception did hold the tokens
    assert all(n in scored_ev.log_tail or n in raised_ev.log_tail for n in needles[1:]), scored_ev.log_tail[-800:]
    assert raised_ev.reason.startswith(f"exception: RuntimeError: {MARK} prompt:{ids(printing.last.prompt)}")
    assert scored["log_tail"] == raised["log_tail"] == ""
    assert raised["reason"] == f"exception: {entries.WITHHELD}"
    assert scored["refused"] and set(scored["refused"]) == {"open"}, scored["refused"]  # by event name, no path
    texts = printing.everything_shown(False, capsys, names=["printer", "printer-raises"])
    assert not leaks(texts, needles)


def test_on_the_public_benchmark_only_a_disqualified_entry_keeps_a_short_tail(printing, capsys):
    _, scored = printing.run("printer", True)
    raised_ev, raised = printing.run("printer-raises", True, **printing.raises())
    assert scored["status"] == "ok" and scored["log_tail"] == ""
    assert raised["status"] == "disqualified" and raised["reason"].startswith(f"exception: RuntimeError: {MARK}")
    assert MARK in raised["log_tail"] and 0 < len(raised["log_tail"]) <= entries.TAIL_CHARS
    assert len(raised_ev.log_tail) > 2 * entries.TAIL_CHARS  # it printed far more than that
    # public: refusals with their paths, named portably (a folder outside the checkout, the cache, the
    # home folder and the system's: the file's name alone, text.portable_refusal)
    assert any(r.startswith("open tokens:41") for r in scored["refused"]), scored["refused"]


def test_an_audit_event_of_its_own_naming_carries_nothing_out(printing):
    ev, entry = printing.run("printer-audit", False, audit=True)
    assert any(MARK in r for r in ev.refused)  # not vacuous: the sandbox recorded the event's name
    assert not [r for r in entry["refused"] if MARK in r or "tokens:" in r], entry["refused"]


def test_a_too_slow_report_of_its_own_wording_carries_nothing_out(printing):
    """The entry raises the child's own TooSlow with the case in its message: the parent restates
    any slow report not in the child's wording in its own (whatever the benchmark)."""
    ev, entry = printing.run("printer-slow", False, slow=True, **printing.raises())
    assert ev.reason.startswith("slow: propose: a call over its limit"), ev.reason  # the parent's words
    assert MARK not in ev.reason and MARK not in entry["reason"], entry["reason"]
    assert ids(printing.last.prompt[:5]) not in entry["reason"], entry["reason"]


# -- 3. a plug-in that runs code when imported -------------------------------------------------------------
EVIL = """
from pathlib import Path
try:
    Path({marker!r}).write_text("imported")  # the side effect: it ran
except OSError:
    pass  # inside the sandbox: refused
from lookup import Draft, Drafter

class Evil(Drafter):
    def propose(self, budget):
        return Draft(self.context[-1:][:budget])
"""


@pytest.fixture
def evil_plugin(tmp_path, monkeypatch):
    """An installed distribution (a ``.dist-info`` on sys.path) with entry point ``peer:evil`` in
    group ``pld_lab.drafters``, whose module writes a marker when imported. Yields the marker."""
    from importlib import metadata

    site = tmp_path / "site"
    info = site / "evil_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    marker = tmp_path / "imported.txt"
    (site / "evil_plugin.py").write_text(EVIL.format(marker=str(marker)))
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\npeer:evil = evil_plugin:Evil\n")
    monkeypatch.syspath_prepend(str(site))
    # whatever imports it by mistake leaves the registry as it was for the other tests: the names it
    # added go, but not those of our own modules imported meanwhile (they stay imported, and a module
    # registers its drafters only when first imported: replacing the registry with a copy lost them)
    before = set(registry._REGISTRY)
    monkeypatch.setattr(registry, "_PLUGINS", set(getattr(registry, "_PLUGINS", ())), raising=False)
    assert "peer:evil" in [ep.name for ep in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)]
    yield marker
    for name in set(registry._REGISTRY) - before - set(registry.BUILTINS):
        del registry._REGISTRY[name]
    sys.modules.pop("evil_plugin", None)


def test_build_never_imports_a_plug_in_in_the_parent(evil_plugin, tmp_path, monkeypatch, capsys):
    assert "peer:evil" not in lookup.peers.names() and not evil_plugin.exists()
    with pytest.raises(PLDError, match="unknown built-in drafter 'peer:evil'"):
        Submission.builtin("peer:evil")
    assert not evil_plugin.exists(), "Submission.builtin imported the plug-in in the parent"
    ran = []

    def stub(board, submission, *args, **kwargs):  # what build would run, without running it
        ran.append((submission.name, submission.source))
        return {"name": submission.name, "status": "disqualified", "reason": "not run here"}

    monkeypatch.setattr(entries, "run_submission", stub)
    traces = make_trace_folder(tmp_path / "toy", seed=3, tasks=("copy",), cases=1)
    assert cli.main(["build", "--board", str(tmp_path / "board"), "--traces", str(traces), "--fresh", "0"]) == 0
    capsys.readouterr()
    assert not evil_plugin.exists(), "build imported the plug-in in the parent"
    names = {name for name, _ in ran}
    assert "peer:evil" not in names and set(lookup.peers.names()) <= names  # every peer of ours, no plug-in
    assert all(source["kind"] == "builtin" and source["name"] in lookup.trusted_names() for _, source in ran)


def test_a_plug_in_entry_runs_in_the_sandbox_only(evil_plugin, tmp_path):
    sets = load_trace_sets(make_trace_folder(tmp_path / "toy", seed=4, tasks=("copy",), cases=1))
    sub = Submission.entry_point("peer:evil")
    assert not evil_plugin.exists()  # resolving it read its metadata, imported nothing
    ev = evaluate(sub, sets, QUICK)
    assert ev.ok, ev.reason
    assert not evil_plugin.exists(), "the plug-in's import-time write got out of the sandbox"
    assert f"open {evil_plugin}" in ev.refused  # it did run, in there


# -- 4. a hostile board ----------------------------------------------------------------------------------------
PAYLOAD = """
from pathlib import Path
Path({marker!r}).write_text("ran")
from lookup import Draft, Drafter

class Payload(Drafter):
    def propose(self, budget):
        return Draft([])
"""


@pytest.fixture(scope="module")
def tiny():
    from toys import tiny_llama

    return tiny_llama(vocab_size=VOCAB, seed=3)  # the toy traces' vocabulary: build's --verify takes their prompts


PROMPTS = [[5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9], [7, 8, 7, 8, 7, 8, 1]]


def hostile_entries(tmp_path: Path) -> tuple[list[dict], Path]:
    marker = tmp_path / "payload-ran.txt"
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD.format(marker=str(marker)))
    sha = hashlib.sha256(payload.read_bytes()).hexdigest()
    common = {"kind": "submission", "status": "ok", "score": 9.9, "score_gpu": 9.9, "tau": 9.0, "params": {}}
    return [
        {**common, "name": "by-path", "source": {"kind": "builtin", "name": str(payload)}},
        {**common, "name": "outside-store", "source": {"kind": "file", "path": str(payload), "sha256": sha}},
        {**common, "name": "climbing", "source": {"kind": "file", "sha256": f"../../{sha}", "path": str(payload)}},
    ], marker


def test_a_hostile_board_entry_is_never_loaded(tmp_path):
    hostile, marker = hostile_entries(tmp_path)
    board = Board(tmp_path / "board")
    for entry in map(entry_of, hostile):
        with pytest.raises(PLDError):
            entries.submission_of(entry)  # no board: no store to run a file from
        with pytest.raises(PLDError):
            entries.submission_of(entry, board)
    assert not marker.exists(), "a board entry's payload ran in the parent"


def test_verify_skips_hostile_entries_and_opens_no_sandbox(tmp_path, tiny, monkeypatch):
    hostile, marker = hostile_entries(tmp_path)
    board = Board(tmp_path / "board")
    info = {"hash": "b" * 16, "public": False}
    for entry in hostile:
        board.record({**entry, "benchmark": info["hash"]}, info)
    opened = []
    monkeypatch.setattr(Sandbox, "start", lambda self: opened.append(self.submission.name))
    results = entries.verify_entries([entry_of(e) for e in hostile], tiny, PROMPTS, 8, QUICK, board=board)
    assert set(results) == {e["name"] for e in hostile}
    assert all(set(r) == {"skipped"} for r in results.values()), results
    # and through build's --verify, which takes the top of board.json
    monkeypatch.setattr(cli.decoding, "load_model", lambda *a, **k: tiny)
    sets = load_trace_sets(make_trace_folder(tmp_path / "toy", seed=2, tasks=("copy",), cases=1))
    args = argparse.Namespace(verify_top=5, verify_prompts=1, verify_tokens=8, require_isolation=False)
    cli._verify(args, board, sets, info, QUICK, True)
    recorded = {e.name: e.verify for e in board.entries(info["hash"])}
    assert all(v is not None and v.skipped and v.speedup is None and v.failed is None
               for v in recorded.values()), recorded
    assert opened == [] and not marker.exists()


# -- 5. a burner under --verify --------------------------------------------------------------------------------
def test_verify_runs_one_sandbox_at_a_time(tmp_path, tiny, monkeypatch):
    board = Board(tmp_path / "board")
    stored = entries.store_submission(board, ATTACKS / "burner.py")
    source = {"kind": "file", "sha256": stored.stem, "display": "burner.py"}
    pair = [{"name": "burner", "source": source, "params": {"burn": True}},
            {"name": "burner-twin", "source": source, "params": {"burn": False}}]
    log = []
    enter, exit_ = Sandbox.__enter__, Sandbox.__exit__

    def logged_enter(self):
        log.append(("open", self.submission.name))
        return enter(self)

    def logged_exit(self, *exc):
        usage = self.usage() if self._proc is not None else {}
        log.append(("close", self.submission.name, usage.get("cpu_s") or 0.0))
        return exit_(self, *exc)

    monkeypatch.setattr(Sandbox, "__enter__", logged_enter)
    monkeypatch.setattr(Sandbox, "__exit__", logged_exit)
    results = entries.verify_entries([entry_of(e) for e in pair], tiny, PROMPTS, 24, QUICK, board=board)
    assert [step[:2] for step in log] == [("open", "burner"), ("close", "burner"),
                                          ("open", "burner-twin"), ("close", "burner-twin")], log
    twin = results["burner-twin"]
    assert twin.get("identical") is True and twin["speedup"] > 0, twin
    burner = results["burner"]
    assert burner.get("identical") is True or burner.get("failed", "").startswith(("slow", "timeout")), burner
    cpu = {step[1]: step[2] for step in log if step[0] == "close"}
    assert cpu["burner"] > 3 * cpu["burner-twin"], cpu  # not vacuous: it did burn, in its own sandbox's time


def test_verify_on_a_benchmark_that_is_not_public_keeps_no_word_of_the_entry(tmp_path, tiny, monkeypatch):
    sets = load_trace_sets(make_trace_folder(tmp_path / "toy", seed=6, tasks=("copy",), cases=1))
    info = benchmark_info(sets, tmp_path / "toy")
    prompt = sets[0].cases[0].prompt  # what build's --verify runs first
    board = Board(tmp_path / "board")
    stored = entries.store_submission(board, ATTACKS / "printer.py")
    board.record({"name": "printer", "kind": "submission", "benchmark": info["hash"], "status": "ok", "score": 2.0,
                  "source": {"kind": "file", "sha256": stored.stem, "display": "printer.py"},
                  "params": {"raise_on": prompt[:6]}}, info)
    monkeypatch.setattr(cli.decoding, "load_model", lambda *a, **k: tiny)
    args = argparse.Namespace(verify_top=1, verify_prompts=1, verify_tokens=24, require_isolation=False)
    cli._verify(args, board, sets, info, QUICK, True)
    verify = board.entries(info["hash"])[0].verify
    assert verify.failed, verify  # not vacuous: it raised in the live run
    assert MARK not in board.path.read_text(), verify
