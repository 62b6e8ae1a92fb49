"""Entries of the competition: evaluate a submission in the sandbox, score it, record it; the
baselines, the examples and the oracle; ``--verify`` runs the top entries live on the model."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import inspect
import re
import time
from pathlib import Path
from typing import Sequence

import decoding
import lookup
from decoding.setting import target_setting
from experiments.benchmarks.traces import benchmark_hash, spread_cases, traces_setting
from experiments.competition import child as child_side
from experiments.competition.flags import beyond_share, flags_alone, with_fresh
from experiments.competition.board import NAME_RE, ORACLE, Board, atomic_write, now
from experiments.competition.loader import entry_of, load_entries
from experiments.competition.records import Entry
from experiments.competition.cross_fit import cross_fitted, folds
from experiments.competition.sandbox import Disqualified, Evaluation, Sandbox, Sandboxes, Submission, evaluate
from experiments.competition.scoring import (BOARD_TRACKS, CPU_TRACK, ORACLE_CAP, Sampled, Track, entry_scores,
                                             oracle_rows, oracle_track, replay_scores, track_profile, track_scores,
                                             track_sets)
from experiments.competition.text import clean, clean_block, portable_refusal
from experiments.running.explain import pool_losses
from decoding.progress import progress_bar
from experiments.running.store import code_key, git_sha
from lookup.files import file_drafter_name
from lookup.specs import DrafterSpec
from pldcore.errors import PLDError
from pldcore.params import check_params

EXAMPLES = Path(__file__).resolve().parent / "submissions"


# -- entries ----------------------------------------------------------------------------------------------
def _file_sha(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


#: the folder, inside a board's folder, that keeps every submitted file (named by its content's hash)
STORE = "submissions"


def store_submission(board: Board, path: str | Path) -> Path:
    """Keep a copy of the submission file in the board's store (``<board>/submissions/<sha256>.py``)
    and return it: what is scored is exactly what is kept, and ``--verify`` runs it again from
    there wherever it was submitted from. Writes through no symlink."""
    data = Path(path).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    folder = board.folder / STORE
    if folder.is_symlink():
        raise PLDError(f"{folder} is a symlink; the board's store must be a folder of its own")
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{sha}.py"
    if stored.is_symlink() or not stored.is_file() or _file_sha(stored) != sha:
        atomic_write(stored, data)
    return stored


def stored_file(board: Board, sha: str | None) -> Path | None:
    """The stored file of content hash ``sha`` (as a board entry's source names it), when it is one
    of the store's own files (a plain file named by the hash of what it holds) and holds it still;
    else None."""
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        return None
    path = board.folder / STORE / f"{sha}.py"
    if (board.folder / STORE).is_symlink() or path.is_symlink() or not path.is_file() or _file_sha(path) != sha:
        return None
    return path


def _source_info(submission) -> dict:
    info = dict(submission.source)
    if info["kind"] == "file":  # the board names the file by its content (kept in the board's store)
        sha = _file_sha(info["path"])
        info = {"kind": "file", "sha256": sha, "display": clean(info.get("display") or Path(info["path"]).name, 120),
                "stored": f"{STORE}/{sha}.py"}
    return info


def check_name(name: str, kind: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise PLDError(f"name {name!r}: use 1-48 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if kind == "submission" and (name == ORACLE or name in lookup.builtin_names()):
        raise PLDError(f"name {name!r} is taken by a baseline; choose another --name")
    if kind == "submission" and name in example_names():
        raise PLDError(f"name {name!r} is taken by an example the build submits; choose another --name")
    return name


def example_names() -> set[str]:
    """The names of the example submissions (``build --examples`` enters them, under no owner)."""
    return {file_drafter_name(path) for path in EXAMPLES.glob("*.py")}


def _number(value) -> float | int | None:
    """A finite number, or None (what the parent measured is a number; anything else is dropped)."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
        and abs(value) != float("inf") else None


#: kinds of disqualification whose message can carry text the entry chose (an exception's message,
#: a class name, a kind it reported) once it has seen a case: on a benchmark that is not public only
#: the kind is kept. (A load or params error comes before any case, in a case process that has
#: seen none; a crash's reason quotes the entry's last output only on a public benchmark: ``Sandbox.public``.)
ENTRY_WORDED = ("exception", "invalid", "protocol")
#: what stands in for such a message
WITHHELD = "the details are kept only for the public benchmark, where the entry can be run again to see them"
#: the output a disqualified entry keeps on the public benchmark (its last characters)
TAIL_CHARS = 500


def _reason(reason: str | None, public: bool) -> str | None:
    if not reason:
        return None
    kind = reason.split(":", 1)[0]
    if not public and kind in ENTRY_WORDED:
        return f"{kind}: {WITHHELD}"
    return clean(reason, 500)


def _operation(refused: str) -> str:
    """What a refused operation was, in words of the sandbox's own: its audit event when the sandbox
    names it (a socket event is named by the entry: ``socket``), else ``other``."""
    event = str(refused).split(" ", 1)[0]
    if event.startswith("socket."):
        return "socket"
    known = {*child_side._HANDLED, "replacing", "ctypes.dlopen"}
    return event if event in known else "other"


def make_entry(evaluation, kind: str, benchmark: str, limits=None, public: bool = True) -> dict:
    """The board entry of a finished (or disqualified) evaluation. Every time in it is the parent's
    measure; every text a submission could shape (reason, refused operations, output) is cleaned.

    Nothing the entry printed is kept, but for a short tail of a disqualified entry's output on a
    ``public`` benchmark (so nothing of a benchmark that is not public can be read out of the board
    through it); on such a benchmark, messages the entry worded and the arguments of refused
    operations are left out too (the operations are listed)."""
    ev = evaluation
    steps = sum(len(out.stats.steps) for _, _, out in ev.cases)
    usage = ev.usage or {}
    # a refused path as on any machine (no builder's home folder on the board): text.portable_refusal
    refused = [clean(portable_refusal(r), 200) if public else _operation(r) for r in ev.refused[:20]]
    entry = {
        "name": clean(ev.submission.name, 48), "kind": kind, "benchmark": benchmark,
        "source": _source_info(ev.submission), "params": ev.submission.params,
        "status": "ok" if ev.ok else "disqualified", "reason": _reason(ev.reason, public),
        "refused": refused, "refused_count": int(_number(usage.get("refused_count")) or 0),
        "isolation": clean(ev.isolation, 80), "full_isolation": bool(ev.full_isolation), "cases_run": len(ev.cases),
        "eval_s": round(ev.seconds, 3), "setup_s": round(ev.setup_s, 3),
        "rt_us_per_step": 1e6 * ev.round_trip_s / steps if steps else None,
        # reset (building the drafter and indexing the prompt) counts in the score: its share, shown
        "reset_ms_per_case": round(1e3 * ev.reset_s / len(ev.cases), 3) if ev.cases else None,
        "cpu_s": _number(usage.get("cpu_s")), "max_rss_kb": _number(usage.get("max_rss_kb")),
        "overhead_us": _number(usage.get("overhead_us")),  # the protocol's cost per request, left out of every time
        "log_tail": clean_block(ev.log_tail, TAIL_CHARS) if ev.reason and public else "",
        "time": now(), "git_sha": git_sha(), "stream": bool(ev.stream),
        "limits": limits.to_dict() if limits is not None else None,
        # the code behind a built-in's score: a baseline is scored again when it changes
        "code": code_key(*_spec(ev.submission.source["name"], ev.submission.params).classes())
        if ev.submission.source["kind"] == "builtin" else None,
    }
    if ev.ok:
        spec, params = ev.submission.name, ev.submission.params
        entry.update(replay_scores(ev.cases, spec, params, benchmark))
        # where it loses time against the cost-aware oracle, per group (`leaderboard.py show NAME`)
        losses = pool_losses((case, out, s.profile) for s, case, out in ev.cases)
        entry["oracle_gap"] = {group: dataclasses.asdict(loss) for group, loss in losses.items()}
        # accepted tokens no run of its context (a stream entry's: and earlier cases) holds (flags.py)
        entry["beyond_share"] = beyond_share(ev.cases, stream=ev.stream)
    return entry


def oracle_entry(sets, benchmark: str, sampled: Sampled | None = None) -> dict:
    """The ceiling: the longest correct run after any earlier occurrence of the last token, per step;
    on each build track the benchmark has cases for (``sampled``: its sampled traces, by regime name)."""
    t0 = time.perf_counter()
    rows = [oracle_rows(case, s.profile, benchmark) for s in sets for case in s.cases]
    entry = {"name": ORACLE, "kind": "oracle", "benchmark": benchmark, "status": "ok", "reason": None,
             "source": {"kind": "oracle", "cap": ORACLE_CAP}, "params": {"cap": ORACLE_CAP}, "time": now()}
    gpu = [g for _, g, _ in rows]
    entry.update(entry_scores([c for c, _, _ in rows], gpu))
    best = entry_scores([b for _, _, b in rows], gpu)
    entry["score_cost_aware"] = best["score"]
    for group, scores in best["groups"].items():
        entry["groups"][group]["est_speedup_cost_aware"] = scores["est_speedup"]
    entry["tracks"] = {}
    for track in build_tracks(sampled):
        replayed = track_sets(track, sets, sampled or {})
        entry["tracks"][track.name] = {**oracle_track(replayed, track_profile(track, replayed)),
                                       **_replayed_on(track, None if track.regime.greedy else benchmark_hash(replayed))}
    entry["eval_s"] = round(time.perf_counter() - t0, 3)
    return entry


# -- running ----------------------------------------------------------------------------------------------
#: the track whose score is the board's GPU column
GPU_PROFILE_TRACK = "flat"
#: the GPU tracks a build scores every entry on (each one more replay of the benchmark per entry;
#: the competition's tests narrow it where tracks are not what they check)
BUILD_TRACKS: tuple[Track, ...] = BOARD_TRACKS


def build_tracks(sampled: Sampled | None) -> tuple[Track, ...]:
    """The build tracks a benchmark is scored on: the greedy ones, and each sampled one whose regime
    it has traces of (``sampled``, by regime name)."""
    return tuple(t for t in BUILD_TRACKS if t.regime.greedy or t.regime.name in (sampled or {}))


def info_tracks(info: dict) -> dict[str, str | None]:
    """The build tracks benchmark ``info`` is scored on, each with the hash of the cases it replays
    where they are not the benchmark's own (a sampled track's: ``info["regimes"]``), else None."""
    regimes = info.get("regimes") or {}
    return {t.name: None if t.regime.greedy else regimes[t.regime.name]["hash"] for t in build_tracks(regimes)}


def _replayed_on(track: Track, cases: str | None) -> dict:
    """What a sampled track's scores record of the cases they come from (``cases``, their hash: a build
    scores an entry again when they change); nothing on a greedy track, which replays the benchmark's own."""
    return {} if track.regime.greedy else {"benchmark": cases, "regime": track.regime.name}


def scored_on_tracks(entry: Entry, info: dict) -> bool:
    """Whether ``entry`` was scored on every build track of benchmark ``info``, a sampled track on the
    cases the benchmark has now (an entry scored before a track existed, or on older sampled traces, is
    scored again)."""
    for name, cases in info_tracks(info).items():
        if name not in entry.tracks:
            return False
        record = (entry.record.get("tracks") or {}).get(name)
        if cases is not None and not (isinstance(record, dict) and record.get("benchmark") == cases):
            return False
    return True
#: the kinds of entry whose code ships with pld-lab (ours, and our ports of the peers)
TRUSTED_KINDS = ("baseline", "peer")
#: their per-call limit, as a multiple of a submission's. A call's time counts in the score either
#: way; the limit guards the build against a runaway, and a reference that keeps a history across
#: the whole benchmark (SGLang's trie: extends past 200 ms late in the stream) has slow calls as it grows
TRUSTED_CALL_FACTOR = 20.0
#: kinds of disqualification a busy machine can cause: retried once, quietly, before they stand
TIME_KINDS = ("slow", "timeout", "total-time")


def gpu_track(evaluation: Evaluation, track: Track, entry: dict, benchmark: str, public: bool, replayed,
              cases: str | None) -> dict:
    """An entry's scores on a track, from its run over ``replayed`` (the track's cases, ``cases`` their
    hash where they are not the benchmark's own) planned and priced under the track's profile
    (:func:`~experiments.competition.scoring.track_scores`), or why that run was disqualified."""
    if not evaluation.ok:
        return {"status": "disqualified", "reason": _reason(evaluation.reason, public), **_replayed_on(track, cases)}
    return {**track_scores(evaluation.cases, entry["name"], entry["params"], track_profile(track, replayed), benchmark),
            **_replayed_on(track, cases)}


def _spec(name: str, params: dict) -> DrafterSpec:
    """The spec of built-in drafter ``name`` with ``params`` (checked where the entry was submitted)."""
    return DrafterSpec(name, name, dict(params), lookup.get(name))


def _shared_run(submission, track: Track) -> tuple | None:
    """What one run of ``submission`` can serve every track of (its draft budget and regime), when the
    entry is one of ours (a built-in or a peer, code we ship) that plans nothing (``uses_setting`` false):
    its drafts do not depend on the profile, so a track prices the same run's steps under its own
    (:func:`~experiments.competition.scoring.track_scores`). None for a submission's file: what its class
    does with the setting is not the parent's to assume."""
    if submission.source.get("kind") != "builtin":
        return None
    if _spec(submission.source["name"], submission.params).uses_setting:
        return None
    return track.draft_budget, track.regime


def _fitted_on(submission, sets) -> str | None:
    """The benchmark a built-in entry's fitted numbers come from, built as the sandbox builds it: for
    the benchmark's setting (so a second model's entry reads that model's fit)."""
    return _spec(submission.source["name"], submission.params).build(traces_setting(sets)).fitted_on()


def run_submission(board: Board, submission, sets, info: dict, kind: str, limits, landlock: bool = True,
                   require_isolation: bool = False, stream: bool = False, keep_best: bool = False,
                   tracks: Sequence[Track] | None = None, owner: str | None = None,
                   sampled: Sampled | None = None) -> dict:
    """Evaluate in the sandbox and record the entry (disqualified or not); returns the entry.
    ``stream``: one drafter serves the benchmark's cases in order (a ``history=true`` entry). A
    disqualification for time is retried once before it stands (a stall of a shared machine is no
    verdict). Whether the benchmark is public (``info["public"]``) decides what of the entry's own
    words the board keeps (:func:`make_entry`). An entry of ours whose numbers were fitted on this
    benchmark (:meth:`lookup.Drafter.fitted_on`) is scored cross-fitted too, beside its own score
    (``entry["cross_fitted"]``: :mod:`experiments.competition.cross_fit`).

    ``keep_best`` (``leaderboard.py submit``): a submission whose class refuses its parameters
    before any case (``params``: a typo, a value of the wrong type; with no operation refused, so
    no entry can hide a misdeed behind one) is a slip to fix: a PLDError says it in one line and
    nothing is recorded. Otherwise the entry is recorded by :meth:`Board.record_best`: it never
    replaces a scored entry of its name with a worse or disqualified one, and the entry that
    stands lists the attempt; when that is the earlier one, the entry returned holds it as ``kept``.
    ``owner`` (with ``keep_best``): the submitter's proof of the name (:mod:`.owners`), checked when
    the entry is recorded.
    Without ``keep_best`` (a build: baselines, examples, fresh cases) the entry always replaces
    the board's entry of its name.

    An entry scored on the CPU track (the benchmark's own profile, what the board ranks by) is
    replayed again on each of ``tracks`` (default :data:`BUILD_TRACKS`), planned and priced under that track's
    profile with its draft budget: ``entry["tracks"][name]``; the flat track's score is the board's
    GPU column (``score_gpu``). A sampled track replays the benchmark's traces in its regime
    (``sampled``, by regime name: :func:`~experiments.competition.scoring.sampled_sets`); one the
    benchmark has none for is left out (:func:`build_tracks`)."""
    public = bool(info.get("public"))
    if kind in TRUSTED_KINDS:  # our own code: a longer leash per call (its time is charged all the same)
        limits = dataclasses.replace(limits, call_s=limits.call_s * TRUSTED_CALL_FACTOR)
    made: list[Path] = []  # what this call adds to the board's folder before anything is recorded
    if submission.source["kind"] == "file":  # what is scored is the copy the board keeps
        path = Path(submission.source["path"])
        had = stored_file(board, _file_sha(path))
        made = [d for d in (board.folder, board.folder / STORE) if not d.exists()]
        stored = store_submission(board, path)
        made += [] if had else [stored]
        submission = Submission.file(stored, submission.name, submission.params,
                                     display=submission.source.get("display") or path.name)

    # one sandbox serves every run of the entry (the CPU track, each other track, a retry; a fold's fit
    # makes another entry, with one of its own): a start costs about what a run of a small benchmark does
    boxes = Sandboxes()
    try:
        def run(submission: Submission, track: Track = CPU_TRACK, replayed=sets) -> Evaluation:
            for _ in range(2):
                with progress_bar(sum(len(s.cases) for s in replayed), f"{submission.name} ({track.name})"[:30],
                                  leave=False) as bar:
                    evaluation = evaluate(submission, replayed, limits, deny=[board.folder], landlock=landlock,
                                          progress=bar.update, require_isolation=require_isolation, stream=stream,
                                          public=public, profile=track.profile, draft_budget=track.draft_budget,
                                          batch=track.batch, boxes=boxes)
                if evaluation.ok or evaluation.reason.split(":", 1)[0] not in TIME_KINDS:
                    return evaluation
            return evaluation

        evaluation = run(submission)
        entry = make_entry(evaluation, kind, info["hash"], limits, public=public)
        if evaluation.ok:
            shared: dict[tuple, Evaluation] = {}
            # each track's cases (a sampled track's: the benchmark's traces in its regime, none where it has none)
            replays = {t.name: (t, r) for t in (build_tracks(sampled) if tracks is None else tracks)
                       if (r := track_sets(t, sets, sampled or {})) is not None}
            hashes = info_tracks(info)

            def track_run(track: Track, replayed) -> Evaluation:
                # an entry of ours that plans nothing drafts the same under every profile of one draft budget
                # and regime: one run serves those tracks, each pricing its steps under its own profile
                key = _shared_run(submission, track)
                if key is None:
                    return run(submission, track, replayed)
                if key not in shared:
                    shared[key] = run(submission, track, replayed)
                return shared[key]

            entry["tracks"] = {name: gpu_track(track_run(track, replayed), track, entry, info["hash"], public, replayed,
                                               None if track.regime.greedy else hashes.get(name) or benchmark_hash(replayed))
                               for name, (track, replayed) in replays.items()}
            flat = entry["tracks"][GPU_PROFILE_TRACK] if GPU_PROFILE_TRACK in entry["tracks"] else None
            if flat is not None and flat["status"] == "ok":  # the GPU column: the flat track's own run
                entry["score_gpu"] = flat["score"]
                for group, scores in entry["groups"].items():
                    scores["est_speedup_gpu"] = flat["groups"][group]["est_speedup"] if group in flat["groups"] else None
        if evaluation.ok and kind in TRUSTED_KINDS and submission.source["kind"] == "builtin" \
                and _fitted_on(submission, sets) == info["hash"]:
            # its numbers were fitted on these very cases: scored cross-fitted too (cross_fit.py)
            entry["cross_fitted"] = cross_fitted(submission, cross_folds(sets, info["hash"]), run, info["hash"])
    finally:
        boxes.close()
    if keep_best:
        if _slip(evaluation):
            _remove(made)  # nothing of this submission stays
            fix = "fix --params" if evaluation.reason.startswith("params: ") else "score it on a benchmark that holds it"
            raise PLDError(f"{evaluation.reason.split(': ', 1)[-1]}; nothing recorded: {fix} and submit again")
        standing, recorded = board.record_best(entry, info, owner=owner)
        if not recorded:
            entry["kept"] = standing
        return entry
    board.record(entry, info)
    return entry


def _remove(made: Sequence[Path]) -> None:
    """Remove what was made, newest first: files, then folders (only when empty)."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()


def _slip(evaluation: Evaluation) -> bool:
    """Whether an evaluation failed only because its class refused its parameters, or because it
    asks for what the benchmark cannot give (``unscorable``: the vocabulary's strings): before any
    case, with no operation refused (an entry that tried something cannot pass for a slip)."""
    reason = evaluation.reason or ""
    # parameters its class refuses, or a benchmark that cannot give what it asks for (the vocabulary)
    return reason.startswith(("params: ", "unscorable: ")) and not evaluation.cases and not evaluation.refused \
        and not (evaluation.usage or {}).get("refused_count")


#: the folds of each benchmark cross-fitted in this process (by hash): fitted once per build
_FOLDS: dict[str, list] = {}


def cross_folds(sets, benchmark: str) -> list:
    """The cross-fitting folds of benchmark ``benchmark`` (:func:`cross_fit.folds`), made once."""
    if benchmark not in _FOLDS:
        _FOLDS[benchmark] = folds(sets)
    return _FOLDS[benchmark]


def seed_baselines(board: Board, committed: Board, info: dict) -> int:
    """Give a board of its own (``submit --board DIR``) the baselines and peers to rank against:
    when it holds none of benchmark ``info``, copy that benchmark's baseline and peer entries from
    ``committed`` (the committed board, ``leaderboard/``), as they were scored there (public
    scores; the committed board's fresh cases stay its own). Returns how many were copied (0: the
    same board, one that has its own, or a committed board with none of this benchmark)."""
    if board.path.resolve() == committed.path.resolve():
        return 0
    try:
        theirs = [e for e in committed.entries(info["hash"]) if e.kind in TRUSTED_KINDS and e.name]
    except PLDError:  # a committed board that cannot be read: nothing to rank against, as before
        return 0
    if not theirs:
        return 0
    with board.editing() as data:
        here = load_entries(data["entries"], clean(board.path), info["hash"])
        if any(e.kind in TRUSTED_KINDS for e in here):
            return 0
        names = {e.name for e in here}
        copied = [{**copy.deepcopy(e.record), "benchmark": info["hash"]} for e in theirs if e.name not in names]
        data["entries"] += copied
        data["benchmarks"].setdefault(info["hash"], info)
    return len(copied)


def ensure_oracle(board: Board, sets, info: dict, sampled: Sampled | None = None) -> dict:
    """Score the oracle on benchmark ``info`` (and its tracks: ``sampled`` as :func:`oracle_entry`) and record it."""
    entry = oracle_entry(sets, info["hash"], sampled)
    board.record(entry, info)
    return entry


def scored_codes(board: Board, info: dict, kind: str) -> dict[str, str | None]:
    """Name -> code key of the entries of ``kind`` scored on this benchmark. Entries of our own code
    (baselines, peers) that were disqualified are left out, so the next build tries them again: a
    stall of the machine past a time limit is no verdict on trusted code, and those not yet scored on
    every track of the benchmark (:func:`scored_on_tracks`) are left out too."""
    return {e.name: e.code for e in board.entries(info["hash"])
            if e.kind == kind and e.public.ok and scored_on_tracks(e, info)}


def run_baselines(board: Board, sets, info: dict, limits, rerun: bool = False, names: Sequence[str] | None = None,
                  landlock: bool = True, say=print, require_isolation: bool = False,
                  sampled: Sampled | None = None) -> list[dict]:
    """Every built-in drafter through the same sandbox, recorded as a baseline: those missing from
    the board, disqualified there, or scored by other code than today's (all of them with ``rerun``). A built-in with a
    history across requests is also recorded with it, as :func:`stream_entry` says."""
    have = scored_codes(board, info, "baseline")
    done = []
    # every built-in replays (the traces hold the target's top-k rows that `recycling` reads)
    for name in [lookup.canonical(n) for n in names] if names else lookup.builtin_names():
        entries = []
        if rerun or have.get(name, "") != code_key(*_spec(name, {}).classes()):
            entries.append(run_submission(board, Submission.builtin(name), sets, info, "baseline", limits, landlock,
                                          require_isolation, sampled=sampled))
        entries += stream_entry(board, name, "baseline", have, rerun, sets, info, limits, landlock, require_isolation,
                                sampled)
        for entry in entries:
            say(one_line(entry_of(entry)))
        done += entries
    return done


def run_peers(board: Board, sets, info: dict, limits, rerun: bool = False, landlock: bool = True,
              say=print, require_isolation: bool = False, sampled: Sampled | None = None) -> list[dict]:
    """The peers' lookup functions (``lookup.peers``: our ports, never a plug-in), recorded as
    entries of kind ``peer``, in the sandbox as the baselines are. A peer that can keep a history
    across requests (a ``history`` parameter) is also recorded with it, as :func:`stream_entry`
    says. A peer whose optional dependency is missing is left out with one line."""
    import lookup.peers

    have = scored_codes(board, info, "peer")
    done = []
    for name in lookup.peers.names():
        try:
            drafter = lookup.create(name)
        except PLDError as exc:
            say(f"{name}: left out ({exc})")
            continue
        entries = []
        if rerun or have.get(name, "") != code_key(drafter):
            entries.append(run_submission(board, Submission.builtin(name), sets, info, "peer", limits, landlock,
                                          require_isolation, sampled=sampled))
        entries += stream_entry(board, name, "peer", have, rerun, sets, info, limits, landlock, require_isolation,
                                sampled)
        for entry in entries:
            say(one_line(entry_of(entry)))
        done += entries
    return done


def can_keep_history(name: str) -> bool:
    """Whether the built-in drafter ``name`` takes a ``history`` parameter: the board then also scores it
    as a stream entry, ``<name>:history=true`` (:func:`stream_entry`)."""
    return "history" in inspect.signature(type(lookup.create(name))).parameters


def stream_entry(board: Board, name: str, kind: str, have: dict, rerun: bool, sets, info: dict, limits,
                 landlock: bool = True, require_isolation: bool = False, sampled: Sampled | None = None) -> list[dict]:
    """Drafter ``name`` with its history across requests (a ``history`` parameter), recorded as
    ``<name>:history=true`` on the benchmark served as one stream of requests in its order (earlier
    cases only), in the sandbox: one case process serves the whole stream with one drafter. Nothing
    for a drafter without a history, or whose entry (in ``have``: name -> code key) is today's
    unless ``rerun``."""
    spec = f"{name}:history=true"
    if not can_keep_history(name):
        return []
    if not rerun and have.get(spec, "") == code_key(*_spec(name, {"history": True}).classes()):
        return []
    submission = dataclasses.replace(Submission.builtin(name, {"history": True}), name=spec)
    return [run_submission(board, submission, sets, info, kind, limits, landlock, require_isolation, stream=True,
                           sampled=sampled)]


def run_examples(board: Board, sets, info: dict, limits, rerun: bool = False, landlock: bool = True,
                 say=print, require_isolation: bool = False, sampled: Sampled | None = None) -> list[dict]:
    """The example submissions in experiments/competition/submissions/ (each file under its own name)."""
    have = {e.name: e for e in board.entries(info["hash"]) if e.kind == "submission"}
    done = []
    for path in sorted(EXAMPLES.glob("*.py")):
        submission = Submission.file(path)
        old = have[submission.name] if submission.name in have else None
        # one scored before a track existed (or on older sampled cases): scored again
        if old and not rerun and old.source.sha256 == _file_sha(path) and scored_on_tracks(old, info):
            continue
        entry = run_submission(board, submission, sets, info, "submission", limits, landlock, require_isolation,
                               sampled=sampled)
        say(one_line(entry_of(entry)))
        done.append(entry)
    return done


# -- fresh cases: every entry again, on cases made at build time -------------------------------------------
def run_fresh(board: Board, info: dict, fresh_sets, fresh: dict, limits, landlock: bool = True, say=print,
              require_isolation: bool = False, fresh_sampled: Sampled | None = None) -> list[dict]:
    """Score every entry of the public benchmark ``info`` again on the fresh cases (``fresh``:
    their :func:`experiments.competition.fresh_cases.fresh_info`), as it was scored there (its
    source, its parameters, a stream entry as a stream), through the sandbox; then link the two
    benchmarks on the board, so the views rank by the fresh score. An entry whose source cannot be
    run again (its file gone from the store) is said so and left without a fresh score.
    ``fresh_sampled``: the fresh cases sampled in the sampled tracks' regimes (by regime name), which
    those tracks replay."""
    ensure_oracle(board, fresh_sets, fresh, fresh_sampled)
    done = []
    for entry in board.entries(info["hash"]):
        if entry.is_oracle:
            continue
        try:
            submission = submission_of(entry, board)
        except PLDError as exc:
            say(f"{clean(entry.name, 48)}: no fresh score ({exc})")
            continue
        scored = run_submission(board, submission, fresh_sets, fresh, entry.kind, limits, landlock,
                                require_isolation, stream=entry.stream, sampled=fresh_sampled)
        say("fresh " + one_line(entry_of(scored)))
        done.append(scored)
    link_fresh(board, info["hash"], fresh)
    return done


def link_fresh(board: Board, public: str, fresh: dict) -> None:
    """Record on the board that benchmark ``public``'s latest fresh cases are ``fresh`` (its hash,
    seed, generator version): what the views rank by and ``check-fresh`` makes again."""
    with board.editing() as data:
        links = data.setdefault("fresh", {})
        links[public] = {"hash": fresh["hash"], "cases": fresh["cases"], "tasks": fresh["tasks"],
                         "time": now(), **fresh["fresh"]}
        # published now: kept for good, so that no later build ranks by these cases (fresh_cases.published_seeds)
        seeds = data["seeds"] if isinstance(data.get("seeds"), list) else []
        data["seeds"] = seeds + [fresh["fresh"]["seed"]] * (fresh["fresh"]["seed"] not in seeds)


def fresh_link(board: Board, public: str) -> dict | None:
    """The fresh cases linked to benchmark ``public`` (see :func:`link_fresh`), or None."""
    link = (board.load().get("fresh") or {}).get(public)
    return link if isinstance(link, dict) and isinstance(link.get("hash"), str) else None


def shown_entries(board: Board, benchmark: str) -> tuple[list[Entry], dict]:
    """(entries, info) as every view shows benchmark ``benchmark``: ranked by its linked fresh
    cases' scores where there are some (``flags.with_fresh``), flagged either way."""
    info = dict(board.load()["benchmarks"].get(benchmark) or {"hash": benchmark})
    link = fresh_link(board, benchmark)
    public = board.entries(benchmark)
    if link is None:
        return flags_alone(public), info
    return with_fresh(public, board.entries(link["hash"])), {**info, "fresh_link": link}


def one_line(entry: Entry) -> str:
    """An entry in one line (cleaned: safe to print to a terminal): its public scores, or why it was
    disqualified."""
    name, scores = clean(entry.name, 48), entry.public
    if not scores.ok:
        return f"{name}: disqualified -- {clean(scores.reason, 500)}"

    def f(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    refused = f"; {entry.refused_count} operations refused" if entry.refused_count else ""
    return (f"{name}: est. speedup {f(scores.score, '.3f')}x CPU, {f(scores.score_gpu, '.3f')}x GPU, "
            f"tau {f(scores.tau, '.2f')}, {f(scores.drafter_us_per_step, '.0f')} µs/step ({f(entry.eval_s, '.1f')} s)"
            f"{refused}")


# -- --verify: the top entries live on the model ------------------------------------------------------------
def verify_entries(entries: Sequence[Entry], target, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                   limits, deny: Sequence[str | Path] = (), landlock: bool = True,
                   require_isolation: bool = False, board: Board | None = None,
                   public: bool = True) -> dict[str, dict]:
    """Run each entry through the sandbox on a live ``target``; measured speedup over ``none`` on the
    same prompts and whether every output is token-identical to ``none``'s (plain greedy).

    One entry at a time (its sandbox is closed before the next one opens, so nothing an entry
    runs between its calls can slow another's), and per prompt ``none`` right before the entry, so
    a burst of machine noise hits both alike. An entry's file comes from ``board``'s store, where
    it was kept when it was scored, wherever it was submitted from. On prompts of a benchmark that
    is not ``public``, a failure keeps no word of the entry's own (:func:`make_entry`'s rule).
    """

    # the replay's total-time limit would count the model's forwards too: only per-call limits here
    limits = dataclasses.replace(limits, total_s=max(limits.total_s, 24 * 3600.0))
    results: dict[str, dict] = {}
    decoding.generate(target, prompts[0], lookup.create("none"), 4)  # first forwards allocate
    # this model on this machine: its cached or reference profile (never measured here: timings follow)
    setting = target_setting(target, measure=False)
    for entry in entries:
        name = entry.name
        try:
            submission = submission_of(entry, board)
        except PLDError as exc:
            results[name] = {"skipped": str(exc)}
            continue
        result = {"prompts": len(prompts), "max_new_tokens": max_new_tokens, "model": getattr(target, "name", "?"),
                  "device": str(getattr(target, "device", "?")), "time": now(), "identical": True, "tau": []}
        reference, walls = [], []
        try:
            with Sandbox(submission, target.vocab_size, limits, deny, landlock,
                         require_isolation=require_isolation, public=public, vocab=target.vocab(),
                         setting=setting) as box:
                box.generate(target, prompts[0], 4)  # warm-up: first calls and forwards allocate
                for prompt in prompts:
                    t0 = time.perf_counter()
                    ref = decoding.generate(target, prompt, lookup.create("none"), max_new_tokens)
                    reference.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    out = box.generate(target, prompt, max_new_tokens)
                    walls.append(time.perf_counter() - t0)
                    result["identical"] &= out.tokens == ref.tokens
                    result["tau"].append(out.stats.tau)
        except Disqualified as exc:
            results[name] = {"failed": _reason(exc.reason, public)}
            continue
        result.update(speedup=sum(reference) / sum(walls), tau=sum(result["tau"]) / len(result["tau"]),
                      none_s=sum(reference), entry_s=sum(walls), identical=bool(result["identical"]))
        results[name] = result
    return results


def submission_of(entry: dict, board: Board | None = None) -> Submission:
    """The Submission an entry was scored from, checked against what it may be before anything is
    loaded: a drafter whose code ships with pld-lab (by its registered name, never a path), an
    installed plug-in's entry point (resolved from its package's metadata, run only in the sandbox),
    or a file in ``board``'s store holding exactly what was scored. A PLDError says why not."""
    # the file's own value, bounded again (a hand-edited board): the typed entry shows none that is not
    source, raw = entry.source, entry.record.get("params") if entry.record else dict(entry.params)
    params = check_params({} if raw is None else raw, f"the parameters of {clean(entry.name, 48)!r}")
    if source.kind == "builtin":  # under the entry's name: a stream entry is `<name>:history=true`
        submission = Submission.builtin(source.name, params)
        return dataclasses.replace(submission, name=clean(entry.name, 48) or submission.name)
    if source.kind == "entry_point" and source.name is not None:
        return Submission.entry_point(source.name, entry.name or None, params)
    if source.kind == "file":
        path = stored_file(board, source.sha256) if board is not None else None
        if path is None:
            raise PLDError("the submission file is not in the board's store (or was changed there)")
        return Submission.file(path, entry.name or None, params, display=source.display)
    raise PLDError(f"an entry of source kind {clean(source.kind, 40)!r} cannot be run again")


def verify_prompts(sets, count: int) -> list[list[int]]:
    """``count`` prompts from the benchmark, one per task in turn (first cases first)."""
    return [list(case.prompt) for _, case in spread_cases(sets, count)]
