"""The lookup competition: submit a drafter, score it fairly and safely, see how far it is from the best.

    python experiments/leaderboard.py submit my_drafter.py --name my-drafter   # evaluate and record
    python experiments/leaderboard.py submit --entry-point my-drafter           # an installed plug-in
    python experiments/leaderboard.py show                                      # the board, in the terminal
    python experiments/leaderboard.py build [--examples] [--wandb offline] [--verify]

Every entry -- built-in baselines included -- is replayed over the same recorded greedy traces
(``--traces DIR``, default: the embedded model's) in its own sandboxed process
(``experiments.sandbox``). It is ranked by the geometric mean over task groups of its estimated
speedup under the traces' CPU cost profile; a large-GPU profile is shown beside it, and an oracle
row shows the best any lookup of context continuations could do. Scores of different trace sets
never mix: each belongs to the hash of its benchmark. Rules and scoring: docs/competition.md.

Exit codes: 0 done, 1 the submission was recorded as disqualified, 2 a usage error (one line).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

from experiments.cli import guarded, quiet_libraries  # noqa: E402
from lookup.errors import PLDError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BOARD = ROOT / "leaderboard"
EXAMPLES = Path(__file__).resolve().parent / "submissions"
BOARD_FILE = "board.json"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
ORACLE = "oracle"


# -- the board file: JSON, replaced atomically, edited under a lock --------------------------------------
def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, then rename over ``path``: readers see
    the old file or the new one, never half of one, whatever happens in between."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; these files are meant to be read
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Board:
    """``board.json`` in ``folder``: every entry of every benchmark, the source of truth of the views."""

    def __init__(self, folder: str | Path = DEFAULT_BOARD) -> None:
        self.folder = Path(folder)
        self.path = self.folder / BOARD_FILE

    def load(self) -> dict:
        if not self.path.exists():
            return {"version": 1, "benchmarks": {}, "entries": []}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise PLDError(f"{self.path} is not a readable board ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise PLDError(f"{self.path} is not a board file")
        data.setdefault("benchmarks", {})
        return data

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict]:
        """Load, let the caller change, save atomically -- under a lock, so two submits never lose one."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".board.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = self.load()
                yield data
                atomic_write(self.path, json.dumps(data, indent=1, default=str) + "\n")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def record(self, entry: dict, info: dict | None = None) -> None:
        """Add ``entry``, replacing the entry of the same name on the same benchmark."""
        with self.editing() as data:
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            data["entries"] = [e for e in data["entries"]
                               if not (e.get("benchmark") == entry["benchmark"] and e.get("name") == entry["name"])]
            data["entries"].append(entry)

    def entries(self, benchmark: str) -> list[dict]:
        return [e for e in self.load()["entries"] if e.get("benchmark") == benchmark]

    def resolve(self, prefix: str) -> str:
        """The full benchmark hash that ``prefix`` starts (unique), as ``show --benchmark`` accepts."""
        known = sorted({e.get("benchmark") for e in self.load()["entries"] if e.get("benchmark")})
        found = [h for h in known if h.startswith(prefix)]
        if len(found) != 1:
            listed = ", ".join(known) or "none"
            raise PLDError(f"benchmark {prefix!r} {'is ambiguous' if found else 'is not on the board'}; recorded: {listed}")
        return found[0]


# -- entries ----------------------------------------------------------------------------------------------
def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _file_sha(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source_info(submission) -> dict:
    info = dict(submission.source)
    if info["kind"] == "file":
        path = Path(info["path"])
        info["sha256"] = _file_sha(path)
        with contextlib.suppress(ValueError):
            info["display"] = str(path.relative_to(ROOT))
    return info


def check_name(name: str, kind: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise PLDError(f"name {name!r}: use 1-48 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if kind == "submission" and (name == ORACLE or name in _builtin_names()):
        raise PLDError(f"name {name!r} is taken by a baseline; choose another --name")
    return name


def _builtin_names() -> list[str]:
    """Drafters that ship with pld-lab (plug-ins registered by entry points are not baselines)."""
    import lookup

    lookup.available()
    return sorted(n for n, cls in lookup.registry._REGISTRY.items() if cls.__module__.startswith("lookup."))


def make_entry(evaluation, kind: str, benchmark: str, limits=None) -> dict:
    """The board entry of a finished (or disqualified) evaluation."""
    from experiments.leaderboard_score import case_row, entry_scores
    from experiments.results import git_sha

    ev = evaluation
    steps = sum(len(out.stats.steps) for _, _, out in ev.cases)
    entry = {
        "name": ev.submission.name, "kind": kind, "benchmark": benchmark, "source": _source_info(ev.submission),
        "params": ev.submission.params, "status": "ok" if ev.ok else "disqualified", "reason": ev.reason,
        "refused": ev.refused[:20], "refused_count": int(ev.child.get("refused_count", len(ev.refused)) or 0),
        "isolation": ev.isolation, "cases_run": len(ev.cases), "eval_s": round(ev.seconds, 3),
        "setup_s": round(ev.setup_s, 3), "rt_us_per_step": 1e6 * ev.round_trip_s / steps if steps else None,
        # what the submission printed: in full (up to 6 kB) when it broke a rule or was refused something
        "log_tail": ev.log_tail[-(6000 if ev.reason or ev.refused else 500):], "time": _now(), "git_sha": git_sha(),
        "limits": limits.to_dict() if limits is not None else None,
    }
    if ev.ok:
        entry.update(entry_scores([case_row(case, out.stats.steps, s.profile) for s, case, out in ev.cases]))
    return entry


def oracle_entry(sets, benchmark: str) -> dict:
    """The ceiling: the longest correct run after any earlier occurrence of the last token, per step."""
    import time

    from experiments.leaderboard_score import (ORACLE_CAP, case_row, cost_aware_oracle_speedup, entry_scores,
                                               oracle_steps)

    t0 = time.perf_counter()
    rows = []
    for s in sets:
        for case in s.cases:
            row = case_row(case, oracle_steps(case, s.profile), s.profile)
            best = cost_aware_oracle_speedup(case, s.profile)
            # the cost-aware ceiling, pooled like est_speedup (token-weighted harmonic mean)
            rows.append({**row, "est_speedup": best, "est_speedup_gpu": row["est_speedup_gpu"], "_plain": row})
    entry = {"name": ORACLE, "kind": "oracle", "benchmark": benchmark, "status": "ok", "reason": None,
             "source": {"kind": "oracle", "cap": ORACLE_CAP}, "params": {"cap": ORACLE_CAP}, "time": _now()}
    entry.update(entry_scores([r["_plain"] for r in rows]))
    best = entry_scores(rows)
    entry["score_cost_aware"] = best["score"]
    for group, scores in best["groups"].items():
        entry["groups"][group]["est_speedup_cost_aware"] = scores["est_speedup"]
    entry["eval_s"] = round(time.perf_counter() - t0, 3)
    return entry


def ranked(entries: Sequence[dict]) -> tuple[dict | None, list[dict], list[dict]]:
    """(oracle, entries that scored -- best first, disqualified entries)."""
    oracle = next((e for e in entries if e.get("kind") == "oracle"), None)
    ok = [e for e in entries if e.get("kind") != "oracle" and e.get("status") == "ok" and e.get("score")]
    ok.sort(key=lambda e: (-e["score"], e["name"]))
    dq = sorted((e for e in entries if e.get("kind") != "oracle" and e not in ok), key=lambda e: e["name"])
    return oracle, ok, dq


# -- running ----------------------------------------------------------------------------------------------
def _progress(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc[:30], unit="case", leave=False, dynamic_ncols=True, disable=not sys.stderr.isatty())


def run_submission(board: Board, submission, sets, info: dict, kind: str, limits, landlock: bool = True) -> dict:
    """Evaluate in the sandbox and record the entry (disqualified or not); returns the entry."""
    from experiments.sandbox import evaluate

    total = sum(len(s.cases) for s in sets)
    with _progress(total, submission.name) as bar:
        evaluation = evaluate(submission, sets, limits, deny=[board.folder], landlock=landlock, progress=bar.update)
    entry = make_entry(evaluation, kind, info["hash"], limits)
    board.record(entry, info)
    return entry


def ensure_oracle(board: Board, sets, info: dict) -> dict:
    entry = oracle_entry(sets, info["hash"])
    board.record(entry, info)
    return entry


def run_baselines(board: Board, sets, info: dict, limits, rerun: bool = False, names: Sequence[str] | None = None,
                  landlock: bool = True, say=print) -> list[dict]:
    """Every built-in drafter through the same sandbox, recorded as a baseline (missing ones only,
    unless ``rerun``)."""
    import lookup
    from experiments.sandbox import Submission

    have = {e["name"] for e in board.entries(info["hash"]) if e.get("kind") == "baseline"}
    done = []
    # the board replays traces, which cannot serve drafters that read the target's logits
    for name in names or [n for n in _builtin_names() if lookup.replayable(n)]:
        if name in have and not rerun:
            continue
        entry = run_submission(board, Submission.builtin(name), sets, info, "baseline", limits, landlock)
        say(_one_line(entry))
        done.append(entry)
    return done


def run_examples(board: Board, sets, info: dict, limits, rerun: bool = False, landlock: bool = True,
                 say=print) -> list[dict]:
    """The example submissions in experiments/submissions/ (each file under its own name)."""
    import lookup
    from experiments.sandbox import Submission

    have = {e["name"]: e for e in board.entries(info["hash"]) if e.get("kind") == "submission"}
    done = []
    for path in sorted(EXAMPLES.glob("*.py")):
        submission = Submission.file(path)
        old = have.get(submission.name)
        if old and not rerun and old.get("source", {}).get("sha256") == _file_sha(path):
            continue
        entry = run_submission(board, submission, sets, info, "submission", limits, landlock)
        say(_one_line(entry))
        done.append(entry)
    return done


def _one_line(entry: dict) -> str:
    if entry.get("status") != "ok":
        return f"{entry['name']}: disqualified -- {entry.get('reason')}"
    refused = f"; {entry['refused_count']} operations refused" if entry.get("refused_count") else ""
    return (f"{entry['name']}: est. speedup {entry['score']:.3f}x CPU, {entry['score_gpu']:.3f}x GPU, "
            f"tau {entry['tau']:.2f}, {entry['drafter_us_per_step']:.0f} µs/step ({entry['eval_s']:.1f} s){refused}")


# -- --verify: the top entries live on the model ------------------------------------------------------------
def verify_entries(entries: Sequence[dict], target, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                   limits, deny: Sequence[str | Path] = (), landlock: bool = True) -> dict[str, dict]:
    """Run each entry through the sandbox on a live ``target``; measured speedup over ``none`` on the
    same prompts and whether every output is token-identical to ``none``'s (plain greedy).

    Every sandbox is open at once and each prompt runs ``none`` then every entry back to back, so
    that a burst of machine noise hits them alike.
    """
    import time

    import decoding
    import lookup
    from experiments.sandbox import Disqualified, Sandbox

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
                                      "device": str(getattr(target, "device", "?")), "time": _now(),
                                      "identical": True, "tau": []}
            try:
                box = stack.enter_context(Sandbox(submission, target.vocab_size, limits, deny, landlock))
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
    from experiments.sandbox import Submission

    source = entry.get("source") or {}
    kind = source.get("kind")
    if kind == "builtin":
        return Submission.builtin(source["name"], entry.get("params") or {})
    if kind == "entry_point":
        return Submission.entry_point(source["name"], entry["name"], entry.get("params") or {})
    if kind == "file":
        path = Path(source.get("path", ""))
        if path.is_file() and _file_sha(path) == source.get("sha256"):
            return Submission.file(path, entry["name"], entry.get("params") or {})
    return None


def verify_prompts(sets, count: int) -> list[list[int]]:
    """``count`` prompts from the benchmark, one per task in turn (first cases first)."""
    out, i = [], 0
    while len(out) < count and any(i < len(s.cases) for s in sets):
        for s in sets:
            if i < len(s.cases) and len(out) < count:
                out.append(list(s.cases[i].prompt))
        i += 1
    return out


# -- CLI --------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def common(q, traces=True):
        q.add_argument("--board", default=str(DEFAULT_BOARD), help="board folder (default: leaderboard/)")
        if traces:
            q.add_argument("--traces", default=None, help="trace folder (default: the embedded model's traces)")

    def limits(q):
        q.add_argument("--propose-ms", type=float, default=50.0, help="limit per propose/extend/observe call (50)")
        q.add_argument("--total-s", type=float, default=300.0, help="limit for the whole replay (300)")
        q.add_argument("--memory-gb", type=float, default=2.0, help="address-space limit of the process (2)")
        q.add_argument("--no-landlock", action="store_true", help="audit hook only (for kernels where Landlock misbehaves)")

    s = sub.add_parser("submit", help="evaluate a submission and record it on the board")
    s.add_argument("file", nargs="?", help="a .py file that defines one Drafter subclass")
    s.add_argument("--entry-point", default=None, help="an installed plug-in (entry point group pld_lab.drafters)")
    s.add_argument("--name", default=None, help="the entry's name (default: the file name or entry point)")
    s.add_argument("--params", default=None, help="JSON object of keyword arguments for the drafter's constructor")
    common(s)
    limits(s)

    sh = sub.add_parser("show", help="print the board of a benchmark")
    sh.add_argument("--benchmark", default=None, help="a benchmark hash (or its prefix); default: the current traces'")
    common(sh)

    b = sub.add_parser("build", help="score the baselines and the oracle, write LEADERBOARD.md, leaderboard.json, index.html")
    b.add_argument("--examples", action="store_true", help="also (re)submit the example submissions in experiments/submissions/")
    b.add_argument("--rerun", action="store_true", help="re-evaluate baselines (and examples) already on the board")
    b.add_argument("--wandb", default="off", help="log the board as a W&B table: online, offline or off (default off)")
    b.add_argument("--verify", action="store_true", help="rerun the top entries live on the embedded model")
    b.add_argument("--verify-top", type=int, default=3)
    b.add_argument("--verify-prompts", type=int, default=3)
    b.add_argument("--verify-tokens", type=int, default=64)
    common(b)
    limits(b)
    return p


def _limits(args):
    from experiments.sandbox import Limits

    if args.propose_ms <= 0 or args.total_s <= 0 or args.memory_gb <= 0:
        raise PLDError("--propose-ms, --total-s and --memory-gb must be > 0")
    return Limits(call_s=args.propose_ms / 1e3, total_s=args.total_s, memory_bytes=int(args.memory_gb * (1 << 30)))


def _benchmark(args):
    from experiments.leaderboard_score import benchmark_info
    from experiments.traces import default_folder, load_trace_sets

    folder = Path(args.traces) if args.traces else default_folder()
    sets = [s for s in load_trace_sets(folder) if s.cases]
    if not sets:
        raise PLDError(f"the trace files in {folder} hold no complete case")
    return sets, benchmark_info(sets, folder.resolve())


@guarded
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries()
    board = Board(args.board)
    return COMMANDS[args.command](args, board)


def cmd_submit(args, board: Board) -> int:
    from experiments.sandbox import Submission

    if bool(args.file) == bool(args.entry_point):
        raise PLDError("give a submission file or --entry-point NAME (one of them)")
    params = _params(args.params)
    if args.file:
        submission = Submission.file(args.file, args.name, params)
    else:
        submission = Submission.entry_point(args.entry_point, args.name, params)
    check_name(submission.name, "submission")
    limits = _limits(args)
    sets, info = _benchmark(args)
    entry = run_submission(board, submission, sets, info, "submission", limits, not args.no_landlock)
    oracle = ensure_oracle(board, sets, info)
    print(_one_line(entry))
    if entry["status"] == "ok":
        _, ok, _ = ranked(board.entries(info["hash"]))
        rank = next(i for i, e in enumerate(ok, 1) if e["name"] == entry["name"])
        gain = (entry["score"] - 1) / (oracle["score"] - 1) if oracle.get("score", 1) > 1 else None
        share = f"; {100 * gain:.0f}% of the oracle's gain ({oracle['score']:.3f}x)" if gain is not None else ""
        print(f"rank {rank} of {len(ok)} on benchmark {info['hash']}{share}")
        return 0
    return 1


def _params(text: str | None) -> dict:
    if not text:
        return {}
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise PLDError(f"--params is not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise PLDError("--params must be a JSON object, like '{\"max_tokens\": 8}'")
    return params


def cmd_show(args, board: Board) -> int:
    from experiments.leaderboard_render import text_board

    if args.benchmark:
        bench = board.resolve(args.benchmark)
        info = board.load()["benchmarks"].get(bench, {"hash": bench})
    else:
        _, info = _benchmark(args)
        bench = info["hash"]
    entries = board.entries(bench)
    if not entries:
        raise PLDError(f"nothing on the board for benchmark {bench}; run `python experiments/leaderboard.py build`")
    print(text_board(entries, info))
    return 0


def cmd_build(args, board: Board) -> int:
    import time

    from experiments.leaderboard_render import write_outputs

    limits = _limits(args)
    landlock = not args.no_landlock
    sets, info = _benchmark(args)
    t0 = time.perf_counter()
    oracle = ensure_oracle(board, sets, info)
    print(f"benchmark {info['hash']}: {info['cases']} cases, {info['tokens']:,} tokens in {info['folder']}")
    print(_one_line(oracle))
    run_baselines(board, sets, info, limits, rerun=args.rerun, landlock=landlock)
    if args.examples:
        run_examples(board, sets, info, limits, rerun=args.rerun, landlock=landlock)
    if args.verify:
        _verify(args, board, sets, info, limits, landlock)
    paths = write_outputs(board.entries(info["hash"]), info, board.folder, wandb_mode=args.wandb)
    print(f"built in {time.perf_counter() - t0:.1f} s: " + ", ".join(str(p) for p in paths))
    return 0


def _verify(args, board: Board, sets, info: dict, limits, landlock: bool) -> None:
    import decoding

    if args.verify_top < 1 or args.verify_prompts < 1 or args.verify_tokens < 1:
        raise PLDError("--verify-top, --verify-prompts and --verify-tokens must be >= 1")
    _, ok, _ = ranked(board.entries(info["hash"]))
    top = ok[: args.verify_top]
    target = decoding.load_model()
    prompts = verify_prompts(sets, args.verify_prompts)
    results = verify_entries(top, target, prompts, args.verify_tokens, limits, [board.folder], landlock)
    with board.editing() as data:
        for e in data["entries"]:
            if e.get("benchmark") == info["hash"] and e["name"] in results:
                e["verify"] = results[e["name"]]
    for name, r in results.items():
        if "speedup" in r:
            print(f"verify {name}: measured {r['speedup']:.2f}x over none, identical output: {r['identical']}")
        else:
            print(f"verify {name}: {r.get('failed') or r.get('skipped')}")


COMMANDS = {"submit": cmd_submit, "show": cmd_show, "build": cmd_build}


if __name__ == "__main__":
    sys.exit(main())
