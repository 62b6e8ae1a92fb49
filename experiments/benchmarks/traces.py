"""Trace storage: recorded greedy runs (prompt ids, output ids, the target's top-k rows) and their cost profile.

A trace file holds, per case, the prompt ids, the greedy output ids and the target's top-8 next
ids and probabilities after every token it read (prompt and output: the rows the live loop hands
a drafter that wants them), as gzip JSONL, one gzip member per case so that an interrupted
recording resumes. Ids are stored as ints; top-k rows as base64 of little-endian arrays
(uint16 ids where the vocabulary fits, else uint32; float16 probabilities).

The embedded model's benchmark ships with the package (:func:`shipped_folder`): 400 traces at
128 new tokens, the reference cost profile they are scored with, and their benchmark hash
(``BENCHMARK.json``). Traces a user records go to ``$PLD_LAB_CACHE/traces/<model>/`` or a folder
of their own, ``<task>-n<max_new_tokens>.jsonl.gz`` beside the model's ``profile.json``.
Recording lives in ``experiments.running.record``, replaying in ``experiments.running.replay``.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Sequence

import numpy as np

from decoding.loading import EMBEDDED_NAME, cache_dir
from decoding.target import TopRows
from lookup.cost import CPU_SMOLLM2, CostProfile
from lookup.errors import PLDError

#: the shipped benchmark: ``<package>/data/<model>/`` with its ``BENCHMARK.json``
SHIPPED_ROOT = Path(__file__).resolve().parent / "data"
BENCHMARK_FILE = "BENCHMARK.json"


@dataclass
class TraceCase:
    """One greedy run: what the model answered to one turn of one prompt.

    ``top`` holds the target's top-k rows after every token but the last of ``prompt + output``
    (``len(prompt) + len(output) - 1`` rows; row ``i`` follows token ``i``), or None for traces
    recorded without them.
    """

    case: str
    category: str
    turn: int
    prompt: list[int]
    output: list[int]
    step_s: list[float]  # forward seconds per step of plain decoding (empty: not kept; nothing scores them)
    model: str
    vocab_size: int
    eos: list[int]
    max_new_tokens: int
    meta: dict = field(default_factory=dict)
    top: TopRows | None = None

    def to_json(self) -> dict:
        """The case as stored (JSON-ready): ids as ints, top-k rows as base64 arrays."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "top"}
        if self.top is not None:
            ids_dtype = "<u2" if self.vocab_size <= 1 << 16 else "<u4"
            out["top"] = {"k": int(self.top.ids.shape[1]), "ids_dtype": ids_dtype,
                          "ids": _b64(self.top.ids.astype(ids_dtype)), "probs": _b64(self.top.probs.astype("<f2"))}
        return out

    @classmethod
    def from_json(cls, data: dict) -> "TraceCase":
        names = {f.name for f in fields(cls)}
        top = data.get("top")
        case = cls(**{k: v for k, v in data.items() if k in names and k != "top"})
        if top is not None:
            k = int(top["k"])
            ids = np.frombuffer(base64.b64decode(top["ids"]), top["ids_dtype"]).astype(np.int64).reshape(-1, k)
            probs = np.frombuffer(base64.b64decode(top["probs"]), "<f2").astype(np.float16).reshape(-1, k)
            case.top = TopRows(ids, probs)
            if len(ids) != len(case.prompt) + len(case.output) - 1 or len(probs) != len(ids):
                raise ValueError(f"case {case.case}: {len(ids)} top-k rows for "
                                 f"{len(case.prompt) + len(case.output)} tokens")
        return case


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


@dataclass
class TraceSet:
    """The traces of one task, with the cost profile of the model and device that recorded them."""

    path: Path
    task: str
    cases: list[TraceCase]
    profile: CostProfile

    @property
    def tokens(self) -> int:
        return sum(len(c.output) for c in self.cases)


def traces_root() -> Path:
    return cache_dir() / "traces"


def model_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


_TRACE_NAME = re.compile(r"(?P<task>.+)-n(?P<tokens>\d+)\.jsonl\.gz")


def trace_file(folder: Path, task: str, max_new_tokens: int) -> Path:
    return folder / f"{task}-n{max_new_tokens}.jsonl.gz"


def task_of(path: Path) -> str:
    """The task a trace file holds, from its name ``<task>-n<max_new_tokens>.jsonl.gz``
    (the last ``-n<digits>`` ends the task name, so a task may itself contain ``-n``)."""
    match = _TRACE_NAME.fullmatch(path.name)
    if match is None:
        raise PLDError(f"{path.name} is not a trace file name (<task>-n<max_new_tokens>.jsonl.gz)")
    return match["task"]


def _members(data: bytes) -> tuple[list[bytes], int]:
    """The decompressed complete gzip members at the start of ``data``, and the bytes they span;
    a member cut short by a crash ends the list."""
    texts, used = [], 0
    while used < len(data):  # one gzip member per case: decompress them one by one
        member = zlib.decompressobj(wbits=31)
        try:
            text = member.decompress(data[used:])
        except zlib.error:
            break
        if not member.eof:  # truncated tail
            break
        texts.append(text)
        used = len(data) - len(member.unused_data)
    return texts, used


def read_cases(path: Path) -> list[TraceCase]:
    """All complete cases of a trace file; a member cut short by a crash is dropped."""
    if not path.exists():
        return []
    cases = []
    for text in _members(path.read_bytes())[0]:
        for line in text.decode().splitlines():
            try:
                cases.append(TraceCase.from_json(json.loads(line)))
            except (json.JSONDecodeError, TypeError, ValueError, KeyError):
                continue
    return cases


def append_case(path: Path, case: TraceCase) -> None:
    """Add ``case`` as a new gzip member. A member cut by a crash is cut off first: left in place,
    it would hide every case appended after it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        size = path.stat().st_size
        complete = _members(path.read_bytes())[1]
        if complete < size:
            with path.open("r+b") as f:
                f.truncate(complete)
    with gzip.open(path, "at") as f:  # a new gzip member per case: appends never rewrite
        f.write(json.dumps(case.to_json()) + "\n")


def load_trace_sets(folder: Path | None = None) -> list[TraceSet]:
    """Every trace file under ``folder`` (default: the shipped benchmark), with its profile.

    A folder with a ``BENCHMARK.json`` must hash to the hash it records (the shipped benchmark is
    versioned data: an edited file is another benchmark); a prompt may appear only once.
    """
    folder = Path(folder) if folder else default_folder()
    if not folder.exists():
        raise PLDError(f"no traces in {folder}; record them with `python experiments/traces.py record`")
    files = sorted(folder.glob("*.jsonl.gz"))
    if not files:
        raise PLDError(f"no trace files (*.jsonl.gz) in {folder}")
    profile_file = folder / "profile.json"
    # a hand-made trace folder without a profile: the reference CPU profile
    profile = CostProfile.load(profile_file) if profile_file.exists() else CPU_SMOLLM2
    sets = [TraceSet(path, task_of(path), read_cases(path), profile) for path in files]
    check_unique_prompts(sets)
    recorded = read_benchmark(folder)
    if recorded is not None and recorded.get("hash") != benchmark_hash(sets):
        raise PLDError(f"the traces in {folder} do not match their {BENCHMARK_FILE} (hash {benchmark_hash(sets)}, "
                       f"recorded {recorded.get('hash')}): restore them (git checkout) or remove {BENCHMARK_FILE}")
    return sets


def check_unique_prompts(sets: Sequence[TraceSet]) -> None:
    """Refuse a benchmark that holds one prompt twice (say, recorded at two lengths): a drafter
    that remembers earlier cases would then replay its own memory of the answer."""
    seen: dict[bytes, str] = {}
    for trace_set in sets:
        for case in trace_set.cases:
            key = hashlib.sha256(np.asarray(case.prompt, dtype="<i8").tobytes()).digest()
            if key in seen:
                raise PLDError(f"cases {seen[key]} and {case.case} ({trace_set.path.name}) have the same prompt; "
                               "a benchmark holds each prompt once")
            seen[key] = f"{case.case} ({trace_set.path.name})"


def shipped_folder(model: str = EMBEDDED_NAME) -> Path:
    """Where the benchmark of ``model`` ships (it may not exist: only the embedded model's does)."""
    return SHIPPED_ROOT / model_key(model)


def default_folder() -> Path:
    """The traces replay, compare --replay, the bench and the competition use unless told otherwise."""
    return shipped_folder()


def recording_folder(model: str) -> Path:
    """Where ``traces.py record`` puts a model's traces unless told otherwise (never the shipped folder)."""
    return traces_root() / model_key(model)


def read_benchmark(folder: Path) -> dict | None:
    """The ``BENCHMARK.json`` of a trace folder (hash, cases, tokens, ...), or None."""
    path = Path(folder) / BENCHMARK_FILE
    return json.loads(path.read_text()) if path.exists() else None


def write_benchmark(folder: Path, sets: Sequence[TraceSet], **extra) -> dict:
    """Record the hash of a trace folder beside it (what makes it a versioned benchmark)."""
    info = {"hash": benchmark_hash(sets), "cases": sum(len(s.cases) for s in sets),
            "tokens": sum(s.tokens for s in sets), "tasks": {s.task: len(s.cases) for s in sets},
            "profile": sets[0].profile.model if sets else None, **extra}
    (Path(folder) / BENCHMARK_FILE).write_text(json.dumps(info, indent=1) + "\n")
    return info


def in_order(sets: Sequence[TraceSet]) -> list[TraceSet]:
    """The trace sets in the benchmark's order (tasks by name; each set's cases in file order): the
    order its hash reads them in, and the order a stream of requests serves them."""
    return sorted(sets, key=lambda s: s.task)


def benchmark_hash(sets) -> str:
    """A hash of what is scored: every case of every trace file (by task name) and the cost profile.

    Hashes the decoded cases rather than the gzip bytes, so that recompressing a file (gzip headers
    hold a time stamp) keeps the hash, and a cut tail that the reader drops does not count.
    """
    h = hashlib.sha256()
    for trace_set in in_order(sets):
        h.update(f"task {trace_set.task} {len(trace_set.cases)}\n".encode())
        for case in trace_set.cases:
            h.update(json.dumps(case.to_json(), sort_keys=True).encode())
            h.update(b"\n")
    profiles = sorted({s.profile.to_json() for s in sets})
    h.update("\n".join(profiles).encode())
    return h.hexdigest()[:16]


def spread_cases(sets: Sequence[TraceSet], count: int) -> list[tuple[TraceSet, TraceCase]]:
    """``count`` cases of the benchmark, one per task in turn, first cases first (every task is
    represented before any gets a second case)."""
    out, i = [], 0
    while len(out) < count and any(i < len(s.cases) for s in sets):
        for trace_set in sets:
            if i < len(trace_set.cases) and len(out) < count:
                out.append((trace_set, trace_set.cases[i]))
        i += 1
    return out
