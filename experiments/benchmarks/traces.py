"""Trace storage: recorded greedy runs (prompt ids, output ids, forward times) and their cost profile.

A trace file holds, per case, the prompt ids, the greedy output ids and the per-step forward
times of plain decoding (gzip JSONL, one gzip member per case so an interrupted recording
resumes). Files live under ``$PLD_LAB_CACHE/traces/<model>/<task>-n<max_new_tokens>.jsonl.gz``,
beside the cost profile of the model that made them. Recording lives in
``experiments.running.record``, replaying in ``experiments.running.replay``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from decoding.loading import EMBEDDED_NAME, cache_dir
from lookup.cost import CPU_SMOLLM2, CostProfile
from lookup.errors import PLDError


@dataclass
class TraceCase:
    """One greedy run: what the model answered to one turn of one prompt."""

    case: str
    category: str
    turn: int
    prompt: list[int]
    output: list[int]
    step_s: list[float]  # forward seconds per step of plain decoding
    model: str
    vocab_size: int
    eos: list[int]
    max_new_tokens: int
    meta: dict = field(default_factory=dict)


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
                cases.append(TraceCase(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
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
        f.write(json.dumps(asdict(case)) + "\n")


def load_trace_sets(folder: Path | None = None) -> list[TraceSet]:
    """Every trace file under ``folder`` (default: the embedded model's traces), with its profile."""
    folder = Path(folder) if folder else default_folder()
    if not folder.exists():
        raise PLDError(f"no traces in {folder}; record them with `python experiments/traces.py record`")
    files = sorted(folder.glob("*.jsonl.gz"))
    if not files:
        raise PLDError(f"no trace files (*.jsonl.gz) in {folder}")
    profile_file = folder / "profile.json"
    # a hand-made trace folder without a profile: the reference CPU profile
    profile = CostProfile.load(profile_file) if profile_file.exists() else CPU_SMOLLM2
    return [TraceSet(path, task_of(path), read_cases(path), profile) for path in files]


def default_folder() -> Path:
    return traces_root() / model_key(EMBEDDED_NAME)


def benchmark_hash(sets) -> str:
    """A hash of what is scored: every case of every trace file (by task name) and the cost profile.

    Hashes the decoded cases rather than the gzip bytes, so that recompressing a file (gzip headers
    hold a time stamp) keeps the hash, and a cut tail that the reader drops does not count.
    """
    h = hashlib.sha256()
    for trace_set in sorted(sets, key=lambda s: s.task):
        h.update(f"task {trace_set.task} {len(trace_set.cases)}\n".encode())
        for case in trace_set.cases:
            h.update(json.dumps(asdict(case), sort_keys=True).encode())
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
