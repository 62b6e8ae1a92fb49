"""The leaderboard's sandbox: same numbers as in-process, every rule broken is a recorded reason,
and a submission that looks for the future finds nothing. (Attacks on the sandbox itself, class by
class: test_redteam.py.)

Each sandboxed run starts a fresh interpreter (~0.5 s), so the tests here use tiny trace folders
(toys_competition.py) and as few processes as the checks allow.
"""

from __future__ import annotations

import dataclasses

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from toys_competition import QUICK, VOCAB, make_trace_folder, require_layer  # tests/experiments/competition is on sys.path

import lookup
from experiments.benchmarks.traces import load_trace_sets, traces_setting
from experiments.competition import child, isolation
from experiments.competition.sandbox import Disqualified, Limits, Sandbox, SandboxedDrafter, Submission, evaluate
from experiments.running.methods import parse_method
from experiments.running.replay import replay_case
from pldcore.errors import PLDError

SUBMISSIONS = Path(__file__).resolve().parents[3] / "experiments" / "competition" / "submissions"


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return make_trace_folder(tmp_path_factory.mktemp("traces") / "toy")


@pytest.fixture(scope="module")
def sets(traces):
    return load_trace_sets(traces)


def submission_file(tmp_path: Path, body: str, name: str = "sub.py") -> Submission:
    path = tmp_path / name
    path.write_text("from lookup import Draft, Drafter\n\n" + textwrap.dedent(body))
    return Submission.file(path)


def steps_of(result) -> list[tuple[int, int, int]]:
    return [(s.drafted, s.accepted, s.committed) for s in result.stats.steps]


# -- fairness: the sandbox changes nothing but where the drafter runs -----------------------------------------
# numba kernels; a wrapper that observes; a drafter that reads the target's top-k rows (relayed to the
# child); transformers' own prompt lookup (its case processes may read transformers, never a model)
@pytest.mark.parametrize("name", ["suffix-automaton", "adaptive", "recycling", "peer:hf-prompt-lookup"])
def test_sandboxed_replay_equals_in_process_replay(sets, name):
    ev = evaluate(Submission.builtin(name), sets, QUICK)
    assert ev.ok, ev.reason
    assert ev.refused == []  # a built-in does nothing the sandbox refuses
    assert len(ev.cases) == sum(len(s.cases) for s in sets)
    for trace_set, case, out in ev.cases:
        # made as compare.py makes it: a cost-aware drafter (adaptive, recycling) gets the profile the
        # case is priced under, which the sandbox hands its drafter too
        ref = replay_case(case, parse_method(name).make(traces_setting(sets)), trace_set.profile)
        assert out.tokens == ref.tokens == case.output
        assert steps_of(out) == steps_of(ref)
        assert out.stats.tau == ref.stats.tau
        # drafter times are the parent's measure of the child's CPU time: small, positive, one per step
        assert all(0 <= s.drafter_s < 0.05 for s in out.stats.steps)
        assert out.stats.drafter_s == pytest.approx(sum(s.drafter_s for s in out.stats.steps))
    assert sum(out.stats.tau > 1 for _, _, out in ev.cases) > 0  # the toy traces do reward lookup


def test_a_stream_entry_keeps_one_drafter_in_the_sandbox(sets):
    """``stream``: one case process and one drafter serve every case in order, as in-process."""
    twice = [dataclasses.replace(s, cases=list(s.cases) * 2) for s in sets]  # a history pays on the repeat
    ev = evaluate(Submission.builtin("suffix-automaton", {"history": True}), twice, QUICK, stream=True)
    assert ev.ok and ev.stream, ev.reason
    shared = lookup.create("suffix-automaton", history=True)
    for trace_set, case, out in ev.cases:
        ref = replay_case(case, shared, trace_set.profile)
        assert steps_of(out) == steps_of(ref)
    fresh = [replay_case(c, lookup.create("suffix-automaton", history=True), s.profile) for s, c, _ in ev.cases]
    assert sum(o.stats.accepted for _, _, o in ev.cases) > sum(o.stats.accepted for o in fresh)  # it learned


def test_a_case_is_charged_its_reset_and_steps_never_its_drafter_s_construction(tmp_path, sets):
    """A drafter is built once where it serves; the case process builds its case's at load, untimed,
    so a costly constructor (tables of its own, no prompt yet) is not in the reset's charge. CPU time,
    not the wall clock: a busy machine cannot make the constructor's 0.25 s look small."""
    body = """
    import time

    class Costly(Drafter):
        def __init__(self):
            super().__init__()
            t = time.process_time()
            while time.process_time() - t < 0.25:  # a constructor that works for a quarter of a second
                pass

        def propose(self, budget):
            return Draft([])
    """
    ev = evaluate(submission_file(tmp_path, body), sets, QUICK)
    assert ev.ok, ev.reason
    assert len(ev.cases) > 1
    assert ev.reset_s / len(ev.cases) < 0.1  # each reset charged far less than one construction


# -- every broken rule is a recorded reason, and the run goes on ------------------------------------------------
#: a base for the broken submissions below: ``live`` once past the sandbox's warm-up (whose
#: synthetic prompt has 40 tokens; the toy traces' have 54). A base that another class in the file
#: extends does not count as the submission's drafter.
PRELUDE = """
class Live(Drafter):
    def reset(self, prompt):
        super().reset(prompt)
        self.live = len(prompt) > 50

    def propose(self, budget):
        return Draft([])

"""

BROKEN = {
    "crash": ("crash", r"killed by SIGSEGV during propose", """
        import ctypes
        class Crash(Live):
            def propose(self, budget):
                if self.live:
                    ctypes.string_at(0)  # a null-pointer read: the interpreter dies
                return Draft([])
        """),
    "timeout": ("timeout", r"no answer to propose within 1.05 s \(limit 50 ms \+ 1 s grace\); killed", """
        import time
        class Sleepy(Live):
            def propose(self, budget):
                if self.live:
                    time.sleep(30)  # sleeping uses no CPU: only the parent's clock can stop it
                return Draft([])
        """),
    "slow": ("slow", r"propose took \d+ ms \(limit 50 ms\)", """
        import time
        class Slow(Live):
            def propose(self, budget):
                end = time.perf_counter() + (0.15 if self.live else 0)
                while time.perf_counter() < end:
                    pass
                return Draft([])
        """),
    "exception": ("exception", r"^exception: ZeroDivisionError: integer division or modulo by zero \(sub.py:\d+ in propose\)$", """
        class Raises(Live):
            def propose(self, budget):
                return Draft([1 // (not self.live)])
        """),
    "memory": ("exception", r"MemoryError", """
        import numpy as np
        class Hog(Live):
            def reset(self, prompt):
                super().reset(prompt)
                if self.live:
                    self.big = np.ones(1 << 30)  # 8 GiB
        """),
    "bad type": ("invalid", r"propose returned list, not a Draft", """
        class Listy(Live):
            def propose(self, budget):
                return [1, 2] if self.live else Draft([])
        """),
    "out of vocab": ("invalid", r"ids outside the vocabulary \[0, 64\)", """
        class Wild(Live):
            def propose(self, budget):
                return Draft([10**6] if self.live else [])
        """),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_rules_disqualify_with_a_reason(tmp_path, sets, case):
    kind, pattern, body = BROKEN[case]
    limits = QUICK if case != "memory" else Limits(**{**QUICK.to_dict(), "memory_bytes": 1536 << 20})
    ev = evaluate(submission_file(tmp_path, PRELUDE + textwrap.dedent(body)), sets, limits)
    assert not ev.ok
    assert ev.reason.startswith(kind + ": "), ev.reason
    assert re.search(pattern, ev.reason), ev.reason
    assert ev.seconds < 30


def test_total_time_limit(tmp_path, sets):
    body = """
        import time
        class Dawdler(Drafter):
            def propose(self, budget):
                time.sleep(0.02)  # under the per-call limit, but it adds up
                return Draft([])
        """
    ev = evaluate(submission_file(tmp_path, body), sets, Limits(**{**QUICK.to_dict(), "total_s": 0.5}))
    assert ev.reason == "total-time: the replay ran past its limit of 0.5 s"


class FakeBox:
    """Answers a SandboxedDrafter's requests with crafted bytes: the parent's parsing, without a process."""

    limits = QUICK
    wants_top = 0
    reset_total_s = 0.0

    def __init__(self, answer: bytes, charges=(1e-5,)) -> None:
        self.answer, self.killed, self.charges, self.sent = answer, False, list(charges), []
        self.submission = Submission("fake", {"kind": "builtin", "name": "none"})

    def call(self, message, limit, what):
        self.sent.append(message)
        return self.answer, self.charges.pop(0) if self.charges else 0.0, 1e-4

    def kill(self):
        self.killed = True

    def _check_disk(self):
        pass

    def _drain_refusals(self):
        pass


def draft_message(tokens, parents=None, header=None) -> bytes:
    tokens = np.asarray(tokens, "<i8")
    n_parents = -1 if parents is None else len(parents)
    body = tokens.tobytes() + (b"" if parents is None else np.asarray(parents, "<i4").tobytes())
    return b"D" + child.DRAFT_HEADER.pack(*(header or (len(tokens), n_parents))) + body


@pytest.mark.parametrize("answer, kind, message", [
    (b"X", "protocol", "other than a draft"),
    (draft_message([1, 2])[:-3], "protocol", "length disagrees"),
    (draft_message([1, 2], header=(2, 1)), "protocol", "malformed draft message"),
    (draft_message([1, 2], header=(-5, -1)), "protocol", "malformed draft message"),
    (draft_message([1, 2], parents=[-1, 7]), "invalid", "malformed tree"),
])
def test_the_parent_rejects_malformed_answers_without_unpickling(answer, kind, message):
    box = FakeBox(answer)
    with pytest.raises(Disqualified, match=message) as info:
        SandboxedDrafter(box).propose(8)
    assert info.value.kind == kind and box.killed


def test_step_times_are_the_parents_and_reset_counts_in_the_first_step():
    box = FakeBox(child.RESET_DONE, charges=[3e-3, 2e-5, 4e-5, 1e-5])
    d = SandboxedDrafter(box)
    d.reset([1, 2, 3])
    box.answer = draft_message([4, 5, 6], parents=[-1, 0, 0])
    draft = d.propose(8)
    assert draft.tokens.tolist() == [4, 5, 6] and draft.parents.tolist() == [-1, 0, 0]
    d.extend([4, 9])
    d.observe(draft, 1)
    box.answer = draft_message([])
    d.propose(8)  # carries step 1's extend and observe, and step 2's propose
    d.extend([7])
    d.observe(draft, 0)
    d.finish()
    assert d.step_s == pytest.approx([3e-3 + 2e-5, 4e-5, 1e-5])
    assert d.reset_s == pytest.approx(3e-3)
    assert [m[0] for m in box.sent] == ["reset", "step", "step", "step"]
    assert box.sent[2][1] == [("e", [4, 9]), ("o", 1, True)] and box.sent[3][2] is None


def test_observe_top_rows_travel_with_the_next_step():
    box = FakeBox(child.RESET_DONE)
    box.wants_top = 3
    d = SandboxedDrafter(box)
    assert d.wants_top == 3  # the loop reads the instance's value
    d.reset([5, 6, 7])
    ids = np.array([[6, 1, 2], [7, 3, 4]])
    probs = np.array([[0.5, 0.2, 0.1], [0.7, 0.1, 0.05]], dtype=np.float16)
    d.observe_top(np.array([5, 6]), ids, probs)  # the prompt's rows, before the first propose
    box.answer = draft_message([8])
    d.propose(4)
    kind, tokens, k, top, p, prompt = box.sent[1][1][0]
    assert (kind, k, prompt) == ("t", 3, True)
    assert np.frombuffer(tokens, "<i8").tolist() == [5, 6]
    assert np.frombuffer(top, "<i8").reshape(2, 3).tolist() == ids.tolist()
    assert np.array_equal(np.frombuffer(p, "<f2").reshape(2, 3), probs)
    d.extend([8, 9])
    d.observe(d._last, 1)
    d.observe_top(np.array([7, 8]), ids, probs)  # a step's rows: the per-call limit
    box.answer = draft_message([])
    d.finish()
    assert box.sent[2][1][-1][-1] is False


def test_a_case_process_whose_parent_leaves_with_its_ready_unread_ends_quietly(capfd):
    """A case process forked ahead says it is ready, then waits; when the sandbox closes, its channel
    goes with that message unread (a reset, not an end of file): it must end without a traceback,
    which would crowd a disqualified entry's log tail."""
    import socket
    from multiprocessing.connection import Connection

    ours, theirs = socket.socketpair()
    case = child.Child.__new__(child.Child)
    case.conn = Connection(theirs.detach())
    case.send_json(ready=True, layers=[])
    ours.close()  # the far end goes, the message unread
    case.serve()  # returns: no exception
    assert capfd.readouterr().err == ""


# -- isolation ----------------------------------------------------------------------------------------------
def test_the_future_reader_finds_nothing(tmp_path, traces, sets, monkeypatch):
    # the parent's cache holds the traces, and the submitter knows exactly where they are
    cache = tmp_path / "cache"
    monkeypatch.setenv("PLD_LAB_CACHE", str(cache))
    monkeypatch.setenv("MY_TOKEN", "hunter2")
    folder = cache / "traces" / "SmolLM2-135M-Instruct"
    folder.parent.mkdir(parents=True)
    import shutil

    shutil.copytree(traces, folder)
    secret = sorted(folder.glob("*.jsonl.gz"))[0]
    source = (SUBMISSIONS / "future_reader.py").read_text().replace(
        "KNOWN_PATHS: list[str] = []", f"KNOWN_PATHS: list[str] = [{str(secret)!r}]")
    assert str(secret) in source
    path = tmp_path / "future_reader.py"
    path.write_text(source)
    ev = evaluate(Submission.file(path), load_trace_sets(folder), QUICK)
    assert ev.ok, ev.reason  # it catches every refusal, and drafts like an ordinary drafter
    report = json.loads(ev.log_tail.split("future-reader report: ", 1)[1].splitlines()[0])
    assert report["future_tokens_found"] == 0
    assert report["gc_objects"] == []  # no TraceTarget, TraceCase or anything with an output
    assert not any("case" in f or "target" in f or "output" in f for f in report["stack"])
    # a scrubbed environment: HOME and the cache are its own empty temp dir, nothing else leaks
    assert str(cache) not in json.dumps(report["env"]) and "hunter2" not in ev.log_tail
    assert report["env"]["PLD_LAB_CACHE"].startswith(report["env"]["HOME"]) and report["cwd"] == report["env"]["HOME"]
    assert report["cwd_files"] == ["cache", "tmp"]
    assert str(secret) in report["trace_files_seen"]  # it knew the path...
    assert all(v.startswith("PermissionError") for v in report["trace_files_read"].values())  # ...and read nothing
    assert all(v.startswith("PermissionError") for v in report["parent"].values())
    assert all(v.startswith("PermissionError") for v in report["escapes"].values())
    assert f"open {secret}" in ev.refused
    assert any(r.startswith("open /proc/") and r.endswith("/mem") for r in ev.refused)
    # it scores like what it is: the one-token "what followed last time" drafter
    tau = sum(len(c.output) for _, c, _ in ev.cases) / sum(len(o.stats.steps) for _, _, o in ev.cases)
    assert 1.0 <= tau < 2.0


READER = """
    import os, sys
    class Reader(Drafter):
        def reset(self, prompt):
            super().reset(prompt)
            if len(prompt) > 50 and not hasattr(Reader, "said"):
                Reader.said = True
                try:
                    with open(os.environ["SECRET"] if "SECRET" in os.environ else {path!r}, "rb") as f:
                        print("READ", len(f.read()), file=sys.stderr, flush=True)
                except OSError as exc:
                    print("REFUSED", exc.errno, file=sys.stderr, flush=True)
        def propose(self, budget):
            return Draft([])
    """


@pytest.mark.parametrize("layer", ["landlock", "bwrap", None])
def test_each_kernel_layer_alone_keeps_the_traces_unreadable(tmp_path, traces, sets, layer):
    """With the audit hook off, Landlock alone, or bubblewrap alone, still keeps the trace file
    unreadable (and with every layer off the same code reads it: the test is not vacuous)."""
    if layer:
        require_layer(layer)
    secret = sorted(traces.glob("*.jsonl.gz"))[0]
    sub = submission_file(tmp_path, READER.format(path=str(secret)))
    with Sandbox(sub, VOCAB, QUICK, deny=[traces], landlock=layer == "landlock", audit_hook=False,
                 bwrap=layer == "bwrap") as box:
        box.replay(sets[0].cases[0], sets[0].profile)
        assert layer is None or layer in box.isolation
    if layer:
        assert "READ" not in box.log_tail and "REFUSED" in box.log_tail
    else:
        assert "READ" in box.log_tail


def test_trace_folders_under_readable_roots_are_refused(tmp_path):
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    with pytest.raises(PLDError, match="which submissions may read"):
        Sandbox(Submission.builtin("none"), VOCAB, QUICK, deny=[stdlib + "/json"]).roots()


def test_an_installed_plug_in_runs_from_its_own_files(tmp_path, sets, monkeypatch):
    from importlib import metadata

    from lookup.registry import ENTRY_POINT_GROUP

    package = tmp_path / "toyplug"
    package.mkdir()
    (package / "__init__.py").write_text("from toyplug.drafter import Plug\n")
    (package / "drafter.py").write_text("from lookup import Draft, Drafter\n\nclass Plug(Drafter):\n"
                                        "    def propose(self, budget):\n        return Draft(self.context[-1:][:budget])\n")
    (tmp_path / "secret.txt").write_text("beside the package: not readable")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = metadata.EntryPoint(name="toy-plug", value="toyplug.drafter:Plug", group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: metadata.EntryPoints([point]))
    sub = Submission.entry_point("toy-plug")
    assert sub.extra_roots() == [str(package)]
    ev = evaluate(sub, sets, QUICK)
    assert ev.ok, ev.reason
    assert all(out.stats.drafted for _, _, out in ev.cases)


def test_missing_files_and_unknown_entry_points_are_usage_errors(tmp_path):
    with pytest.raises(PLDError, match="no submission file"):
        Submission.file(tmp_path / "nope.py")
    with pytest.raises(PLDError, match="unknown entry point 'no-such-drafter'"):
        Submission.entry_point("no-such-drafter")


def test_the_audit_hook_refuses_in_process(tmp_path):
    """The hook's policy, exercised directly in a throwaway interpreter (no drafter needed); every
    refusal reaches the channel at once."""
    import subprocess
    import sys

    reads, hidden = isolation.read_paths(str(Path(lookup.__file__).parent))
    code = textwrap.dedent(f"""
        import ctypes, os, socket, sys  # imported before the hook, as in the sandbox
        sys.path.insert(0, {str(Path(child.__file__).parent)!r})
        import child as c
        r, w = os.pipe()
        c.install_audit_hook({reads!r}, [{str(tmp_path)!r}], {hidden!r}, w)
        outcomes = []
        def attempt(name, fn):
            try:
                fn(); outcomes.append(name + ":ok")
            except PermissionError:
                outcomes.append(name + ":refused")
        attempt("read stdlib", lambda: open(os.__file__).close())
        attempt("write tmp", lambda: open({str(tmp_path / 'x')!r}, "w").close())
        attempt("read home", lambda: open(os.path.expanduser("~/.bashrc")).close())
        attempt("write lookup", lambda: open({str(Path(lookup.__file__).parent / 'evil.py')!r}, "w").close())
        attempt("symlink", lambda: os.symlink("/etc/passwd", {str(tmp_path / 'l')!r}))
        attempt("proc parent", lambda: open(f"/proc/{{os.getppid()}}/environ").close())
        attempt("kill parent", lambda: os.kill(os.getppid(), 0))
        attempt("kill self", lambda: os.kill(os.getpid(), 0))
        attempt("fork", lambda: os.fork())
        attempt("socket", lambda: socket.socket())
        attempt("libc", lambda: ctypes.CDLL("libc.so.6"))
        attempt("dlsym open", lambda: ctypes.pythonapi.open)
        def f(): pass
        attempt("patch numba-like code", lambda: setattr(f, "__code__", (lambda: 1).__code__))
        attempt("patch the hook", lambda: setattr(c._audit, "__code__", f.__code__))
        attempt("patch the recorder", lambda: setattr(c._record, "__code__", f.__code__))
        print(outcomes)
        print(os.read(r, 1 << 16).decode().count("\\n"))
    """)
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    outcomes = dict(o.split(":") for o in eval(lines[-2]))
    assert outcomes == {
        "read stdlib": "ok", "write tmp": "ok", "read home": "refused", "write lookup": "refused",
        "symlink": "refused", "proc parent": "refused", "kill parent": "refused", "kill self": "ok",
        "fork": "refused", "socket": "refused", "libc": "refused", "dlsym open": "refused",
        "patch numba-like code": "ok", "patch the hook": "refused", "patch the recorder": "refused",
    }
    assert int(lines[-1]) == list(outcomes.values()).count("refused")  # each refusal on the channel
