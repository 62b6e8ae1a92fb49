"""Entries of the competition: evaluate a submission in the sandbox, score it, record it; the
baselines, the examples and the oracle; ``--verify`` runs the top entries live on the model."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import sys
import time
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

import decoding
import lookup
from experiments.benchmarks.paths import local_path, portable_path
from experiments.benchmarks.traces import in_order, spread_cases
from experiments.competition.board import NAME_RE, ORACLE, Board, now
from experiments.competition.sandbox import Disqualified, Evaluation, Sandbox, Submission, evaluate
from experiments.competition.scoring import ORACLE_CAP, board_rows, entry_scores, oracle_rows
from experiments.competition.text import clean, clean_block
from experiments.running.explain import pool_losses
from experiments.running.methods import Run
from experiments.running.replay import replay_case
from experiments.running.store import code_key, git_sha
from lookup.errors import PLDError

EXAMPLES = Path(__file__).resolve().parent / "submissions"


# -- entries ----------------------------------------------------------------------------------------------
def _file_sha(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source_info(submission) -> dict:
    info = dict(submission.source)
    if info["kind"] == "file":  # the board names the file without this machine's folders
        path = Path(info["path"])
        info["sha256"] = _file_sha(path)
        info["path"] = info["display"] = portable_path(path)
    return info


def check_name(name: str, kind: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise PLDError(f"name {name!r}: use 1-48 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if kind == "submission" and (name == ORACLE or name in lookup.builtin_names()):
        raise PLDError(f"name {name!r} is taken by a baseline; choose another --name")
    return name


def _number(value) -> float | int | None:
    """A finite number, or None (what the parent measured is a number; anything else is dropped)."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
        and abs(value) != float("inf") else None


def make_entry(evaluation, kind: str, benchmark: str, limits=None) -> dict:
    """The board entry of a finished (or disqualified) evaluation. Every time in it is the parent's
    measure; every text a submission could shape (reason, refused operations, output) is cleaned."""
    ev = evaluation
    steps = sum(len(out.stats.steps) for _, _, out in ev.cases)
    usage = ev.usage or {}
    entry = {
        "name": clean(ev.submission.name, 48), "kind": kind, "benchmark": benchmark,
        "source": _source_info(ev.submission), "params": ev.submission.params,
        "status": "ok" if ev.ok else "disqualified", "reason": clean(ev.reason, 500) if ev.reason else None,
        "refused": [clean(r, 200) for r in ev.refused[:20]], "refused_count": int(_number(usage.get("refused_count")) or 0),
        "isolation": clean(ev.isolation, 80), "full_isolation": bool(ev.full_isolation), "cases_run": len(ev.cases),
        "eval_s": round(ev.seconds, 3), "setup_s": round(ev.setup_s, 3),
        "rt_us_per_step": 1e6 * ev.round_trip_s / steps if steps else None,
        # reset (building the drafter and indexing the prompt) counts in the score: its share, shown
        "reset_ms_per_case": round(1e3 * ev.reset_s / len(ev.cases), 3) if ev.cases else None,
        "cpu_s": _number(usage.get("cpu_s")), "max_rss_kb": _number(usage.get("max_rss_kb")),
        "overhead_us": _number(usage.get("overhead_us")),  # the protocol's cost per request, left out of every time
        # what the submission printed: in full (up to 6 kB) when it broke a rule or was refused something
        "log_tail": clean_block(ev.log_tail, 6000 if ev.reason or ev.refused else 500), "time": now(), "git_sha": git_sha(),
        "limits": limits.to_dict() if limits is not None else None,
        # the code behind a built-in's score: a baseline is scored again when it changes
        "code": code_key(lookup.create(ev.submission.source["name"], **ev.submission.params))
        if ev.submission.source["kind"] == "builtin" else None,
    }
    if ev.ok:
        spec, params = ev.submission.name, ev.submission.params
        rows = [board_rows(case, spec, params, Run.of(out), s.profile, benchmark) for s, case, out in ev.cases]
        entry.update(entry_scores([cpu for cpu, _ in rows], [gpu for _, gpu in rows]))
        # where it loses time against the cost-aware oracle, per group (`leaderboard.py show NAME`)
        losses = pool_losses((case, out, s.profile) for s, case, out in ev.cases)
        entry["oracle_gap"] = {group: dataclasses.asdict(loss) for group, loss in losses.items()}
    return entry


def oracle_entry(sets, benchmark: str) -> dict:
    """The ceiling: the longest correct run after any earlier occurrence of the last token, per step."""
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
    entry["eval_s"] = round(time.perf_counter() - t0, 3)
    return entry


# -- running ----------------------------------------------------------------------------------------------
def _progress(total: int, desc: str):
    return tqdm(total=total, desc=desc[:30], unit="case", leave=False, dynamic_ncols=True, disable=not sys.stderr.isatty())


def run_submission(board: Board, submission, sets, info: dict, kind: str, limits, landlock: bool = True,
                   require_isolation: bool = False) -> dict:
    """Evaluate in the sandbox and record the entry (disqualified or not); returns the entry."""
    total = sum(len(s.cases) for s in sets)
    with _progress(total, submission.name) as bar:
        evaluation = evaluate(submission, sets, limits, deny=[board.folder], landlock=landlock, progress=bar.update,
                              require_isolation=require_isolation)
    entry = make_entry(evaluation, kind, info["hash"], limits)
    board.record(entry, info)
    return entry


def ensure_oracle(board: Board, sets, info: dict) -> dict:
    entry = oracle_entry(sets, info["hash"])
    board.record(entry, info)
    return entry


def scored_codes(board: Board, info: dict, kind: str) -> dict[str, str | None]:
    """Name -> code key of the entries of ``kind`` scored on this benchmark. Entries of our own code
    (baselines, peers) that were disqualified are left out, so the next build tries them again: a
    stall of the machine past a time limit is no verdict on trusted code."""
    return {e["name"]: e.get("code") for e in board.entries(info["hash"])
            if e.get("kind") == kind and e.get("status") == "ok"}


def run_baselines(board: Board, sets, info: dict, limits, rerun: bool = False, names: Sequence[str] | None = None,
                  landlock: bool = True, say=print, require_isolation: bool = False) -> list[dict]:
    """Every built-in drafter through the same sandbox, recorded as a baseline: those missing from
    the board, disqualified there, or scored by other code than today's (all of them with ``rerun``). A built-in with a
    history across requests is also recorded with it, as :func:`stream_entry` says."""
    have = scored_codes(board, info, "baseline")
    done = []
    # every built-in replays (the traces hold the target's top-k rows that `recycling` reads)
    for name in names or lookup.builtin_names():
        entries = []
        if rerun or have.get(name, "") != code_key(lookup.create(name)):
            entries.append(run_submission(board, Submission.builtin(name), sets, info, "baseline", limits, landlock,
                                          require_isolation))
        entries += stream_entry(board, name, "baseline", have, rerun, sets, info)
        for entry in entries:
            say(one_line(entry))
        done += entries
    return done


#: peers whose own code the sandbox cannot hold: replayed in this process (trusted code of ours), and said so
IN_PROCESS_PEERS = {"peer:hf-prompt-lookup": "calls transformers' own class, which the sandbox withholds"}


def run_peers(board: Board, sets, info: dict, limits, rerun: bool = False, landlock: bool = True,
              say=print, require_isolation: bool = False) -> list[dict]:
    """The peers' lookup functions (``lookup.peers``), recorded as entries of kind ``peer``: in the
    sandbox as the baselines are, except those of :data:`IN_PROCESS_PEERS`. A peer that can keep a
    history across requests (a ``history`` parameter) is also recorded with it, named
    ``<peer>:history=true``, on the benchmark served as one stream of requests in its order (earlier
    cases only), in-process: the sandbox builds a fresh drafter per case. A peer whose optional
    dependency is missing is left out with one line."""
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
            entries.append(record_in_process(board, name, {}, sets, info, IN_PROCESS_PEERS[name])
                           if name in IN_PROCESS_PEERS else
                           run_submission(board, Submission.builtin(name), sets, info, "peer", limits, landlock,
                                          require_isolation))
        entries += stream_entry(board, name, "peer", have, rerun, sets, info)
        for entry in entries:
            say(one_line(entry))
        done += entries
    return done


def stream_entry(board: Board, name: str, kind: str, have: dict, rerun: bool, sets, info: dict) -> list[dict]:
    """Drafter ``name`` with its history across requests (a ``history`` parameter), recorded as
    ``<name>:history=true`` on the benchmark served as one stream of requests in its order (earlier
    cases only), in-process: the sandbox builds a fresh drafter per case. Nothing for a drafter
    without a history, or whose entry (in ``have``: name -> code key) is today's unless ``rerun``."""
    stream = f"{name}:history=true"
    if "history" not in inspect.signature(type(lookup.create(name))).parameters:
        return []
    if not rerun and have.get(stream, "") == code_key(lookup.create(name, history=True)):
        return []
    return [record_in_process(board, name, {"history": True}, sets, info, STREAM_SETTING, stream=True, kind=kind)]


#: what a stream entry's isolation column says
STREAM_SETTING = ("stream: one drafter serves the cases in the benchmark's order, keeping its history of "
                  "earlier cases (replayed in-process)")


def record_in_process(board: Board, name: str, params: dict, sets, info: dict, why: str,
                      stream: bool = False, kind: str = "peer") -> dict:
    """Replay a trusted drafter of ours in this process (the loop's own timing: propose, extend and
    observe per step, reset added to the first step as the sandbox adds it) and record it as an entry
    of ``kind``; ``stream``: one drafter for every case in the benchmark's order (its name then carries
    its params)."""
    spec = name + "".join(f":{k}={str(v).lower()}" for k, v in params.items())
    submission = Submission.builtin(name, params)
    submission = dataclasses.replace(submission, name=spec)
    evaluation = Evaluation(submission, isolation=f"in-process: {why}")
    shared = lookup.create(name, **params) if stream else None
    t0 = time.perf_counter()
    with _progress(sum(len(s.cases) for s in sets), spec) as bar:
        for trace_set in in_order(sets):
            for case in trace_set.cases:
                out = replay_case(case, shared or lookup.create(name, **params), trace_set.profile)
                reset_s = out.stats.drafter_s - sum(step.drafter_s for step in out.stats.steps)
                if out.stats.steps:
                    out.stats.steps[0].drafter_s += reset_s
                evaluation.reset_s += reset_s
                evaluation.cases.append((trace_set, case, out))
                bar.update()
    evaluation.seconds = time.perf_counter() - t0
    entry = make_entry(evaluation, kind, info["hash"])
    board.record(entry, info)
    return entry


def run_examples(board: Board, sets, info: dict, limits, rerun: bool = False, landlock: bool = True,
                 say=print, require_isolation: bool = False) -> list[dict]:
    """The example submissions in experiments/competition/submissions/ (each file under its own name)."""
    have = {e["name"]: e for e in board.entries(info["hash"]) if e.get("kind") == "submission"}
    done = []
    for path in sorted(EXAMPLES.glob("*.py")):
        submission = Submission.file(path)
        old = have.get(submission.name)
        if old and not rerun and old.get("source", {}).get("sha256") == _file_sha(path):
            continue
        entry = run_submission(board, submission, sets, info, "submission", limits, landlock, require_isolation)
        say(one_line(entry))
        done.append(entry)
    return done


def one_line(entry: dict) -> str:
    """An entry in one line (cleaned: safe to print to a terminal): its scores, or why it was disqualified."""
    name = clean(entry.get("name"), 48)
    if entry.get("status") != "ok":
        return f"{name}: disqualified -- {clean(entry.get('reason'), 500)}"
    refused = f"; {entry['refused_count']} operations refused" if entry.get("refused_count") else ""
    return (f"{name}: est. speedup {entry['score']:.3f}x CPU, {entry['score_gpu']:.3f}x GPU, "
            f"tau {entry['tau']:.2f}, {entry['drafter_us_per_step']:.0f} µs/step ({entry['eval_s']:.1f} s){refused}")


# -- --verify: the top entries live on the model ------------------------------------------------------------
def verify_entries(entries: Sequence[dict], target, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                   limits, deny: Sequence[str | Path] = (), landlock: bool = True,
                   require_isolation: bool = False) -> dict[str, dict]:
    """Run each entry through the sandbox on a live ``target``; measured speedup over ``none`` on the
    same prompts and whether every output is token-identical to ``none``'s (plain greedy).

    Every sandbox is open at once and each prompt runs ``none`` then every entry back to back, so
    that a burst of machine noise hits them alike.
    """

    # the replay's total-time limit would count the model's forwards too: only per-call limits here
    limits = dataclasses.replace(limits, total_s=max(limits.total_s, 24 * 3600.0))
    results: dict[str, dict] = {}
    boxes: dict[str, Sandbox] = {}
    walls: dict[str, list[float]] = {}
    with contextlib.ExitStack() as stack:
        for entry in entries:
            submission = submission_of(entry)
            if submission is None:
                results[entry["name"]] = {"skipped": "the submission file is missing or changed since it was scored"}
                continue
            results[entry["name"]] = {"prompts": len(prompts), "max_new_tokens": max_new_tokens,
                                      "model": getattr(target, "name", "?"),
                                      "device": str(getattr(target, "device", "?")), "time": now(),
                                      "identical": True, "tau": []}
            try:
                box = stack.enter_context(Sandbox(submission, target.vocab_size, limits, deny, landlock,
                                                  require_isolation=require_isolation))
                box.generate(target, prompts[0], 4)  # warm-up: first calls and forwards allocate
            except Disqualified as exc:
                results[entry["name"]] = {"failed": exc.reason}
                continue
            boxes[entry["name"]], walls[entry["name"]] = box, []
        decoding.generate(target, prompts[0], lookup.create("none"), 4)
        reference: list[float] = []
        for prompt in prompts:
            t0 = time.perf_counter()
            ref = decoding.generate(target, prompt, lookup.create("none"), max_new_tokens)
            reference.append(time.perf_counter() - t0)
            for name, box in list(boxes.items()):
                try:
                    t0 = time.perf_counter()
                    out = box.generate(target, prompt, max_new_tokens)
                except Disqualified as exc:
                    results[name] = {"failed": exc.reason}
                    del boxes[name]
                    continue
                walls[name].append(time.perf_counter() - t0)
                results[name]["identical"] &= out.tokens == ref.tokens
                results[name]["tau"].append(out.stats.tau)
    for name in boxes:
        r = results[name]
        r.update(speedup=sum(reference) / sum(walls[name]), tau=sum(r["tau"]) / len(r["tau"]),
                 none_s=sum(reference), entry_s=sum(walls[name]), identical=bool(r["identical"]))
    return results


def submission_of(entry: dict):
    """The Submission an entry was scored from, or None when its file is gone or changed."""
    source = entry.get("source") or {}
    kind = source.get("kind")
    if kind == "builtin":
        return Submission.builtin(source["name"], entry.get("params") or {})
    if kind == "entry_point":
        return Submission.entry_point(source["name"], entry["name"], entry.get("params") or {})
    if kind == "file":
        path = local_path(source.get("path", ""))
        if path.is_file() and _file_sha(path) == source.get("sha256"):
            return Submission.file(path, entry["name"], entry.get("params") or {})
    return None


def verify_prompts(sets, count: int) -> list[list[int]]:
    """``count`` prompts from the benchmark, one per task in turn (first cases first)."""
    return [list(case.prompt) for _, case in spread_cases(sets, count)]
