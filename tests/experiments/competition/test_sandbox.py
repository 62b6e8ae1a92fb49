"""The leaderboard's sandbox: same numbers as in-process, every rule broken is a recorded reason,
and a submission that looks for the future finds nothing.

Each sandboxed run starts a fresh interpreter (~1.5 s: it imports numpy, numba and torch), so the
tests here use tiny trace folders and as few processes as the checks allow.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lookup
from experiments.competition import child
from experiments.competition.sandbox import Disqualified, Limits, Sandbox, SandboxedDrafter, Submission, evaluate
from experiments.benchmarks.traces import TraceCase, append_case, load_trace_sets
from experiments.running.replay import replay_case
from lookup.cost import CostProfile
from lookup.errors import PLDError

SUBMISSIONS = Path(__file__).resolve().parents[3] / "experiments" / "competition" / "submissions"
VOCAB = 64
#: quick limits for tests: a silent child is killed 0.3 s after its 50 ms
QUICK = Limits(call_s=0.05, margin_s=0.3, setup_s=60.0, total_s=60.0)


# -- tiny trace folders ------------------------------------------------------------------------------------
def make_case(rng, name: str, category: str, turn: int = 1, doc: int = 48, out: int = 40) -> TraceCase:
    """A prompt holding a 'document', and an output that copies stretches of it with some noise:
    what lookup drafters are for."""
    document = rng.integers(3, VOCAB, doc).tolist()
    prompt = document + rng.integers(3, VOCAB, 6).tolist()
    output: list[int] = []
    while len(output) < out:
        if rng.random() < 0.7:
            start = int(rng.integers(0, doc - 8))
            output += document[start: start + int(rng.integers(2, 9))]
        else:
            output += rng.integers(3, VOCAB, int(rng.integers(1, 4))).tolist()
    output = output[:out]
    return TraceCase(name, category, turn, prompt, output, [0.05] * len(output), "toy", VOCAB, [2], out)


def make_trace_folder(folder: Path, seed: int = 0, tasks=("copy", "chat"), cases: int = 2,
                      profile: CostProfile | None = None) -> Path:
    """A trace folder shaped like the recorder's: <task>-n40.jsonl.gz files and a profile.json."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for i in range(cases):
            multi = task == "chat"
            for turn in (1, 2) if multi else (1,):
                name = f"{task}/{i:03d}" + (f"#{turn}" if multi else "")
                append_case(folder / f"{task}-n40.jsonl.gz", make_case(rng, name, task, turn))
    (profile or CostProfile((1, 2, 8, 64), (0.06, 0.09, 0.1, 0.25), model="toy", device="cpu")).save(
        folder / "profile.json")
    return folder


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
@pytest.mark.parametrize("name", ["suffix-automaton", "adaptive"])  # numba kernels; a wrapper that observes
def test_sandboxed_replay_equals_in_process_replay(sets, name):
    ev = evaluate(Submission.builtin(name), sets, QUICK)
    assert ev.ok, ev.reason
    assert ev.refused == []  # a built-in does nothing the sandbox refuses
    assert len(ev.cases) == sum(len(s.cases) for s in sets)
    for trace_set, case, out in ev.cases:
        ref = replay_case(case, lookup.create(name), trace_set.profile)
        assert out.tokens == ref.tokens == case.output
        assert steps_of(out) == steps_of(ref)
        assert out.stats.tau == ref.stats.tau
        # drafter times are the child's own: small, positive, one per step
        assert all(0 <= s.drafter_s < 0.05 for s in out.stats.steps)
    assert sum(out.stats.tau > 1 for _, _, out in ev.cases) > 0  # the toy traces do reward lookup


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
    "timeout": ("timeout", r"no answer to propose within 0.35 s \(limit 50 ms \+ 0.3 s grace\); killed", """
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
    """Answers a SandboxedDrafter's step with crafted bytes: the parent's parsing, without a process."""

    limits = QUICK

    def __init__(self, answer: bytes) -> None:
        self.answer, self.killed = answer, False
        self.submission = Submission("fake", {"kind": "builtin", "name": "none"})

    def request(self, message, limit, what):
        return self.answer

    def kill(self):
        self.killed = True


def draft_message(tokens, parents=None, times=(), propose_s=1e-5, header=None) -> bytes:
    tokens = np.asarray(tokens, "<i8")
    n_parents = -1 if parents is None else len(parents)
    head = header or (len(tokens), n_parents, len(times), propose_s, propose_s)
    body = np.asarray(times, "<f8").tobytes() + tokens.tobytes()
    if parents is not None:
        body += np.asarray(parents, "<i4").tobytes()
    return b"D" + child.DRAFT_HEADER.pack(*head) + body


@pytest.mark.parametrize("answer, message", [
    (b"X", "other than a draft"),
    (draft_message([1, 2])[:-3], "length disagrees"),
    (draft_message([1, 2], header=(2, 1, 0, 0.0, 0.0)), "malformed draft message"),
    (draft_message([1, 2], header=(2, -1, 3, 0.0, 0.0)), "malformed draft message"),
    (draft_message([1, 2], propose_s=float("nan")), "impossible timings"),
    (draft_message([1, 2], propose_s=-1.0), "impossible timings"),
    (draft_message([1, 2], parents=[-1, 7]), "malformed tree"),
])
def test_the_parent_rejects_malformed_answers_without_unpickling(answer, message):
    box = FakeBox(answer)
    with pytest.raises(Disqualified, match=message) as info:
        SandboxedDrafter(box).propose(8)
    assert info.value.kind == "invalid" and box.killed


def test_the_parent_parses_drafts_and_child_timings():
    box = FakeBox(draft_message([4, 5, 6], parents=[-1, 0, 0], propose_s=2e-5))
    d = SandboxedDrafter(box)
    draft = d.propose(8)
    assert draft.tokens.tolist() == [4, 5, 6] and draft.parents.tolist() == [-1, 0, 0]
    d.extend([4, 9])
    d.observe(draft, 1)
    box.answer = draft_message([], times=(3e-5, 1e-5))
    d.propose(8)
    assert d.step_s == pytest.approx([2e-5 + 3e-5 + 1e-5])  # propose + extend + observe of step 1


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


@pytest.mark.skipif(not child.landlock_abi(), reason="the kernel offers no Landlock")
@pytest.mark.parametrize("landlock, refused", [(True, True), (False, False)])
def test_landlock_alone_keeps_the_traces_unreadable(tmp_path, traces, sets, landlock, refused):
    """With the audit hook off, the kernel still refuses the open (and with both off the same code
    reads the file: the test is not vacuous)."""
    secret = sorted(traces.glob("*.jsonl.gz"))[0]
    sub = submission_file(tmp_path, READER.format(path=str(secret)))
    with Sandbox(sub, VOCAB, QUICK, deny=[traces], landlock=landlock, audit_hook=False) as box:
        box.replay(sets[0].cases[0], sets[0].profile)
        assert box.isolation == ("landlock-abi%d" % child.landlock_abi() if landlock else "none")
    assert ("REFUSED 13" in box.log_tail) == refused and ("READ" in box.log_tail) == (not refused)


def test_trace_folders_under_readable_roots_are_refused(tmp_path):
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    with pytest.raises(PLDError, match="which submissions may read"):
        Sandbox(Submission.builtin("none"), VOCAB, QUICK, deny=[stdlib + "/json"]).roots()


def test_missing_files_and_unknown_entry_points_are_usage_errors(tmp_path):
    with pytest.raises(PLDError, match="no submission file"):
        Submission.file(tmp_path / "nope.py")
    with pytest.raises(PLDError, match="unknown entry point 'no-such-drafter'"):
        Submission.entry_point("no-such-drafter")


def test_the_audit_hook_refuses_in_process(tmp_path):
    """The hook's policy, exercised directly in a throwaway interpreter (no drafter needed)."""
    import subprocess
    import sys

    code = textwrap.dedent(f"""
        import ctypes, os, socket, sys  # imported before the hook, as in the sandbox
        sys.path.insert(0, {str(Path(child.__file__).parent)!r})
        import child as c
        log = c.install_audit_hook(c.read_roots({str(Path(lookup.__file__).parent)!r}), [{str(tmp_path)!r}], [])
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
        attempt("patch code", lambda: setattr(os.path.realpath, "__code__", f.__code__))
        print(outcomes)
    """)
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    outcomes = dict(o.split(":") for o in eval(out.stdout.strip().splitlines()[-1]))
    assert outcomes == {
        "read stdlib": "ok", "write tmp": "ok", "read home": "refused", "write lookup": "refused",
        "symlink": "refused", "proc parent": "refused", "kill parent": "refused", "kill self": "ok",
        "fork": "refused", "socket": "refused", "libc": "refused", "dlsym open": "refused", "patch code": "refused",
    }
