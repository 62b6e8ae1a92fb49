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

Traces hold token ids only. For drafters that ask for the vocabulary's strings
(:meth:`lookup.base.Drafter.wants_vocab`), a folder may hold them in ``vocab.json.gz`` (each id's
text alone, :mod:`decoding.vocab`; :func:`write_vocab`), read when a drafter first asks
(:attr:`TraceSet.vocab`); it is not part of the benchmark's hash. ``traces.py record`` writes it
beside the traces it records; the shipped one is
``write_vocab(shipped_folder(), decoding.load_model().vocab(), "SmolLM2-135M-Instruct")``.
Recording lives in ``experiments.running.record``, replaying in ``experiments.running.replay``.

A trace folder is data, not code we trust: every read is bounded (:data:`MAX_TRACE_BYTES`, and the
JSON files' size and nesting, ``untrusted.py``) and a bad file is refused with one line naming it.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import gzip
import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import BinaryIO, Collection, Sequence

import numpy as np

from decoding.loading import EMBEDDED_NAME, cache_dir, packaged_name
from decoding.target import TopRows
from experiments.benchmarks.untrusted import (MAX_DEPTH, clean, open_regular, parse_json, read_bytes, read_json,
                                              too_deep)
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime, Setting

#: the shipped benchmark: ``<package>/data/<model>/`` with its ``BENCHMARK.json``
SHIPPED_ROOT = Path(__file__).resolve().parent / "data"
BENCHMARK_FILE = "BENCHMARK.json"
#: the most a trace file may hold, on disk and decompressed. The shipped files hold at most 4.6 MB
#: (2-3 MB gzip) for 80 cases at 128 tokens; 256 MiB is room for thousands of long cases, and a
#: gzip bomb (a 0.5 MB file of 500 MB of zeros) stops there instead of filling the memory
MAX_TRACE_BYTES = 256 << 20
#: BENCHMARK.json and profile.json: a few hundred bytes each; a MiB is plenty
MAX_INFO_BYTES = 1 << 20
#: the vocabulary's strings beside the traces (gzip JSON), and the most it may hold compressed and not:
#: SmolLM2's 49,152 strings are 0.2 MB compressed, 0.5 MB not; a 262,144-token vocabulary a few MB
VOCAB_FILE = "vocab.json.gz"
#: the acceptance models' fit made on a folder's own traces (``leaderboard.py build --model``): every
#: drafter replayed on them reads it (:func:`traces_setting`); without one, the shipped fit of the model
FITS_FILE = "fits.json"
MAX_VOCAB_BYTES = 16 << 20
MAX_VOCAB_TEXT = 64 << 20
#: compressed bytes read, and decompressed bytes produced, at a time
_CHUNK = 1 << 20
#: field -> the type a stored case holds there (``top`` is checked as it is decoded)
_FIELD_TYPES = {"case": str, "category": str, "turn": int, "model": str, "vocab_size": int,
                "max_new_tokens": int, "meta": dict}
_INT_LISTS = ("prompt", "output", "eos")


@dataclass
class TraceCase:
    """One run of plain decoding: what the model answered to one turn of one prompt.

    ``top`` holds the target's top-k rows after every token but the last of ``prompt + output``
    (``len(prompt) + len(output) - 1`` rows; row ``i`` follows token ``i``; the model's own
    distribution, as the live loop hands a drafter that reads it), or None for traces recorded
    without them. ``sampling`` is None for a greedy run, else the regime and the seed it was sampled
    with (``{"temperature", "top_k", "top_p", "seed"}``): our sampler gives every output position
    its own uniform, so the output is what any deterministic drafter commits with that seed
    (:mod:`decoding.sampling`), and replaying it is exact (:class:`decoding.trace_target.TraceTarget`).
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
    sampling: dict | None = None

    @property
    def regime(self) -> Regime:
        """The regime the output was decoded in: greedy, or the sampling one it records."""
        if self.sampling is None:
            return GREEDY
        return Regime(float(self.sampling["temperature"]), int(self.sampling["top_k"]), float(self.sampling["top_p"]))

    @property
    def seed(self) -> int | None:
        """The seed a sampled output was drawn with (None: greedy)."""
        return None if self.sampling is None else int(self.sampling["seed"])

    def to_json(self) -> dict:
        """The case as stored (JSON-ready): ids as ints, top-k rows as base64 arrays; ``sampling``
        only where it was sampled (a greedy case is stored as it always was, and hashes the same)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("top", "sampling")}
        if self.sampling is not None:
            out["sampling"] = dict(self.sampling)
        if self.top is not None:
            ids_dtype = "<u2" if self.vocab_size <= 1 << 16 else "<u4"
            out["top"] = {"k": int(self.top.ids.shape[1]), "ids_dtype": ids_dtype,
                          "ids": _b64(self.top.ids.astype(ids_dtype)), "probs": _b64(self.top.probs.astype("<f2"))}
        return out

    @classmethod
    def from_json(cls, data: dict) -> "TraceCase":
        names = {f.name for f in fields(cls)}
        _check_fields(data)
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


def _check_fields(data) -> None:
    """Raise ValueError unless ``data`` is a case as stored: what every reader of a case relies on
    (ids are ints, names are strings, ``meta`` is a shallow object)."""
    if not isinstance(data, dict):
        raise ValueError("a case is a JSON object")
    def ok(key, test) -> bool:
        return key not in data or test(data[key])

    wrong = [k for k, t in _FIELD_TYPES.items() if not ok(k, lambda v: isinstance(v, t) and type(v) is not bool)]
    wrong += [k for k in _INT_LISTS if not ok(k, lambda v: isinstance(v, list) and all(type(x) is int for x in v))]
    if not ok("step_s", lambda v: isinstance(v, list) and all(type(x) in (int, float) for x in v)):
        wrong.append("step_s")
    if not ok("sampling", _sampling_ok):
        wrong.append("sampling")
    if wrong or too_deep(data.get("meta"), MAX_DEPTH):
        raise ValueError(f"case fields of the wrong type: {', '.join(wrong) or 'meta (nested too deep)'}")


def _sampling_ok(value) -> bool:
    """A stored case's ``sampling``: a regime (:class:`Regime` accepts it) and an integer seed."""
    if not isinstance(value, dict) or set(value) != {"temperature", "top_k", "top_p", "seed"}:
        return False
    seed, numbers = value["seed"], (value["temperature"], value["top_p"])
    if type(seed) is not int or not 0 <= seed < 2**64 or type(value["top_k"]) is not int:
        return False
    if not all(type(x) in (int, float) for x in numbers) or not value["temperature"] > 0:
        return False
    try:
        Regime(float(value["temperature"]), value["top_k"], float(value["top_p"]))
    except PLDError:
        return False
    return True


def case_seed(seed: int, case_id: str) -> int:
    """The seed a sampled recording draws case ``case_id`` with, from the recording's ``seed``: its own
    per case (a case does not share its uniforms with the case before it), and the same whatever
    order or subset of cases is recorded."""
    digest = hashlib.sha256(f"pld-lab sampled trace {int(seed)} {case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # 63 bits: any torch generator takes it


def sampling_of(regime: Regime, seed: int) -> dict | None:
    """A case's ``sampling`` field for ``regime`` and its seed (None for greedy)."""
    if regime.greedy:
        return None
    return {"temperature": regime.temperature, "top_k": regime.top_k, "top_p": regime.top_p, "seed": int(seed)}


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

    @property
    def regime(self) -> Regime:
        """The regime its cases were decoded in (a trace file holds one: :func:`load_trace_sets`)."""
        return self.cases[0].regime if self.cases else GREEDY

    @property
    def vocab(self) -> tuple[str, ...] | None:
        """The vocabulary's strings of the folder this set was read from (:func:`read_vocab`, read
        once per folder and only when asked), or None when the folder holds none."""
        return read_vocab(Path(self.path).parent)


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
        raise PLDError(f"{clean(path.name)} is not a trace file name (<task>-n<max_new_tokens>.jsonl.gz)")
    return match["task"]


def _members(f: BinaryIO, where: Path, limit: int | None = None) -> tuple[list[bytes], int]:
    """The decompressed complete gzip members at the start of the file ``f``, and the bytes they
    span; a member cut short by a crash ends the list. Read and decompressed a chunk at a time:
    past ``limit`` decompressed bytes (default :data:`MAX_TRACE_BYTES`) the file is refused."""
    limit = MAX_TRACE_BYTES if limit is None else limit
    texts: list[bytes] = []
    used = read = total = 0  # compressed bytes spanned by complete members, read; decompressed bytes
    member, parts, pending, more = None, [], b"", False
    while True:  # one gzip member per case: decompress them one by one
        if not pending and not more:  # (more: zlib may hold output even when its input is all used)
            pending = f.read(_CHUNK)
            read += len(pending)
            if not pending:
                break  # the end of the file; a member still open is a truncated tail
            if read > limit:  # the file grew past its size check
                raise PLDError(f"{clean(where)} is not a readable trace file (over {limit >> 20} MiB)")
        if member is None:
            member, parts = zlib.decompressobj(wbits=31), []
        room = min(_CHUNK, limit - total + 1)
        try:
            out = member.decompress(pending, room)
        except zlib.error:
            break
        more = len(out) == room
        total += len(out)
        if total > limit:
            raise PLDError(f"{clean(where)} is not a readable trace file (over {limit >> 20} MiB decompressed)")
        parts.append(out)
        pending = member.unused_data if member.eof else member.unconsumed_tail
        if member.eof:
            if any(parts):  # an empty member holds no case
                texts.append(b"".join(parts))
            used, member = read - len(pending), None
    return texts, used


def read_cases(path: Path) -> list[TraceCase]:
    """All complete cases of a trace file; a member cut short by a crash, or a line that is not a
    case, is dropped. A file past :data:`MAX_TRACE_BYTES` is refused with one line."""
    if not path.exists():
        return []
    with open_regular(path, MAX_TRACE_BYTES, "trace file") as f:  # also refuses a FIFO or a device
        texts = _members(f, path)[0]
    cases = []
    for text in texts:
        for line in text.decode(errors="replace").splitlines():
            try:
                cases.append(TraceCase.from_json(json.loads(line)))
            except RecursionError:  # json gives up past Python's stack
                raise PLDError(f"{clean(path)} is not a readable trace file (a line nested deeper "
                               f"than {MAX_DEPTH})") from None
            except (json.JSONDecodeError, TypeError, ValueError, KeyError):
                continue
    return cases


def append_case(path: Path, case: TraceCase) -> None:
    """Add ``case`` as a new gzip member. A member cut by a crash is cut off first: left in place,
    it would hide every case appended after it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        size = path.stat().st_size
        with path.open("rb") as f:
            complete = _members(f, path)[1]
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
    profile = _read_profile(profile_file) if profile_file.exists() else CPU_SMOLLM2
    sets = [TraceSet(path, task_of(path), read_cases(path), profile) for path in files]
    require_cases(sets, folder)
    check_unique_prompts(sets)
    traces_regime(sets)  # one regime to a folder
    recorded = read_benchmark(folder)
    if recorded is not None and recorded.get("hash") != benchmark_hash(sets):
        raise PLDError(f"the traces in {clean(folder)} do not match their {BENCHMARK_FILE} (hash "
                       f"{benchmark_hash(sets)}, recorded {clean(recorded.get('hash'), 64)}): restore them "
                       f"(git checkout) or remove {BENCHMARK_FILE}")
    return sets


def require_cases(sets: Sequence[TraceSet], where: str | Path) -> Sequence[TraceSet]:
    """``sets`` when they hold a case; else a PLDError of one line naming ``where`` (a folder whose
    every line was cut short or was not a case, or a selection that left none): every command
    that reads traces says so, rather than report "0 replays" or divide by zero."""
    if not any(s.cases for s in sets):
        raise PLDError(f"the trace files in {clean(where)} leave no case to replay (none complete, or none "
                       "selected): nothing to score")
    return sets


def _read_profile(path: Path) -> CostProfile:
    """A trace folder's ``profile.json``, bounded like every file of the folder."""
    text = read_bytes(path, MAX_INFO_BYTES, "cost profile")
    parse_json(text, path, "cost profile")  # size and nesting checked before the profile parses it
    try:
        return CostProfile.from_json(text.decode())
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PLDError(f"{clean(path)} is not a readable cost profile ({clean(exc)})") from None


def check_unique_prompts(sets: Sequence[TraceSet]) -> None:
    """Refuse a benchmark that holds one prompt twice (say, recorded at two lengths): a drafter
    that remembers earlier cases would then replay its own memory of the answer."""
    seen: dict[bytes, str] = {}
    for trace_set in sets:
        for case in trace_set.cases:
            key = hashlib.sha256(np.asarray(case.prompt, dtype="<i8").tobytes()).digest()
            if key in seen:
                raise PLDError(f"cases {seen[key]} and {clean(case.case, 100)} ({clean(trace_set.path.name, 100)}) "
                               "have the same prompt; a benchmark holds each prompt once")
            seen[key] = f"{clean(case.case, 100)} ({clean(trace_set.path.name, 100)})"  # names read from the files


def shipped_folder(model: str = EMBEDDED_NAME) -> Path:
    """Where the benchmark of ``model`` ships (it may not exist: only the embedded model's does)."""
    return SHIPPED_ROOT / model_key(model)


def default_folder() -> Path:
    """The traces replay, compare --replay, the bench and the competition use unless told otherwise."""
    return shipped_folder()


def traces_model(sets: Sequence[TraceSet]) -> str | None:
    """The packaged model (``decoding.loading.PACKAGED``) whose traces ``sets`` are, by the name the
    cases record, or None (traces of another model: the caller names it)."""
    names = {case.model for s in sets for case in s.cases[:1]}
    return packaged_name(names.pop()) if len(names) == 1 else None


def traces_regime(sets: Sequence[TraceSet]) -> Regime:
    """The one regime every case of ``sets`` was decoded in (greedy, or one sampling regime, each case
    with its own seed); a PLDError when they mix: a replay's figures must name one regime."""
    regimes = {case.regime for s in sets for case in s.cases}
    if len(regimes) > 1:
        names = ", ".join(sorted(r.describe() for r in regimes))
        raise PLDError(f"these traces mix regimes ({names}): keep each regime in a folder of its own")
    return regimes.pop() if regimes else GREEDY


def regime_folder(folder: Path, regime: Regime) -> Path:
    """Where the traces of ``regime`` live beside a model's greedy traces in ``folder``: the folder
    itself for greedy, its subfolder named for the regime otherwise (``<folder>/t1``, ``<folder>/t0.7-p0.9``)."""
    return Path(folder) if regime.greedy else Path(folder) / regime.name


def traces_setting(sets: Sequence[TraceSet], profile: CostProfile | None = None, batch: int = 1) -> Setting:
    """The setting the traces were decoded in: the model the cases record, their regime (greedy or the
    sampling one they record), at ``batch``, priced under ``profile`` or, without one, the traces' own
    (the profile of the machine that recorded them, the benchmark's reference profile for a shipped
    one). The one place where "no profile" means "the traces' own": every command and board track that
    replays traces resolves here."""
    if not sets:
        raise PLDError("no traces to replay")
    names = {case.model for s in sets for case in s.cases[:1]}
    model = names.pop() if len(names) == 1 else sets[0].cases[0].model if sets[0].cases else "?"
    own = sets[0].profile
    fits = Path(sets[0].path).parent / FITS_FILE if sets[0].path is not None else None  # sets made in memory: none
    return Setting.of(model, profile or own, traces_regime(sets), batch,
                      fits=fits if fits is not None and fits.is_file() else None,
                      profile_source="given" if profile is not None else "the traces' own")


def shipped_benchmarks() -> dict[str, Path]:
    """Every shipped benchmark, by name (its model's folder name: ``SmolLM2-135M-Instruct``,
    ``gemma-3-270m-q4_k_m``), the default (the embedded model's) first."""
    found = sorted(p.parent for p in SHIPPED_ROOT.glob(f"*/{BENCHMARK_FILE}"))
    default = default_folder()
    return {p.name: p for p in sorted(found, key=lambda p: (p != default, p.name.lower()))}


def benchmark_folder(name: str) -> Path:
    """The folder of the shipped benchmark ``name``: its name (case aside), a unique prefix of it
    (``smollm2``, ``gemma``) or of its hash; a PLDError naming the shipped ones otherwise."""
    shipped = shipped_benchmarks()
    low = name.strip().lower()
    hashes = {n: str((read_benchmark(f) or {}).get("hash", "")) for n, f in shipped.items()}
    for match in ([n for n in shipped if n.lower() == low], [n for n in shipped if low and n.lower().startswith(low)],
                  [n for n, h in hashes.items() if len(low) >= 4 and h.startswith(low)]):
        if len(match) == 1:
            return shipped[match[0]]
        if len(match) > 1:
            raise PLDError(f"--benchmark {clean(name, 64)} names {len(match)} benchmarks ({', '.join(match)}): "
                           "give more of the name")
    listed = ", ".join(f"{n} ({hashes[n]})" for n in shipped) or "none"
    raise PLDError(f"no shipped benchmark {clean(name, 64)}; the shipped ones: {listed} (or give a trace folder: --traces DIR)")


def recording_folder(model: str) -> Path:
    """Where ``traces.py record`` puts a model's traces unless told otherwise (never the shipped folder)."""
    return traces_root() / model_key(model)


def read_benchmark(folder: Path) -> dict | None:
    """The ``BENCHMARK.json`` of a trace folder (hash, cases, tokens, ...), or None."""
    path = Path(folder) / BENCHMARK_FILE
    if not path.exists():
        return None
    info = read_json(path, MAX_INFO_BYTES, BENCHMARK_FILE)
    if not isinstance(info, dict):
        raise PLDError(f"{clean(path)} is not a readable {BENCHMARK_FILE} (not a JSON object)")
    return info


def write_benchmark(folder: Path, sets: Sequence[TraceSet], **extra) -> dict:
    """Record the hash of a trace folder beside it (what makes it a versioned benchmark)."""
    info = {"hash": benchmark_hash(sets), "cases": sum(len(s.cases) for s in sets),
            "tokens": sum(s.tokens for s in sets), "tasks": {s.task: len(s.cases) for s in sets},
            "profile": sets[0].profile.model if sets else None, **extra}
    (Path(folder) / BENCHMARK_FILE).write_text(json.dumps(info, indent=1) + "\n")
    return info


def write_vocab(folder: Path, strings: Sequence[str], model: str) -> Path:
    """Write the vocabulary's strings (``strings[i]``: id ``i``'s text, :mod:`decoding.vocab`) of
    ``model``'s tokenizer beside the traces in ``folder``, as :data:`VOCAB_FILE`."""
    path = Path(folder) / VOCAB_FILE
    data = {"model": model, "strings_are": "tokenizer.decode([id]) per id", "strings": list(strings)}
    # mtime=0: the same strings give the same bytes (a gzip header holds a time stamp otherwise)
    path.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False).encode(), mtime=0))
    read_vocab.cache_clear()
    return path


@functools.lru_cache(maxsize=8)
def read_vocab(folder: Path) -> tuple[str, ...] | None:
    """The vocabulary's strings in ``folder``'s :data:`VOCAB_FILE`, or None when it has none. The
    file is data like the traces: bounded, and refused with one line when it is not a JSON object
    whose ``strings`` is a list of strings. Read once per folder."""
    path = Path(folder) / VOCAB_FILE
    if not path.exists():
        return None
    packed = read_bytes(path, MAX_VOCAB_BYTES, "vocabulary file")
    unpack = zlib.decompressobj(wbits=31)
    try:
        text = unpack.decompress(packed, MAX_VOCAB_TEXT + 1)
    except zlib.error as exc:
        raise PLDError(f"{clean(path)} is not a readable vocabulary file ({clean(exc)})") from None
    if len(text) > MAX_VOCAB_TEXT or unpack.unconsumed_tail:
        raise PLDError(f"{clean(path)} is not a readable vocabulary file (over {MAX_VOCAB_TEXT >> 20} MiB decompressed)")
    data = parse_json(text, path, "vocabulary file")
    strings = data.get("strings") if isinstance(data, dict) else None
    if not isinstance(strings, list) or not all(isinstance(x, str) for x in strings):
        raise PLDError(f"{clean(path)} is not a readable vocabulary file (no list of strings under 'strings')")
    return tuple(strings)


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


def prompt_of(case_id: str) -> str:
    """The prompt a case is a turn of: ``"mt-bench/81#2"`` -> ``"mt-bench/81"`` (a one-turn case is its own)."""
    return case_id.split("#", 1)[0]


def halves(sets: Sequence[TraceSet]) -> tuple[frozenset[str], frozenset[str]]:
    """The benchmark's cases (by id) in two halves: its prompts in the benchmark's order
    (:func:`in_order`), taken alternately, so every task is split evenly and a prompt's turns stay
    together (a second turn holds its first: the two halves share no text of one conversation)."""
    prompts = list(dict.fromkeys(prompt_of(c.case) for s in in_order(sets) for c in s.cases))
    first = {p for i, p in enumerate(prompts) if i % 2 == 0}
    ids = [c.case for s in sets for c in s.cases]
    return (frozenset(i for i in ids if prompt_of(i) in first), frozenset(i for i in ids if prompt_of(i) not in first))


def subset(sets: Sequence[TraceSet], cases: Collection[str]) -> list[TraceSet]:
    """The trace sets holding only the cases whose ids are in ``cases`` (sets left empty dropped)."""
    out = [dataclasses.replace(s, cases=[c for c in s.cases if c.case in cases]) for s in sets]
    return [s for s in out if s.cases]


def first_prompts(sets: Sequence[TraceSet], count: int) -> list[TraceSet]:
    """The trace sets holding only the cases of the first ``count`` prompts of each task (a prompt's
    turns kept together): the quick subset that ``compare.py --replay --quick`` and ``traces.py
    replay --quick`` replay (one prompt per task)."""
    keep: set[str] = set()
    for trace_set in sets:
        keep |= set(list(dict.fromkeys(prompt_of(c.case) for c in trace_set.cases))[:count])
    return subset(sets, {c.case for s in sets for c in s.cases if prompt_of(c.case) in keep})
