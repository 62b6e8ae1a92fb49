"""Run a submitted drafter in its own locked-down process; the parent keeps the trace and the loop.

    with Sandbox(Submission.file("my_drafter.py"), vocab_size=49152) as box:
        result = box.replay(case, profile)     # a GenerationResult whose drafter times come from the child
    # a crash, a timeout, an invalid draft or an exception raises Disqualified(kind, message)

The parent runs the one decoding loop (``decoding.generate`` over a ``TraceTarget``, or a live
``ModelTarget`` for ``--verify``) with a :class:`SandboxedDrafter`: a ``Drafter`` whose calls go
to the child over one pipe. The child (``experiments/competition/child.py``) is a fresh interpreter
(``python -I``) in an empty temp dir with an empty HOME and cache; it receives the prompt and the
committed tokens, nothing else, and answers with drafts. See that file for the isolation layers.

Messages are batched: one round trip per step carries the previous step's ``extend`` and
``observe`` and this step's ``propose``. Drafter times are measured in the child (``perf_counter``
around each call), so the pipe's cost never counts against a submission; the parent's round
trip is recorded beside them.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from multiprocessing.connection import Pipe
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import decoding
import lookup
from decoding.generate import DraftError
from decoding.loading import cache_dir
from experiments.competition import child as child_side
from experiments.running.replay import DRAFT_BUDGET, replay_case
from lookup.base import Draft, Drafter
from lookup.errors import PLDError
from lookup.files import file_drafter_name
from lookup.registry import ENTRY_POINT_GROUP, unknown_name

CHILD_SCRIPT = Path(child_side.__file__).resolve()


@dataclass(frozen=True)
class Limits:
    """What a submission may spend. Times are wall-clock seconds measured in the child; a call is
    over its limit only when its CPU time is over too (a descheduled process is not slow)."""

    call_s: float = 0.05  # each propose, extend and observe
    reset_s: float = 5.0  # building a drafter and reset(prompt), once per sequence
    setup_s: float = 120.0  # start-up: imports, loading the submission, the warm-up run
    total_s: float = 300.0  # the whole replay, wall clock, enforced by the parent
    margin_s: float = 1.0  # grace the parent adds to a limit before it kills a silent child
    memory_bytes: int = 2 << 30  # RLIMIT_AS: numba/llvmlite and torch need a large address space
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE: the child's log and temp files
    max_message: int = 1 << 20  # bytes in one answer from the child

    def to_dict(self) -> dict:
        return asdict(self)


class Disqualified(Exception):
    """A submission broke a rule: ``kind`` is crash, timeout, total-time, slow, invalid, exception or load."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class Submission:
    """What to run: a Python file, an installed entry point, or a built-in drafter (a baseline)."""

    name: str
    source: dict  # {"kind": "file", "path": ...} | {"kind": "entry_point", "name": ...} | {"kind": "builtin", "name": ...}
    params: dict = field(default_factory=dict)

    @classmethod
    def file(cls, path: str | Path, name: str | None = None, params: dict | None = None) -> "Submission":
        path = Path(path).expanduser()
        if not path.is_file():
            raise PLDError(f"no submission file {path}")
        if path.suffix != ".py":
            raise PLDError(f"{path} is not a Python file (.py)")
        return cls(name or file_drafter_name(path), {"kind": "file", "path": str(path.resolve())}, params or {})

    @classmethod
    def entry_point(cls, name: str, display: str | None = None, params: dict | None = None) -> "Submission":
        names = sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))
        if name not in names:
            raise PLDError(f"{unknown_name('entry point', name, names)} (group {ENTRY_POINT_GROUP})")
        return cls(display or name, {"kind": "entry_point", "name": name}, params or {})

    @classmethod
    def builtin(cls, name: str, params: dict | None = None) -> "Submission":
        lookup.get(name)  # unknown names raise with suggestions
        return cls(name, {"kind": "builtin", "name": name}, params or {})

    def extra_roots(self) -> list[str]:
        """What the child must read besides Python and ``lookup``: the file, or the plug-in's package."""
        if self.source["kind"] == "file":
            return [self.source["path"]]
        if self.source["kind"] == "entry_point":
            return _entry_point_roots(self.source["name"])
        return []

    def describe(self) -> str:
        kind, what = self.source["kind"], self.source.get("path") or self.source.get("name")
        return f"{kind} {what}"


def _entry_point_roots(name: str) -> list[str]:
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            top = ep.value.split(":")[0].split(".")[0]
            spec = importlib.util.find_spec(top)  # a top-level name: found, not imported
            if spec is None:
                return []
            if spec.submodule_search_locations:
                return [str(p) for p in spec.submodule_search_locations]
            return [spec.origin] if spec.origin else []
    return []


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# -- the parent's end of the pipe ---------------------------------------------------------------------
class Sandbox:
    """One submission's child process. Use as a context manager; every failure is a Disqualified."""

    def __init__(self, submission: Submission, vocab_size: int, limits: Limits = Limits(),
                 deny: Sequence[str | Path] = (), landlock: bool = True, audit_hook: bool = True) -> None:
        self.submission, self.vocab_size, self.limits = submission, int(vocab_size), limits
        self.landlock, self.audit_hook = landlock, audit_hook  # turning a layer off is for tests
        self.deny = [os.path.realpath(p) for p in [*deny, cache_dir()]]
        self.isolation = "?"
        self.setup_s = 0.0
        self.log_tail = ""
        self._proc: subprocess.Popen | None = None
        self._conn = None
        self._root: Path | None = None
        self._deadline = math.inf
        self._stats: dict | None = None

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

    def roots(self) -> list[str]:
        lookup_dir = str(Path(lookup.__file__).resolve().parent)
        reads = child_side.read_roots(lookup_dir, tuple(self.submission.extra_roots()))
        # a cache set to a folder that holds the Python installation (PLD_LAB_CACHE=$HOME) cannot be
        # denied wholesale; the trace folders inside it still are
        self.deny = [d for d in self.deny if not any(_under(r, d) for r in reads)]
        for denied in self.deny:
            for root in reads:
                if _under(denied, root):
                    raise PLDError(f"{denied} lies under {root}, which submissions may read; move it elsewhere")
        return reads

    def start(self) -> None:
        """Start the child and wait until the submission is loaded and warmed up."""
        reads = self.roots()
        _refresh_kernel_caches()
        _sweep_stale_dirs()
        self._root = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
        home = self._root / "home"
        (home / "cache").mkdir(parents=True)
        (home / "tmp").mkdir()
        env = {
            "HOME": str(home), "PLD_LAB_CACHE": str(home / "cache"), "TMPDIR": str(home / "tmp"),
            "XDG_CACHE_HOME": str(home / "cache"), "PATH": os.defpath, "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
        }
        parent_end, child_end = Pipe(duplex=True)
        log = open(self._root / "child.log", "wb")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-B", str(CHILD_SCRIPT), str(child_end.fileno())],
                cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(child_end.fileno(),), close_fds=True, start_new_session=True,
            )
        finally:
            child_end.close()
            log.close()
        self._conn = parent_end
        hello = {
            "source": self.submission.source, "params": self.submission.params, "vocab_size": self.vocab_size,
            "limits": self.limits.to_dict(), "lookup_dir": str(Path(lookup.__file__).resolve().parent),
            "read_roots": reads, "write_root": str(home), "deny_roots": self.deny, "landlock": self.landlock,
            "audit_hook": self.audit_hook,
        }
        t0 = time.monotonic()
        reply = self._json(self.request(hello, self.limits.setup_s, "start-up", total=False))
        self.isolation = reply.get("isolation", "?")
        self.setup_s = time.monotonic() - t0
        self._deadline = time.monotonic() + self.limits.total_s

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None and self._conn is not None:
                try:
                    self._conn.send(("quit",))
                    self._proc.wait(timeout=1.0)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self.kill()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._root is not None:
            self.log_tail = self._read_log()
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)  # the child's own session: anything it started too
            except OSError:
                self._proc.kill()
            self._proc.wait()

    def _read_log(self, limit: int = 16000) -> str:
        path = (self._root or Path("/nonexistent")) / "child.log"
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.path.getsize(path) - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- messages -------------------------------------------------------------------------------------
    def request(self, message, limit: float, what: str, total: bool = True) -> bytes:
        """Send one message, wait for its answer at most ``limit`` + margin (and, when ``total``,
        never past the whole replay's limit)."""
        if self._proc is None or self._conn is None:
            raise PLDError("the sandbox is not running")
        try:
            self._conn.send(message)
        except OSError:
            raise self._crashed(what) from None
        wait = limit + self.limits.margin_s
        left = self._deadline - time.monotonic() if total else math.inf
        if not self._conn.poll(max(0.0, min(wait, left))):
            self.kill()
            if left < wait:
                raise Disqualified("total-time", f"the replay ran past its limit of {self.limits.total_s:g} s")
            raise Disqualified("timeout", f"no answer to {what} within {wait:.2f} s "
                                          f"(limit {_ms(limit)} + {self.limits.margin_s:g} s grace); killed")
        try:
            data = self._conn.recv_bytes(self.limits.max_message)
        except EOFError:
            raise self._crashed(what) from None
        except OSError:
            self.kill()
            raise Disqualified("invalid", f"an answer to {what} longer than {self.limits.max_message} bytes") from None
        if data[:1] == b"J":
            reply = self._json(data)
            if "error" in reply:
                kind = str(reply["error"])
                message = str(reply.get("message", ""))[:500]
                if kind == "load":
                    raise PLDError(f"{self.submission.describe()}: {message}")
                if kind == "sandbox":
                    raise PLDError(f"the sandbox could not start: {message}")
                self._stats = {"refused": reply.get("refused", [])}
                raise Disqualified(kind, message)
        return data

    def _json(self, data: bytes) -> dict:
        try:
            reply = json.loads(data[1:].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            reply = None
        if not isinstance(reply, dict) or data[:1] != b"J":
            self.kill()
            raise Disqualified("invalid", "the child sent a malformed message")
        return reply

    def _crashed(self, what: str) -> Disqualified:
        code = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
                code = self._proc.returncode
        how = "exited" if code is None else (f"killed by {_signal_name(code)}" if code < 0 else f"exited with code {code}")
        last = [line for line in self._read_log().strip().splitlines() if line.strip()]
        tail = f"; last output: {last[-1].strip()[:200]}" if last else ""
        return Disqualified("crash", f"the process {how} during {what}{tail}")

    def stats(self) -> dict:
        """What the child reports at the end: refused operations, CPU seconds, peak memory, isolation."""
        if self._stats is None:
            self._stats = self._json(self.request(("stats",), 5.0, "stats", total=False))
        return self._stats

    # -- replay ---------------------------------------------------------------------------------------
    def drafter(self) -> "SandboxedDrafter":
        return SandboxedDrafter(self)

    def replay(self, case, profile, draft_budget: int = DRAFT_BUDGET):
        """``experiments.running.replay.replay_case`` through the sandbox: (GenerationResult, parent round-trip s)."""
        drafter = self.drafter()
        try:
            out = replay_case(case, drafter, profile, draft_budget=draft_budget)
        except DraftError as exc:
            self.kill()
            raise Disqualified("invalid", str(exc).replace(" (SandboxedDrafter)", "")) from None
        drafter.finish()
        drafter.apply_times(out.stats)
        return out, drafter.round_trip_s

    def generate(self, target, prompt, max_new_tokens: int, **kwargs):
        """``decoding.generate`` on any target (a live model for --verify) with the sandboxed drafter."""
        drafter = self.drafter()
        try:
            out = decoding.generate(target, prompt, drafter, max_new_tokens, **kwargs)
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
    for name in lookup.builtin_names():
        try:
            lookup.create(name).reset([1, 2, 3, 1, 2])
        except Exception:  # noqa: BLE001 - a built-in that needs parameters warms itself when used
            pass


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms" if seconds < 1 else f"{seconds:g} s"


class SandboxedDrafter(Drafter):
    """The parent's stand-in for the submission: forwards every call to the child, batched per step."""

    def __init__(self, box: Sandbox) -> None:
        super().__init__()
        self.box = box
        self.name = box.submission.name
        self.step_s: list[float] = []  # child-measured propose + extend + observe, per step
        self.reset_s = 0.0
        self.round_trip_s = 0.0  # the parent's wall time waiting on the child, per sequence
        self._events: list[tuple] = []
        self._event_steps: list[int] = []
        self._last: Draft | None = None
        self._propose_s = 0.0

    def reset(self, prompt) -> None:
        self.step_s, self._events, self._event_steps = [], [], []
        self._last, self._propose_s, self.round_trip_s = None, 0.0, 0.0
        t0 = time.perf_counter()
        reply = self.box._json(self.box.request(("reset", [int(t) for t in prompt]), self.box.limits.reset_s, "reset"))
        self.round_trip_s += time.perf_counter() - t0
        self.reset_s = float(reply.get("s", 0.0)) if _finite(reply.get("s", 0.0)) else 0.0

    def extend(self, tokens) -> None:
        self._events.append(("e", [int(t) for t in tokens]))
        self._event_steps.append(len(self.step_s))

    def observe(self, draft: Draft, accepted: int) -> None:
        used = self._last is not None and draft is self._last
        self._events.append(("o", int(accepted), used))
        self._event_steps.append(len(self.step_s))
        self.step_s.append(self._propose_s if used else 0.0)  # extend/observe time added when reported
        self._propose_s, self._last = 0.0, None

    def propose(self, budget: int) -> Draft:
        draft = self._send(int(budget))
        self._last = draft
        return draft

    def finish(self) -> None:
        """Deliver the last step's extend/observe (their timings count too)."""
        if self._events:
            self._send(None)

    def _send(self, budget: int | None) -> Draft | None:
        events, steps = self._events, self._event_steps
        self._events, self._event_steps = [], []
        calls = len(events) + (budget is not None)
        t0 = time.perf_counter()
        data = self.box.request(("step", events, budget), self.box.limits.call_s * max(calls, 1),
                                "propose" if budget is not None else "extend/observe")
        self.round_trip_s += time.perf_counter() - t0
        head = child_side.DRAFT_HEADER
        if data[:1] != b"D" or len(data) < 1 + head.size:
            raise self._invalid("the child answered a step with something other than a draft")
        n, n_parents, n_times, propose_s, _cpu = head.unpack_from(data, 1)
        if n_times != len(events) or n < 0 or n_parents not in (-1, n) or (budget is None and n):
            raise self._invalid(f"malformed draft message ({n} tokens, {n_parents} parents, {n_times} timings)")
        if 1 + head.size + 8 * n_times + 8 * n + 4 * max(n_parents, 0) != len(data):
            raise self._invalid("malformed draft message (its length disagrees with its header)")
        at = 1 + head.size
        times = np.frombuffer(data, "<f8", n_times, at)
        at += 8 * n_times
        if not (_finite(propose_s) and propose_s >= 0 and np.all(np.isfinite(times)) and np.all(times >= 0)):
            raise self._invalid("the child reported impossible timings")
        for step, seconds in zip(steps, times.tolist()):
            while step >= len(self.step_s):
                self.step_s.append(0.0)
            self.step_s[step] += seconds
        if budget is None:
            return None
        tokens = np.frombuffer(data, "<i8", n, at).astype(np.int64)
        parents = None if n_parents < 0 else np.frombuffer(data, "<i4", n, at + 8 * n).astype(np.int32)
        draft = Draft(tokens, parents)
        problem = draft.problem()
        if problem:
            raise self._invalid(f"malformed tree: {problem}")
        self._propose_s = float(propose_s)
        return draft

    def _invalid(self, message: str) -> Disqualified:
        self.box.kill()
        return Disqualified("invalid", message)

    def apply_times(self, stats) -> None:
        """Replace the parent's timings (which include the pipe) by the child's own measurements."""
        for record, seconds in zip(stats.steps, self.step_s):
            record.drafter_s = seconds
        stats.drafter_s = sum(self.step_s[: len(stats.steps)]) + self.reset_s


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


# -- a whole evaluation -------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """A submission's replay over trace sets: per-case results, or the reason it was disqualified."""

    submission: Submission
    cases: list = field(default_factory=list)  # (TraceSet, TraceCase, GenerationResult) per case
    reason: str | None = None  # None = every case ran within the rules
    refused: list[str] = field(default_factory=list)
    isolation: str = "?"
    setup_s: float = 0.0
    seconds: float = 0.0
    round_trip_s: float = 0.0
    log_tail: str = ""
    child: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reason is None


def evaluate(submission: Submission, sets, limits: Limits = Limits(), deny: Sequence[str | Path] = (),
             landlock: bool = True, progress: Callable[[], None] | None = None) -> Evaluation:
    """Replay ``submission`` over every case of ``sets`` in one sandbox; never raises Disqualified."""
    vocab = max((c.vocab_size for s in sets for c in s.cases), default=0)
    if not vocab:
        raise PLDError("the trace sets hold no cases")
    deny = [*deny, *{str(Path(s.path).resolve().parent) for s in sets}]
    result = Evaluation(submission)
    t0 = time.perf_counter()
    box = Sandbox(submission, vocab, limits, deny, landlock)
    try:
        with box:
            result.isolation, result.setup_s = box.isolation, box.setup_s
            for trace_set in sets:
                for case in trace_set.cases:
                    out, rt = box.replay(case, trace_set.profile)
                    result.cases.append((trace_set, case, out))
                    result.round_trip_s += rt
                    if progress is not None:
                        progress()
            result.child = box.stats()
    except Disqualified as exc:
        result.reason = exc.reason
        result.child = box._stats or {}
    finally:
        result.log_tail = box.log_tail
    result.refused = list(result.child.get("refused", []))
    result.seconds = time.perf_counter() - t0
    return result
