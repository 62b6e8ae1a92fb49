"""Run a submitted drafter in its own locked-down process; the parent keeps the trace, the loop and the clock.

    with Sandbox(Submission.file("my_drafter.py"), vocab_size=49152) as box:
        result, round_trip_s = box.replay(case, profile)   # drafter times as the parent measured them
    # a crash, a timeout, an invalid draft, a malformed message or an exception raises Disqualified(kind, message)

The parent runs the one decoding loop (``decoding.generate`` over a ``TraceTarget``, or a live
``ModelTarget`` for ``--verify``) with a :class:`SandboxedDrafter`: a ``Drafter`` whose calls go
to the child over one pipe. The child (``child.py``) is a fresh interpreter (``python -I``), inside
bubblewrap where the machine allows it (``isolation.py``), with its own kernel layers
(``confine.py``) and an audit hook; it receives the prompt and the committed tokens, nothing else,
and answers with drafts.

**Time is the parent's.** Before each request and after its answer the parent reads the child's
CPU clock (the kernel's count over all its threads); a request is charged every CPU second the
child used since the previous answer (so work a thread does between calls counts too), less the
protocol's own cost, measured before the submission was loaded (the least any calibration step
cost). ``reset()`` is charged like a step and added to the first step's time, so it counts in the
score; the drafter it resets was built, untimed, when the case process loaded the submission (a
drafter is built once where it serves). Nothing the child says about time is used.

**The parent cannot be crashed or silenced.** Every read and write on the pipe has a deadline,
every answer a size limit, a phase in which it may come and a fixed shape; anything else
disqualifies the entry with reason ``protocol``. Text from the child is cleaned (``text.py``).

Messages are batched: one round trip per step carries the previous step's ``extend``,
``observe`` and ``observe_top`` and this step's ``propose``.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import math
import re
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import decoding
import lookup
import pldcore
from decoding.generate import DraftError, DrafterFailed
from decoding.loading import cache_dir
from experiments.competition import child as child_side
from experiments.competition import confine, isolation
from experiments.competition.protocol import (Disqualified, OutputTail, Pipe, draft_answer, error_in, fields,
                                              json_answer, protocol_error)
from experiments.competition.text import clean
from experiments.benchmarks.traces import SHIPPED_ROOT, traces_setting
from experiments.running.replay import DRAFT_BUDGET, replay_case
from experiments.running.serving import serve_traces
from lookup.base import MAX_TOP, Draft, Drafter
from pldcore.cost import CostProfile
from pldcore.setting import Setting, reference_setting

#: the base package (``pldcore``): the child imports it, as ``lookup``, from the parent's checkout
PLDCORE_DIR = str(Path(pldcore.__file__).resolve().parent)
from pldcore.errors import PLDError
from lookup.files import check_could_define_a_drafter, compile_source, file_drafter_name
from lookup.registry import ENTRY_POINT_GROUP
from pldcore.names import unknown_name
from pldcore.params import check_params

CHILD_SCRIPT = Path(child_side.__file__).resolve()
CONFINE_SCRIPT = Path(confine.__file__).resolve()
#: the largest submission file: a lookup function, not a data set
SUBMISSION_MAX_BYTES = 1 << 20
#: the layers without which an entry's isolation is not full (Landlock and the audit hook are extra)
FULL_ISOLATION = ("bwrap", "seccomp")
#: the child's own report of a slow call (``Child.timed``): any other wording is not the child's
SLOW_REPORT = re.compile(r"(reset|extend|observe|observe_top|propose) took \d+ ms \(limit \d+ ms\)")
#: why an entry that asks for the vocabulary's strings is not scored on a benchmark without them
NO_VOCAB = ("the drafter asks for the vocabulary's strings (wants_vocab), which this benchmark does not hold "
            "(no vocab.json.gz beside its traces)")
#: calibration steps run before the submission is loaded (what the protocol itself costs)
CALIBRATION_STEPS = 16


@dataclass(frozen=True)
class Limits:
    """What a submission may spend. A call is over its time limit only when both the child's CPU
    time (as the parent reads it) and the parent's wall-clock round trip are over it (a
    descheduled process is not slow); a child that does not answer in time is killed."""

    call_s: float = 0.05  # each propose, extend, observe and observe_top
    reset_s: float = 5.0  # reset(prompt) and observe_top of the prompt's rows (the drafter is built at start-up)
    setup_s: float = 120.0  # start-up: imports, loading the submission, the warm-up run
    total_s: float = 300.0  # the whole replay, wall clock, enforced by the parent
    margin_s: float = 1.0  # grace the parent adds to a limit before it kills a silent child
    memory_bytes: int = 2 << 30  # address space and scratch files together (numba and torch need a large address space)
    file_bytes: int = 64 << 20  # scratch files, all of them together (each one too where no tmpfs caps the total)
    max_message: int = 1 << 20  # bytes in one answer from the child

    def to_dict(self) -> dict:
        return asdict(self)


def _bounded(params: dict | None, name: str) -> dict:
    """A submission's parameters, bounded where they enter (``pldcore.params``), before anything is
    scored or written: a parameter 60 lists deep once made the board file unreadable for everyone.
    (Our own drafters' parameters are ours: ``cross_fit`` hands ``adaptive`` a whole fit as one.)"""
    return check_params(params or {}, f"the parameters of {clean(name, 48)!r}")


@dataclass(frozen=True)
class Submission:
    """What to run: a Python file, an installed entry point, or a built-in drafter (a baseline)."""

    name: str
    source: dict  # {"kind": "file", "path": ...} | {"kind": "entry_point", "name": ...} | {"kind": "builtin", "name": ...}
    params: dict = field(default_factory=dict)

    @classmethod
    def file(cls, path: str | Path, name: str | None = None, params: dict | None = None,
             display: str | None = None) -> "Submission":
        """``display``: the file's name as submitted (the path may be its copy in a board's store)."""
        path = Path(path).expanduser()
        if not path.is_file():
            raise PLDError(f"no submission file {path}")
        if path.suffix != ".py":
            raise PLDError(f"{path} is not a Python file (.py)")
        if path.stat().st_size > SUBMISSION_MAX_BYTES:
            raise PLDError(f"{path} is over {SUBMISSION_MAX_BYTES >> 20} MiB; a submission is one lookup function")
        try:  # a syntax error is one line now, in compare.py's words; parsed only, nothing of it runs here
            tree = compile_source(path.read_bytes(), display or path, only_ast=True)
        except (RecursionError, MemoryError):  # nested past the parser's patience: the child's compile says so
            tree = None
        if tree is not None:  # a file with no class to be a drafter: one line now, no sandbox, nothing recorded
            check_could_define_a_drafter(tree, display or path.name)
        return cls(name or file_drafter_name(path),
                   {"kind": "file", "path": str(path.resolve()), "display": display or path.name}, _bounded(params, path.name))

    @classmethod
    def entry_point(cls, name: str, display: str | None = None, params: dict | None = None) -> "Submission":
        names = sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))
        if name not in names:
            raise PLDError(f"{unknown_name('entry point', name, names)} (group {ENTRY_POINT_GROUP})")
        return cls(display or name, {"kind": "entry_point", "name": name}, _bounded(params, name))

    @classmethod
    def builtin(cls, name: str, params: dict | None = None) -> "Submission":
        """A drafter whose code ships with pld-lab (ours or a peer's port): only a registered name
        of ours, never a path or a plug-in (looking one up would import it in this process)."""
        name = lookup.canonical(name) if isinstance(name, str) else name  # ``none`` is ``plain``
        if not isinstance(name, str) or name not in lookup.trusted_names():
            raise PLDError(unknown_name("built-in drafter", clean(name, 80), lookup.trusted_names()))
        if not isinstance(params, (dict, type(None))):
            raise PLDError(f"the parameters of {name!r} are not an object")
        return cls(name, {"kind": "builtin", "name": name}, params or {})

    def child_source(self) -> dict:
        """What the child loads: the source, with an entry point resolved to its package's files
        (the child reads no package metadata)."""
        if self.source["kind"] != "entry_point":
            return dict(self.source)
        ep = _entry_point(self.source["name"])
        spec = importlib.util.find_spec(ep.value.split(":")[0].split(".")[0])  # a top-level name: found, not imported
        if spec is None or not spec.origin:
            raise PLDError(f"entry point {self.source['name']!r}: cannot find {ep.value}")
        places = list(spec.submodule_search_locations or [])
        return {**self.source, "value": ep.value, "top": spec.name, "origin": spec.origin,
                "package_dir": places[0] if places else None}

    def extra_roots(self) -> list[str]:
        """What the child must read besides Python and ``lookup``: the file, or the plug-in's package."""
        if self.source["kind"] == "file":
            return [self.source["path"]]
        if self.source["kind"] == "entry_point":
            source = self.child_source()
            return [source["package_dir"] or source["origin"]]
        return list(isolation.extra_paths(self.source["name"]))  # a built-in that needs transformers

    def describe(self) -> str:
        kind, what = self.source["kind"], self.source.get("path") or self.source.get("name")
        return f"{kind} {what}"


#: the most module names the zygote preloads for a submission
MAX_PRELOADS = 64


def preloads(submission: Submission) -> dict:
    """What the zygote imports before any case, for the hello: the modules a submission's source
    names that are ours to trust (``lookup``, numpy, numba, torch... :data:`isolation.ALLOWED_PACKAGES`),
    found by parsing the source (never running it), and the drafters of ours whose names it holds as
    strings (``lookup.create("suffix-automaton")``), to warm up. A case process then imports and
    compiles nothing it would pay seconds for in every case. A built-in's class is loaded by the
    zygote itself."""
    if submission.source["kind"] == "builtin":
        return {"preload": [], "warm": []}
    if submission.source["kind"] == "file":
        files = [Path(submission.source["path"])]
    else:
        source = submission.child_source()
        root = Path(source["package_dir"] or source["origin"])
        files = sorted(root.rglob("*.py"))[:200] if root.is_dir() else [root]
    trusted = ("lookup", "pldcore", *isolation.ALLOWED_PACKAGES)
    names: list[str] = []
    # not one whose code needs packages a submission may not read (they would be in memory)
    drafters = [d for d in lookup.trusted_names() if d not in isolation.EXTRA_DISTRIBUTIONS]
    warm: list[str] = []
    for path in files:
        try:
            tree = ast.parse(path.read_bytes()[:SUBMISSION_MAX_BYTES])
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            names += [n for n in found if n.split(".")[0] in trusted and n not in names]
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                warm += [d for d in drafters if (node.value == d or node.value.startswith(d + ":")) and d not in warm]
    return {"preload": names[:MAX_PRELOADS], "warm": warm[:MAX_PRELOADS]}


def _entry_point(name: str):
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep
    raise PLDError(f"no entry point {name!r} in group {ENTRY_POINT_GROUP}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms" if seconds < 1 else f"{seconds:g} s"


# -- the parent's end of the sandbox ----------------------------------------------------------------------
class Sandbox:
    """One submission's child process. Use as a context manager; every failure is a Disqualified
    (or a PLDError when the sandbox itself cannot start, or cannot give required isolation)."""

    def __init__(self, submission: Submission, vocab_size: int, limits: Limits = Limits(),
                 deny: Sequence[str | Path] = (), landlock: bool = True, audit_hook: bool = True,
                 seccomp: bool = True, bwrap: bool = True, require_isolation: bool = False,
                 stream: bool = False, public: bool = True, vocab: Sequence[str] | None = None,
                 setting: Setting | None = None) -> None:
        self.submission, self.vocab_size, self.limits = submission, int(vocab_size), limits
        # the setting the entry is scored in (None: the reference setting, pldcore.setting.reference_setting),
        # sent with the hello: the child builds a drafter that plans (Drafter.uses_setting) for it
        self.setting = (setting or reference_setting()).to_dict()
        # the vocabulary's strings (the benchmark's vocab.json.gz), sent once with the hello: the child
        # hands them to an entry that asks (Drafter.wants_vocab), which never reads a file for them
        self.vocab = None if vocab is None else tuple(vocab)
        # stream: one case process serves every sequence with one drafter (an entry with a history
        # across requests); otherwise each sequence gets a case process of its own
        self.stream = stream
        # public: the benchmark is public, so a crash's reason may quote the entry's last output
        self.public = public
        # turning a layer off is for tests (and kernels where one misbehaves)
        self.landlock, self.audit_hook, self.seccomp = landlock, audit_hook, seccomp
        self.bwrap_problem = isolation.bwrap_problem() if bwrap else "turned off"
        self.require_isolation = require_isolation
        extra = self.submission.extra_roots()
        forbidden = [p for p in isolation.forbidden_paths() if not any(isolation.under(p, r) for r in extra)]
        self.deny = [os.path.realpath(p) for p in [*deny, cache_dir(), *forbidden]]
        self.isolation = "?"
        self.layers: list[str] = []
        self.setup_s = 0.0
        self.overhead_s = 0.0  # the protocol's own CPU cost per request, left out of every charge
        self.wants_top = 0
        self.refused: list[str] = []
        self.refused_count = 0
        self.reset_total_s = 0.0  # the parent's measure of every reset so far
        self.log_tail = ""
        self._proc: subprocess.Popen | None = None
        self._pipe: Pipe | None = None
        self._tail: OutputTail | None = None
        self._refusals: int | None = None  # the read end of the refusal channel
        self._refusal_fd = -1  # its write end's number in the child
        self._pid: int | None = None  # the pid (as this process sees it) of the process serving requests now
        self._zygote: Pipe | None = None  # the channel to the zygote, which forks the case processes
        self._zpid: int | None = None
        self._served = False  # whether the case process has served a sequence yet
        self._case_cpu_s = 0.0  # CPU seconds of the case processes that have ended
        self._peak_kb: int | None = None
        self._case_layers: list[str] | None = None
        self._counted: int | None = None  # the case process whose usage was last kept
        self._unreaped = False  # a case process was killed and the zygote's report of it is unread
        self._root: Path | None = None
        self._home: Path | None = None
        self._deadline = math.inf
        self._mark = 0.0  # the child's CPU clock at its last answer
        self._last_seen: tuple[float | None, int | None] = (None, None)  # CPU s and peak kB, read before a kill

    @property
    def bwrapped(self) -> bool:
        return self.bwrap_problem is None

    @property
    def full_isolation(self) -> bool:
        return all(layer in self.layers for layer in FULL_ISOLATION)

    # -- lifecycle ------------------------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def roots(self) -> tuple[list[str], list[str]]:
        """(reads, hidden) of the child; a denied path (traces, board, model, caches) under a
        readable one is a PLDError."""
        lookup_dir = str(Path(lookup.__file__).resolve().parent)
        reads, hidden = isolation.read_paths(lookup_dir, [PLDCORE_DIR, str(CHILD_SCRIPT), str(CONFINE_SCRIPT),
                                                          *self.submission.extra_roots()])
        # a cache set to a folder that holds the Python installation (PLD_LAB_CACHE=$HOME) cannot be
        # denied wholesale; the trace folders inside it still are
        self.deny = [d for d in self.deny if not any(isolation.under(r, d) for r in reads)]
        for denied in self.deny:
            for root in reads:
                if isolation.under(denied, root) and not any(isolation.under(denied, h) for h in hidden):
                    raise PLDError(f"{denied} lies under {root}, which submissions may read; move it elsewhere")
        return reads, hidden

    def start(self) -> None:
        """Start the child, learn which layers hold, calibrate, load and warm up the submission."""
        reads, hidden = self.roots()
        _refresh_kernel_caches()
        _sweep_stale_dirs()
        t0 = time.monotonic()
        self._launch(reads, hidden)
        self._confined(reads, hidden, t0 + self.limits.setup_s + self.limits.margin_s)
        self._mark = self._cpu()
        self._calibrate()
        self._open_case(t0 + self.limits.setup_s + self.limits.margin_s)
        self.setup_s = time.monotonic() - t0
        self._deadline = time.monotonic() + self.limits.total_s

    def begin_run(self, setting: Setting) -> None:
        """Serve another run of the same entry (another track: ``setting``) with this sandbox: the
        last run's case process ends, the zygote makes the next ones for the new setting (a built-in
        warmed up again in it), and what the sandbox counts for a run starts again: CPU, memory,
        refusals, resets, the replay's time limit. What is kept is the zygote, which never runs
        submitted code, and the calibration: every case still gets a process of its own, so nothing
        of one run reaches the next (a stream entry's history included)."""
        if self._proc is None or self._zygote is None:
            raise PLDError("the sandbox is not running")
        t0 = time.monotonic()
        deadline = t0 + self.limits.setup_s + self.limits.margin_s
        self._end_case()
        self._reaped()
        self._pipe, self._pid = self._zygote, self._zpid
        self.setting = setting.to_dict()
        reply = json_answer(self._exchange(("setting", self.setting), deadline, "start-up", self._late_start))
        error = error_in(reply, ("exception",))
        if error is not None:
            self.kill()
            raise error
        fields(reply, {"ready": bool})
        self._drain_refusals()  # the last run's, reported with it
        self.refused, self.refused_count, self.reset_total_s = [], 0, 0.0
        self._case_cpu_s, self._peak_kb, self._last_seen = 0.0, None, (None, None)
        self.wants_top = 0  # the new setting's drafter may ask for other rows: its first case says
        self._deadline = math.inf
        self._open_case(deadline)
        self.setup_s = time.monotonic() - t0
        self._deadline = time.monotonic() + self.limits.total_s

    def _environment(self, home: Path) -> dict:
        return {
            "HOME": str(home), "PLD_LAB_CACHE": str(home / "cache"), "TMPDIR": str(home / "tmp"),
            "XDG_CACHE_HOME": str(home / "cache"), "PATH": os.defpath, "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
            # torch would scan every installed distribution for device plug-ins and import them
            "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
        }

    def _launch(self, reads: list[str], hidden: list[str]) -> None:
        # resolved: without bubblewrap the audit hook compares resolved paths with the write root
        self._root = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-")))
        self._home = self._root / "home"
        for sub in ("cache", "tmp"):  # inside bubblewrap the scratch tmpfs covers these: the child makes them again
            (self._home / sub).mkdir(parents=True)
        parent_sock, child_sock = socket.socketpair()
        refusal_r, refusal_w = os.pipe()
        log_r, log_w = os.pipe()
        info_r, info_w = os.pipe() if self.bwrapped else (None, None)
        command = [sys.executable, "-I", "-B", str(CHILD_SCRIPT), str(child_sock.fileno())]
        if self.bwrapped:
            command = isolation.bwrap_command(reads, hidden, str(self._home), self.limits.file_bytes, info_w) + command
        fds = [child_sock.fileno(), refusal_w] + ([info_w] if info_w is not None else [])
        try:
            self._proc = subprocess.Popen(command, cwd=self._home, env=self._environment(self._home),
                                          stdin=subprocess.DEVNULL, stdout=log_w, stderr=subprocess.STDOUT,
                                          pass_fds=fds, close_fds=True, start_new_session=True)
        finally:
            child_sock.close()
            for fd in (refusal_w, log_w, info_w):
                if fd is not None:
                    os.close(fd)
            self._pipe, self._refusals = Pipe(parent_sock), refusal_r
            self._zygote = self._pipe
            os.set_blocking(refusal_r, False)
            self._tail = OutputTail(log_r)
            self._tail.start()
        self._refusal_fd = refusal_w  # its number in the child (passed at the same number)
        self._pid = self._zpid = self._proc.pid if info_r is None else self._bwrap_child(info_r)

    def _bwrap_child(self, info_r: int) -> int:
        """The sandboxed child's pid, from bubblewrap's report (it runs as pid 1 of its namespace)."""
        deadline, data = time.monotonic() + 30.0, b""
        try:
            while time.monotonic() < deadline and len(data) < 4096:
                ready, _, _ = select.select([info_r], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(info_r, 4096) if ready else b""
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(info_r)
        try:
            pid = json.loads(data.decode())["child-pid"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise PLDError(f"the sandbox could not start: bubblewrap reported {data[:200]!r}") from None
        return int(pid)

    def _confined(self, reads: list[str], hidden: list[str], deadline: float) -> None:
        """Send the hello; wait for the child's report of the layers that hold (made before any
        submitted code ran, so it is true)."""
        home = str(self._home)
        hello = {
            "source": self.submission.child_source(), "params": self.submission.params,
            "vocab_size": self.vocab_size, "limits": self.limits.to_dict(),
            # where a tmpfs holds the scratch files, they are memory too: the two share the limit
            "address_bytes": self.limits.memory_bytes - (self.limits.file_bytes if self.bwrapped else 0),
            "lookup_dir": str(Path(lookup.__file__).resolve().parent), "pldcore_dir": PLDCORE_DIR,
            "confine_path": str(CONFINE_SCRIPT),
            "read_roots": reads, "hidden_roots": hidden, "list_roots": isolation.list_paths(), "write_root": home,
            "deny_roots": self.deny, "devices": [d for d in isolation.DEVICES if os.path.exists(d)],
            "refusal_fd": self._refusal_fd, "landlock": self.landlock, "seccomp": self.seccomp,
            "audit_hook": self.audit_hook, "stream": self.stream, "vocab": self.vocab, "setting": self.setting,
            **preloads(self.submission),
        }
        data = self._exchange(hello, deadline, "start-up", self._late_start)
        reply = json_answer(data)
        if "error" in reply:
            fields(reply, {"error": str, "message": str})
            if self.submission.source["kind"] == "builtin":  # our code, loaded by the zygote
                raise Disqualified("exception", "during start-up: " + reply["message"])
            raise PLDError(f"the sandbox could not start: {clean(reply['message'], 500)}")
        fields(reply, {"ready": bool})

    def _layers_reported(self, data: bytes) -> None:
        """A case process's report of the layers that hold, made before any submitted code ran in
        it; every case process of an entry must hold the same ones."""
        reply = json_answer(data)
        if "error" in reply:
            fields(reply, {"error": str, "message": str})
            raise PLDError(f"the sandbox could not start: {clean(reply['message'], 500)}")
        layers = fields(reply, {"ready": bool, "layers": list})["layers"]
        if not all(type(x) is str and len(x) < 40 for x in layers):
            raise protocol_error("a malformed report of the sandbox's layers")
        if self._case_layers is not None:
            if layers != self._case_layers:
                raise protocol_error("a case process reported other layers than the first")
            return
        self._case_layers = layers
        self.layers = (["bwrap"] if self.bwrapped else []) + layers
        self.isolation = "+".join(self.layers) or "none"
        if self.require_isolation and not self.full_isolation:
            missing = [layer for layer in FULL_ISOLATION if layer not in self.layers]
            why = {"bwrap": f"bubblewrap: {self.bwrap_problem}", "seccomp": "seccomp: libseccomp is missing"}
            raise PLDError("full isolation is required but this machine lacks " + "; ".join(why[m] for m in missing)
                           + " (as root, `make setup` installs what is needed)")

    def _late_start(self) -> Disqualified:
        return Disqualified("timeout", f"start-up took over {self.limits.setup_s:g} s; killed")

    def _calibrate(self) -> None:
        """What one request costs the child when the drafter does nothing (the least of a few)."""
        message = ("step", [("e", list(child_side.CALIBRATION_DRAFT)), ("o", 3, True)], DRAFT_BUDGET)
        costs = []
        for _ in range(CALIBRATION_STEPS):
            data, charged, _ = self.call(message, self.limits.setup_s, "calibration", total=False, check=False)
            draft_answer(data, DRAFT_BUDGET)
            costs.append(charged)
        self.overhead_s = min(costs)

    # -- case processes -------------------------------------------------------------------------------
    def _open_case(self, deadline: float) -> None:
        """Ask the zygote for a fresh case process; take its channel, learn its pid, its layers,
        and load the submission in it. Its start-up is not charged, and not counted in the
        replay's total time."""
        t0 = time.monotonic()
        self._pipe, self._pid = self._zygote, self._zpid
        self._reaped()
        try:
            self._zygote.send(("case",), deadline)
            fd = self._receive_channel(deadline)
            inner = fields(json_answer(self._zygote.receive(deadline, 4096)), {"pid": int})["pid"]
        except TimeoutError:
            self.kill()
            raise self._late_start() from None
        except (EOFError, OSError):
            raise self._crashed("start-up") from None
        self._pipe = Pipe(socket.socket(fileno=fd))
        self._pid = self._case_pid(inner)
        self._served = False
        self._layers_reported(self._exchange(None, deadline, "start-up", self._late_start))
        data = self._exchange(("load",), deadline, "start-up", self._late_start)
        reply = json_answer(data)
        error = error_in(reply, ("load", "params", "exception"))
        if error is not None:
            self.kill()
            raise error
        reply = fields(reply, {"loaded": bool, "wants_top": int, "wants_vocab": bool})
        wants = reply["wants_top"]
        if wants < 0:
            raise protocol_error(f"wants_top {wants}")
        if reply["wants_vocab"] and self.vocab is None:  # never scored without what it asked for
            self.kill()
            raise Disqualified("unscorable", NO_VOCAB)
        if self._case_layers is not None and self.wants_top and min(wants, MAX_TOP) != self.wants_top:
            raise protocol_error("a case process's drafter wants other top-k rows than the first's")
        self.wants_top = min(wants, MAX_TOP)
        self._mark = self._cpu()
        if self._deadline != math.inf:
            self._deadline += time.monotonic() - t0

    def _receive_channel(self, deadline: float) -> int:
        """The case process's channel, which the zygote sends as ``b"C"`` with one descriptor."""
        sock = self._zygote.sock
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        message, fds, _, _ = socket.recv_fds(sock, 1, 1)
        if not message:
            for fd in fds:
                os.close(fd)
            raise EOFError
        if message != b"C" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise PLDError("the sandbox's zygote sent something other than a case channel")
        return fds[0]

    def _case_pid(self, inner: int) -> int:
        """The case process's pid as this process sees it: the zygote's child whose pid in the
        zygote's own namespace (the last of its NSpid; bubblewrap gives the zygote a namespace of its
        own) is ``inner``, the pid the zygote reported. The zygote runs nothing submitted, so its
        word is good; a case process forked ahead may be its child too."""
        path = f"/proc/{self._zpid}/task/{self._zpid}/children"
        pids: list[str] = []
        for _ in range(200):
            try:
                pids = Path(path).read_text().split()
            except OSError:
                pids = []
            for pid in pids:
                if isolation.namespace_pid(int(pid)) == inner:
                    return int(pid)
            time.sleep(0.005)
        raise PLDError(f"the sandbox cannot find its case process ({path}: {pids}; the zygote named {inner})")

    def _end_case(self) -> None:
        """Stop the case process (a sequence is over): SIGKILL, its CPU time and peak memory kept
        for the usage report. The zygote's report of its end is read before the next request to
        the zygote (:meth:`_reaped`), so the kill and the next case's start overlap."""
        if self._pipe is None or self._pipe is self._zygote:
            return
        self._keep_usage()
        with contextlib.suppress(OSError, TypeError):
            os.kill(self._pid, signal.SIGKILL)
        self._pipe.close()
        self._pipe, self._pid = self._zygote, self._zpid
        self._unreaped = True

    def _reaped(self) -> None:
        """Wait for the zygote's report that the last case process is gone (it has removed that
        process's scratch folder too), if it has not been read yet."""
        if not self._unreaped:
            return
        self._unreaped = False
        try:
            self._exit_report(10.0)
        except (TimeoutError, EOFError, OSError, ValueError, Disqualified):
            self.kill()
            raise PLDError("the sandbox's zygote did not report the end of a case") from None

    def _exit_report(self, wait_s: float) -> int:
        """The zygote's report of the last case process's end (``J {"exit": code}``): its exit code,
        read within ``wait_s`` seconds (the pipe's and the protocol's errors pass through)."""
        return fields(json_answer(self._zygote.receive(time.monotonic() + wait_s, 4096)), {"exit": int})["exit"]

    def _keep_usage(self) -> None:
        """Add the case process's CPU time and peak memory to the sandbox's (once per process)."""
        if self._pid is None or self._pid == self._zpid or self._pid == self._counted:
            return
        self._counted = self._pid
        try:
            self._case_cpu_s += isolation.cpu_seconds(self._pid)
        except (OSError, ValueError, IndexError):
            pass
        peak = isolation.peak_memory_kb(self._pid)
        if peak is not None:
            self._peak_kb = max(self._peak_kb or 0, peak)

    def next_sequence(self) -> None:
        """Before a sequence: a fresh case process, unless this sandbox serves a stream (or the
        current one has served nothing yet)."""
        if self._served and not self.stream:
            self._end_case()
            self._open_case(time.monotonic() + self.limits.setup_s + self.limits.margin_s)
        self._served = True

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None and self._zygote is not None:
                try:
                    self._end_case()
                    self._reaped()
                    self._zygote.send(("quit",), time.monotonic() + 1.0)
                    self._proc.wait(timeout=1.0)
                except (OSError, PLDError, TimeoutError, subprocess.TimeoutExpired):
                    pass
            self.kill()
        for pipe in {id(p): p for p in (self._pipe, self._zygote) if p is not None}.values():
            pipe.close()
        self._pipe = self._zygote = None
        self._drain_refusals()
        if self._refusals is not None:
            os.close(self._refusals)
            self._refusals = None
        if self._tail is not None:
            self._tail.join(timeout=5.0)
            self.log_tail = self._tail.text
            self._tail = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def kill(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._last_seen = self._measure()
        self._keep_usage()
        pids = [(self._pid, os.kill)] if self._pid != self._zpid else []
        for pid, kill in (*pids, (self._zpid, os.kill), (self._proc.pid, os.killpg)):
            try:
                kill(pid, signal.SIGKILL)  # the child; then bubblewrap's (or the child's own) session
            except (OSError, TypeError):
                pass
        self._proc.wait()

    # -- the child's clock, memory, refusals and files ------------------------------------------------------
    def _cpu(self) -> float:
        try:
            return isolation.cpu_seconds(self._pid)
        except (OSError, ValueError, IndexError, TypeError):
            return self._mark  # the child is gone: the next read of the pipe says how

    def _drain_refusals(self) -> None:
        """Read what the audit hook refused since the last time (the child wrote each at once)."""
        if self._refusals is None:
            return
        while True:
            try:
                chunk = os.read(self._refusals, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                return
            lines = [line for line in chunk.split(b"\n") if line]  # newlines only: a path may hold any other byte
            self.refused_count += len(lines)
            for line in lines:
                if len(self.refused) < 50:
                    self.refused.append(clean(line.decode("utf-8", "replace"), 200))

    def _check_disk(self) -> None:
        """Where no tmpfs caps the scratch files, their total is checked before and after every sequence."""
        if self.bwrapped or self._home is None:
            return
        used = 0
        for folder, _, files in os.walk(self._home):
            for name in files:
                try:
                    used += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:
                    pass
        if used > self.limits.file_bytes:
            self.kill()
            raise Disqualified("disk", f"scratch files hold {used >> 20} MiB (limit {self.limits.file_bytes >> 20} MiB)")

    def _measure(self) -> tuple[float | None, int | None]:
        """(CPU seconds, peak resident kB) of the case processes, those that ended included, while
        the sandbox lives; what was last seen after."""
        if self._proc is None or self._proc.poll() is not None or self._pid is None:
            return self._last_seen
        live = self._cpu() if self._pid != self._zpid else 0.0
        peak = isolation.peak_memory_kb(self._pid) if self._pid != self._zpid else None
        peaks = [p for p in (peak, self._peak_kb) if p is not None]
        return round(self._case_cpu_s + live, 6), max(peaks) if peaks else None

    def usage(self) -> dict:
        """What the parent measured of the child: CPU seconds, peak memory, refused operations."""
        self._drain_refusals()
        cpu_s, peak_kb = self._measure()
        return {"cpu_s": cpu_s, "max_rss_kb": peak_kb, "refused_count": self.refused_count,
                "refused": list(self.refused), "overhead_us": round(1e6 * self.overhead_s, 3)}

    # -- messages -------------------------------------------------------------------------------------
    def _exchange(self, message, deadline: float, what: str,
                  late: Callable[[], Disqualified] | None = None) -> bytes:
        """Send one message (None: send nothing) and read one answer by ``deadline``; no answer in
        time kills the child and raises ``late()`` (made only then: a replay makes tens of
        thousands of exchanges, and a Disqualified's cleaned message costs tens of microseconds)."""
        if self._proc is None or self._pipe is None:
            raise PLDError("the sandbox is not running")
        try:
            if message is not None:
                self._pipe.send(message, deadline)
            return self._pipe.receive(deadline, self.limits.max_message)
        except TimeoutError:
            self.kill()
            raise (late() if late else Disqualified("timeout", f"no answer to {what} in time; killed")) from None
        except EOFError:
            raise self._crashed(what) from None
        except ValueError:
            self.kill()
            raise protocol_error(f"an answer to {what} longer than {self.limits.max_message} bytes") from None
        except OSError:
            raise self._crashed(what) from None

    def call(self, message, limit: float, what: str, total: bool = True, check: bool = True) -> tuple[bytes, float, float]:
        """One request of the replay: wait at most ``limit`` + margin (and, with ``total``, never
        past the whole replay's limit). Returns (answer, CPU seconds charged, wall seconds).

        The charge is what the child's CPU clock advanced since its previous answer, less the
        protocol's cost. With ``check``, a charge and a round trip both over ``limit`` are too slow,
        and an error report from the child is raised as the Disqualified it stands for.
        """
        wait = limit + self.limits.margin_s
        left = self._deadline - time.monotonic() if total else math.inf
        if left < wait:
            def late() -> Disqualified:
                return Disqualified("total-time", f"the replay ran past its limit of {self.limits.total_s:g} s")
        else:
            def late() -> Disqualified:
                return Disqualified("timeout", f"no answer to {what} within {wait:.2f} s "
                                               f"(limit {_ms(limit)} + {self.limits.margin_s:g} s grace); killed")
        t0 = time.perf_counter()
        data = self._exchange(message, time.monotonic() + max(0.0, min(wait, left)), what, late)
        wall = time.perf_counter() - t0
        now = self._cpu()
        charged, self._mark = max(0.0, now - self._mark - self.overhead_s), now
        if check:
            if data[:1] == b"J":  # an error report: the child's last word either way
                self.kill()
                error = error_in(json_answer(data), ("slow", "invalid", "exception")) or protocol_error(
                    f"a report in answer to {what}")
                if error.kind == "slow" and not SLOW_REPORT.fullmatch(error.message):
                    # the entry can raise the child's TooSlow itself: then the parent's words, not its own
                    error = Disqualified("slow", f"{what}: a call over its limit of {_ms(limit)} by the child's clock "
                                                 f"({_ms(charged)} of CPU for the request, measured by the parent)")
                raise error
            if charged > limit and wall > limit:
                self.kill()
                raise Disqualified("slow", f"{what} took {_ms(charged)} of CPU (limit {_ms(limit)}; measured by the parent)")
        return data, charged, wall

    def _crashed(self, what: str) -> Disqualified:
        """The Disqualified for a case process (or the whole sandbox) that ended during ``what``:
        its exit code, from the zygote's report (or the process's own when the zygote is gone)."""
        code = None
        if self._pipe is not None and self._pipe is not self._zygote:  # a case process ended
            self._keep_usage()
            self._pipe.close()
            self._pipe, self._pid = self._zygote, self._zpid
            try:
                code = self._exit_report(5.0)
            except (TimeoutError, EOFError, OSError, ValueError, Disqualified):
                code = None
            time.sleep(0.05)  # what it printed last reaches the output thread
        if code is None and self._proc is not None:
            try:
                code = self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
                code = self._proc.returncode
            if code is not None and self.bwrapped and code > 128:
                code = -(code - 128)  # bubblewrap exits with 128 + the signal that killed the child
            if self._tail is not None:
                self._tail.join(timeout=2.0)
        self.kill()
        if code == child_side.EXIT_TAMPERED:
            return protocol_error("the submission closed or replaced the sandbox's refusal channel")
        how = "exited" if code is None else (f"killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}")
        if not self.public:  # the code and the signal are the entry's to choose: a byte it could send out
            how = "ended"
        tail = ""
        if self.public:  # on a benchmark nobody may read, the entry's output must not reach the board
            last = [line for line in (self._tail.text if self._tail else "").strip().splitlines() if line.strip()]
            tail = f"; last output: {last[-1].strip()[:200]}" if last else ""
        return Disqualified("crash", f"the process {how} during {what}{tail}")

    # -- replay ---------------------------------------------------------------------------------------
    def drafter(self) -> "SandboxedDrafter":
        return SandboxedDrafter(self)

    def replay(self, case, profile, draft_budget: int = DRAFT_BUDGET):
        """``experiments.running.replay.replay_case`` through the sandbox: (GenerationResult, parent round-trip s)."""
        self.next_sequence()
        drafter = self.drafter()
        try:
            out = replay_case(case, drafter, profile, draft_budget=draft_budget)
        except DrafterFailed as exc:  # the proxy's own verdict (Disqualified), as it was raised
            raise exc.__cause__ from None
        except DraftError as exc:
            self.kill()
            raise Disqualified("invalid", str(exc).replace(" (SandboxedDrafter)", "")) from None
        except PLDError as exc:  # the benchmark cannot serve this drafter (no top-k rows, say)
            self.kill()
            raise Disqualified("unscorable", str(exc)) from None
        drafter.finish()
        drafter.apply_times(out.stats)
        self._check_disk()
        return out, drafter.round_trip_s

    def generate(self, target, prompt, max_new_tokens: int, **kwargs):
        """``decoding.generate`` on any target (a live model for --verify) with the sandboxed drafter."""
        self.next_sequence()
        drafter = self.drafter()
        try:
            out = decoding.generate(target, prompt, drafter, max_new_tokens, **kwargs)
        except DrafterFailed as exc:  # the proxy's own verdict (Disqualified), as it was raised
            raise exc.__cause__ from None
        except DraftError as exc:
            self.kill()
            raise Disqualified("invalid", str(exc).replace(" (SandboxedDrafter)", "")) from None
        drafter.finish()
        drafter.apply_times(out.stats)
        return out


TEMP_PREFIX = "pld-sandbox-"
_caches_fresh = False


def _sweep_stale_dirs() -> None:
    """Remove the temp dirs of sandboxes whose parent was killed before it could clean up."""
    for path in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*-*"):
        try:
            pid = int(path.name[len(TEMP_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ValueError:
            continue  # not ours
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


def _refresh_kernel_caches() -> None:
    """Build each built-in once here, so that numba's on-disk cache of their kernels is current:
    the child may only read it, and would otherwise compile them again (seconds) in every sandbox."""
    global _caches_fresh
    if _caches_fresh:
        return
    _caches_fresh = True
    child_side.warm_builtins()


class SandboxedDrafter(Drafter):
    """The parent's stand-in for the submission: forwards every call to the child, batched per step,
    and keeps the parent's measure of each step's cost."""

    def __init__(self, box: Sandbox) -> None:
        super().__init__()
        self.box = box
        self.name = box.submission.name
        self.wants_top = box.wants_top  # what the child's drafter asked for, at most MAX_TOP
        self.step_s: list[float] = [0.0]  # child CPU seconds charged per step (the last: not yet a step)
        self.reset_s = 0.0
        self.round_trip_s = 0.0  # the parent's wall time waiting on the child, per sequence
        self._events: list[tuple] = []
        self._wait = 0.0  # the time limits of the queued calls, added up
        self._last: Draft | None = None
        self._proposed = False

    def reset(self, prompt) -> None:
        self.box._check_disk()
        self.box._drain_refusals()
        self._events, self._wait, self._last, self._proposed = [], 0.0, None, False
        data, charged, wall = self.box.call(("reset", [int(t) for t in prompt]), self.box.limits.reset_s, "reset")
        if data != child_side.RESET_DONE:
            self.box.kill()
            raise protocol_error("an answer to reset that is not its acknowledgement")
        self.reset_s, self.step_s, self.round_trip_s = charged, [charged], wall  # reset counts as step 0's
        self.box.reset_total_s += charged

    def _queue(self, event: tuple, limit: float) -> None:
        self._events.append(event)
        self._wait += limit

    def extend(self, tokens) -> None:
        self._queue(("e", [int(t) for t in tokens]), self.box.limits.call_s)

    def observe(self, draft: Draft, accepted: int) -> None:
        used = self._last is not None and draft is self._last
        self._queue(("o", int(accepted), used), self.box.limits.call_s)
        self.step_s.append(0.0)
        self._last = None

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        """Queue the target's top-k rows for the child, as bytes ([n] int64, [n, k] int64, [n, k] float16)."""
        tokens = np.ascontiguousarray(tokens, dtype="<i8").reshape(-1)
        top = np.ascontiguousarray(top, dtype="<i8").reshape(len(tokens), -1)
        probs = np.ascontiguousarray(probs, dtype="<f2").reshape(top.shape)
        prompt = not self._proposed  # the prompt's rows come before the first propose: reset's limit
        limits = self.box.limits
        self._queue(("t", tokens.tobytes(), int(top.shape[1]), top.tobytes(), probs.tobytes(), prompt),
                    limits.reset_s if prompt else limits.call_s)

    def propose(self, budget: int) -> Draft:
        self._proposed = True
        draft = self._send(int(budget))
        self._last = draft
        return draft

    def finish(self) -> None:
        """Deliver the last step's extend/observe (their time counts too)."""
        if self._events:
            self._send(None)

    def _send(self, budget: int | None) -> Draft | None:
        events, wait = self._events, self._wait + (self.box.limits.call_s if budget is not None else 0.0)
        self._events, self._wait = [], 0.0
        what = "propose" if budget is not None else "extend/observe"
        data, charged, wall = self.box.call(("step", events, budget), wait, what)
        self.round_trip_s += wall
        self.step_s[-1] += charged
        try:
            return draft_answer(data, budget)
        except Disqualified:
            self.box.kill()
            raise

    def apply_times(self, stats) -> None:
        """Set each step's drafter time to the parent's measure (reset in the first step's), and the total."""
        steps = stats.steps
        for record, seconds in zip(steps, self.step_s):
            record.drafter_s = seconds
        if steps and len(self.step_s) > len(steps):  # the last extend/observe, delivered after the last step
            steps[-1].drafter_s += sum(self.step_s[len(steps):])
        stats.drafter_s = sum(self.step_s)


# -- a whole evaluation -------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """A submission's replay over trace sets: per-case results, or the reason it was disqualified."""

    submission: Submission
    cases: list = field(default_factory=list)  # (TraceSet, TraceCase, GenerationResult) per case
    reason: str | None = None  # None = every case ran within the rules
    refused: list[str] = field(default_factory=list)
    isolation: str = "?"
    full_isolation: bool = False
    setup_s: float = 0.0
    seconds: float = 0.0
    round_trip_s: float = 0.0
    reset_s: float = 0.0  # the parent's measure of every reset, added up
    log_tail: str = ""
    usage: dict = field(default_factory=dict)
    stream: bool = False  # one drafter served every case, in order

    @property
    def ok(self) -> bool:
        return self.reason is None


def trace_roots(sets) -> list[str]:
    """The folders denied to an entry for the traces of ``sets``: every shipped benchmark's and every
    fresh recording's (the cache's ``fresh/``), whichever of them is scored, so the hello names the
    same folders on the public cases as on fresh ones (a fresh folder's name holds its seed); a
    folder of neither kind (``--traces DIR``) is added by its own name."""
    fixed = [os.path.realpath(p) for p in (SHIPPED_ROOT, cache_dir() / "fresh")]
    own = {os.path.realpath(Path(s.path).parent) for s in sets}
    return fixed + sorted(p for p in own if not any(isolation.under(p, root) for root in fixed))


class Sandboxes:
    """Sandboxes kept alive between the runs of one entry (a build's tracks, its retries), so that
    each run does not start one: a start (a new interpreter in bubblewrap, its imports, warm-up and
    calibration) costs about as much as a run over a small benchmark. :func:`evaluate` takes the one
    a run's start would make (the same entry, limits, isolation, what it may read, vocabulary),
    moves it to the run's setting (:meth:`Sandbox.begin_run`) and gives it back when the run is
    scored; one that disqualified its entry is closed, never served again. A context manager: on
    leaving it every kept sandbox is closed."""

    def __init__(self) -> None:
        self._kept: dict[str, Sandbox] = {}

    def take(self, key: str, vocab: Sequence[str] | None) -> Sandbox | None:
        """The sandbox kept under ``key`` that holds vocabulary ``vocab``, out of the pool (None if none)."""
        box = self._kept.pop(key, None)
        if box is not None and box.vocab != (None if vocab is None else tuple(vocab)):
            box.close()
            return None
        return box

    def keep(self, key: str, box: Sandbox) -> None:
        """Keep ``box`` (taken out with :meth:`take`, or new) for the next run under ``key``."""
        self._kept[key] = box

    def close(self) -> None:
        while self._kept:
            self._kept.popitem()[1].close()

    def __enter__(self) -> "Sandboxes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _start_key(submission: Submission, vocab: int, limits: Limits, deny: Sequence[str], landlock: bool,
               require_isolation: bool, stream: bool, public: bool) -> str:
    """What a sandbox's start depends on, besides the vocabulary's strings and the setting."""
    return json.dumps([submission.name, submission.source, submission.params, vocab, limits.to_dict(),
                       sorted(map(str, deny)), landlock, require_isolation, stream, public], sort_keys=True, default=str)


def evaluate(submission: Submission, sets, limits: Limits = Limits(), deny: Sequence[str | Path] = (),
             landlock: bool = True, progress: Callable[[], None] | None = None,
             require_isolation: bool = False, stream: bool = False, public: bool = True,
             profile: CostProfile | None = None, draft_budget: int = DRAFT_BUDGET, batch: int = 1,
             boxes: Sandboxes | None = None) -> Evaluation:
    """Replay ``submission`` over every case of ``sets`` in one sandbox, each case in a process of
    its own; ``stream``: one drafter serves every case in the benchmark's order (``in_order``),
    keeping what it learns; ``public``: the cases are public (see :class:`Sandbox`); ``profile``:
    the cost profile the cases are priced and a drafter that plans plans under (None: the traces'
    own; the setting is :func:`~experiments.benchmarks.traces.traces_setting`'s); ``draft_budget``:
    the most draft nodes per step; ``batch``: the requests a step serves, as the setting says (a
    batch track's); ``boxes``: where a sandbox started for an earlier run of the entry is taken from
    and kept for the next (:class:`Sandboxes`; None: one started and closed for this run). Never
    raises Disqualified."""
    vocab = max((c.vocab_size for s in sets for c in s.cases), default=0)
    if not vocab:
        raise PLDError("the trace sets hold no cases")
    deny = [*deny, *trace_roots(sets)]
    result = Evaluation(submission, stream=stream)
    t0 = time.perf_counter()
    strings = next((s.vocab for s in sets if s.vocab is not None), None)  # read only from the parent's side
    setting = traces_setting(sets, profile, batch)
    key = _start_key(submission, vocab, limits, deny, landlock, require_isolation, stream, public)
    box = boxes.take(key, strings) if boxes is not None else None
    reused, kept = box is not None, False
    if box is None:
        box = Sandbox(submission, vocab, limits, deny, landlock, require_isolation=require_isolation, stream=stream,
                      public=public, vocab=strings, setting=setting)
    try:
        if reused:
            box.begin_run(setting)
        else:
            box.start()
        result.setup_s = box.setup_s
        # the box serves every case: a fresh drafter in it per case, or its one drafter for a stream
        for trace_set, case, _, _ in serve_traces(sets, lambda _setting: box, setting, stream=stream):
            out, rt = box.replay(case, setting.profile, draft_budget)
            result.cases.append((trace_set, case, out))
            result.round_trip_s += rt
            if progress is not None:
                progress()
        result.usage = box.usage()
        if boxes is not None:
            boxes.keep(key, box)
            kept = True
    except Disqualified as exc:
        result.reason = exc.reason
        result.usage = box.usage()
    finally:
        if not kept:
            box.close()
        result.log_tail = box.log_tail
        result.isolation, result.full_isolation = box.isolation, box.full_isolation
        result.reset_s = box.reset_total_s
    result.refused = list(result.usage.get("refused", []))
    result.seconds = time.perf_counter() - t0
    return result
