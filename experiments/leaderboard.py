"""The lookup competition: submit a drafter, score it fairly and safely, see how far it is from the best.

    python experiments/leaderboard.py submit my_drafter.py --name my-drafter   # evaluate and record
    python experiments/leaderboard.py submit --entry-point my-drafter           # an installed plug-in
    python experiments/leaderboard.py show                                      # the board, in the terminal
    python experiments/leaderboard.py build [--examples] [--wandb offline] [--verify]
    python experiments/leaderboard.py build --model NAME_OR_GGUF [--prompts 8]     # your own model's board
    python experiments/leaderboard.py render                                    # the views again, scoring nothing
    python experiments/leaderboard.py figures [--check]                          # the board's figures in the docs

Every entry -- built-in baselines included -- is replayed over the same recorded greedy traces
(``--benchmark NAME``: a shipped benchmark, the embedded model's by default or Gemma 3 270M's;
``--traces DIR``: any folder) in its own sandboxed process
(``experiments.competition.sandbox``). It is ranked by the geometric mean over task groups of its
estimated speedup under the traces' CPU cost profile; a large-GPU profile is shown beside it, and an
oracle row shows the best any lookup of context continuations could do. Scores of different trace
sets never mix: each belongs to the hash of its benchmark. Rules and scoring: docs/competition.md.

Exit codes: 0 done, 1 the submission was disqualified (recorded, or listed under a better entry of its
name), 2 a usage error (one line: a syntax error, parameters its class refuses, ...).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

from experiments.cli import add_traces_options, guarded, quiet_libraries  # noqa: E402
import decoding  # noqa: E402
from experiments.benchmarks.paths import ROOT, portable_path  # noqa: E402
from decoding.loading import EMBEDDED_NAME, packaged_name  # noqa: E402
from experiments.benchmarks.traces import (benchmark_folder, default_folder, load_trace_sets, model_key,  # noqa: E402
                                          read_benchmark, shipped_benchmarks, shipped_folder, traces_model)
from experiments.competition.board import DEFAULT_BOARD, Board  # noqa: E402
from experiments.competition.entries import (check_name, ensure_oracle, one_line, run_baselines, run_peers,  # noqa: E402
                                             run_examples, run_fresh, run_submission, seed_baselines, shown_entries,
                                             verify_entries, verify_prompts)
from experiments.competition.figures import count_regions, update_files  # noqa: E402
from experiments.competition.loader import entry_of, key_of  # noqa: E402
from experiments.competition.ranking import PUBLIC, board_scores, ranked, standing, track_names  # noqa: E402
from experiments.competition.records import PENDING  # noqa: E402
from experiments.competition.records import Entry  # noqa: E402
from experiments.competition.owners import check_owner, key_file, owner_proof, submitter_key  # noqa: E402
from experiments.competition.render import entry_details, text_board, write_outputs  # noqa: E402
from experiments.competition.fresh_cases import (DEFAULT_PER_TASK, fresh_info, new_seed,  # noqa: E402
                                                 published_seeds, record_fresh,
                                                 record_fresh_together)  # noqa: E402
from experiments.competition.sandbox import Limits, Submission  # noqa: E402
from experiments.competition.scoring import CPU_TRACK, benchmark_info, sampled_sets, track_named  # noqa: E402
from experiments.competition.text import clean  # noqa: E402
from experiments.reporting.summary import oracle_gain  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402
from pldcore.setting import Regime  # noqa: E402
from pldcore.names import unknown_name  # noqa: E402
from pldcore.params import MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH, check_params  # noqa: E402
from experiments.benchmarks.untrusted import parse_json  # noqa: E402
from lookup.specs import parse_spec  # noqa: E402
from experiments.competition.own_board import OwnBoard, default_board, timed  # noqa: E402
from experiments.running.cases import check_prompts  # noqa: E402


# -- CLI --------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def common(q, traces=True, default="the embedded model's benchmark"):
        q.add_argument("--board", default=str(DEFAULT_BOARD), help="board folder (default: leaderboard/)")
        if traces:
            add_traces_options(q, default, board_hash=True)

    def limits(q):
        q.add_argument("--propose-ms", type=float, default=50.0, help="limit per propose/extend/observe call (50)")
        q.add_argument("--total-s", type=float, default=300.0, help="limit for the whole replay (300)")
        q.add_argument("--memory-gb", type=float, default=2.0, help="address-space limit of the process (2)")
        q.add_argument("--no-landlock", action="store_true", help="no Landlock layer (for kernels where it misbehaves)")
        q.add_argument("--require-isolation", action="store_true",
                       help="refuse to run an entry without full isolation (bubblewrap and seccomp)")

    s = sub.add_parser("submit", help="evaluate a submission and record it on the board")
    s.add_argument("file", nargs="?", help="a .py file that defines one Drafter subclass")
    s.add_argument("--entry-point", default=None, help="an installed plug-in (entry point group pld_lab.drafters)")
    s.add_argument("--name", default=None, help="the entry's name (default: the file name or entry point)")
    s.add_argument("--key", default=None,
                   help="the key that owns --name (default: this account's key file, ~/.config/pld-lab/submitter.key, "
                        "made on first use); a name's entry is replaced only by its owner's submissions")
    s.add_argument("--params", default=None,
                   help="keyword arguments for the drafter's constructor: key=value pairs joined by ':' "
                        "(max_tokens=8:min_match=2), or a JSON object")
    common(s)
    limits(s)

    sh = sub.add_parser("show", help="print the board of a benchmark (or one entry of it, in detail)")
    sh.add_argument("name", nargs="?", default=None,
                    help="an entry: its scores per group and where it loses time against the oracle")
    sh.add_argument("--profile", default=None,
                    help="a GPU track's ranking (flat, h100-8b: docs/hardware.md) instead of the CPU board")
    common(sh)

    b = sub.add_parser("build", help="score the baselines and the oracle, write LEADERBOARD.md, leaderboard.json, "
                                     "index.html: of every shipped benchmark, one board each (or of the one named)")
    b.add_argument("--examples", action="store_true", help="also (re)submit the example submissions in experiments/competition/submissions/")
    b.add_argument("--rerun", action="store_true", help="re-evaluate baselines (and examples) already on the board")
    b.add_argument("--no-peers", action="store_true", help="leave the peers' lookup functions (docs/peers.md) out")
    b.add_argument("--wandb", default="off", help="log the board as a W&B table: online, offline or off (default off)")
    b.add_argument("--fresh", type=int, default=None,
                   help=f"prompts per task of the fresh cases made, recorded and scored at this build, which rank "
                        f"the board (default {DEFAULT_PER_TASK}, with --model 0; 0: the public benchmark only, for a "
                        f"quick local build)")
    b.add_argument("--seed", type=int, default=None,
                   help="the fresh cases' seed (default: drawn now, one the board never published; a seed the "
                        "board published is an audit: scored on a copy of the board, changing no rank)")
    b.add_argument("--model", default=None, metavar="NAME_OR_GGUF",
                   help="your own model's board in one command: record its benchmark (--prompts per task, "
                        "--max-new-tokens), measure its cost profile here, fit adaptive's acceptance models on its "
                        "traces, build its board (default folder results/boards/MODEL/; resumable: what is done is kept)")
    b.add_argument("--prompts", type=int, default=8, help="with --model: prompts per task to record (default 8)")
    b.add_argument("--max-new-tokens", type=int, default=128, help="with --model: new tokens per case (default 128)")
    b.add_argument("--verify", action="store_true", help="rerun the top entries live on the embedded model")
    b.add_argument("--verify-top", type=int, default=3)
    b.add_argument("--verify-prompts", type=int, default=3)
    b.add_argument("--verify-tokens", type=int, default=64)
    common(b, default="every shipped benchmark in turn, the same fresh seed for each")
    limits(b)

    r = sub.add_parser("render", help="write LEADERBOARD.md, leaderboard.json and index.html again from the board "
                                      "file, scoring nothing (after a change to the views)")
    common(r)

    c = sub.add_parser("check-fresh", help="make the board's fresh cases again from its seed, record them, "
                                           "and check they are the cases the board was ranked by")
    c.add_argument("--out", default=None, help="record into this folder (default: a new temporary one, so "
                                               "nothing recorded before is reused)")
    common(c)

    f = sub.add_parser("figures", help="render the board's figures into README.md and docs/*.md "
                                       "(the regions between <!-- figures:NAME --> markers)")
    f.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming each region that differs from the board")
    f.add_argument("--root", default=None, help="the checkout whose README.md and docs/*.md to render (default: this one)")
    common(f, traces=False)
    return p


def _limits(args):
    if args.propose_ms <= 0 or args.total_s <= 0 or args.memory_gb <= 0:
        raise PLDError("--propose-ms, --total-s and --memory-gb must be > 0")
    return Limits(call_s=args.propose_ms / 1e3, total_s=args.total_s, memory_bytes=int(args.memory_gb * (1 << 30)))


def _folder(args) -> Path:
    """The trace folder named by ``--traces`` or ``--benchmark`` (a shipped one), else the default."""
    if getattr(args, "traces", None):
        return Path(args.traces)
    if getattr(args, "benchmark", None):
        return benchmark_folder(args.benchmark)
    return default_folder()


def _benchmark(args, folder: Path | None = None, sampled: bool = False):
    """(sets, info) of the benchmark ``args`` name (or in ``folder``); with ``sampled``, (sets, info,
    its sampled traces by regime name: what the sampled tracks replay, ``scoring.sampled_sets``)."""
    folder = folder or _folder(args)
    sets = [s for s in load_trace_sets(folder) if s.cases]
    if not sets:
        raise PLDError(f"the trace files in {folder} hold no complete case")
    if not sampled:
        return sets, benchmark_info(sets, folder.resolve())
    regimes = sampled_sets(folder)
    return sets, benchmark_info(sets, folder.resolve(), regimes), regimes


@guarded
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries()
    if args.command == "build" and args.model and args.board == str(DEFAULT_BOARD):
        args.board = str(default_board(args.model))  # an own model's board never goes into the committed one
    board = Board(args.board)
    return COMMANDS[args.command](args, board)


def cmd_submit(args, board: Board) -> int:
    if bool(args.file) == bool(args.entry_point):
        raise PLDError("give a submission file or --entry-point NAME (one of them)")
    params = _params(args.params)
    if args.file:  # a syntax error is one line here (Submission.file parses it; nothing of it runs)
        submission = Submission.file(args.file, args.name, params)  # what runs is its copy in the board's store
    else:
        submission = Submission.entry_point(args.entry_point, args.name, params)
    check_name(submission.name, "submission")
    # the name is the submitter's who took it first (owners.py): refused here, before anything runs,
    # and again under the board's lock when the entry is recorded
    proof = owner_proof(submission.name, submitter_key(args.key))
    data = board.load()
    taking = check_owner(data, submission.name, proof, (e for e in data["entries"] if key_of(e)[1] == submission.name))
    limits = _limits(args)
    sets, info, sampled = _benchmark(args, sampled=True)
    # parameters its class refuses: one line, nothing recorded; a worse or disqualified resubmission
    # does not replace the board's entry of its name (it lists the attempt)
    entry = run_submission(board, submission, sets, info, "submission", limits, not args.no_landlock,
                           args.require_isolation, keep_best=True, owner=proof, sampled=sampled)
    seeded = seed_baselines(board, Board(DEFAULT_BOARD), info)
    oracle = entry_of(ensure_oracle(board, sets, info, sampled))
    print(one_line(entry_of(entry)))
    name = clean(entry["name"], 48)
    if seeded:
        print(f"the board in {board.folder} had no baselines of benchmark {info['hash']}: copied the committed "
              f"board's {seeded} baselines and peers ({clean(portable_path(Board(DEFAULT_BOARD).path), 200)}) "
              "to rank against")
    if taking:
        where = "--key" if args.key else clean(str(key_file()).replace(str(Path.home()), "~", 1), 200)
        print(f"the name {name} is yours now: a submission under it replaces its entry only with your key "
              f"({where}; `submit --key KEY` from another account)")
    kept = entry_of(entry["kept"]) if "kept" in entry else None  # the board's better entry of its name
    if kept is not None:
        print(f"not recorded: the board keeps {name}'s better entry ({kept.public.score or 0:.3f}x, "
              f"{clean(kept.time, 40)}); a resubmission never replaces a better one of its name. "
              f"`leaderboard.py show {name}` lists every attempt")
    if (kept or entry_of(entry)).public.ok:
        _say_rank(board, info, name, oracle)
    return 0 if entry["status"] == "ok" else 1


def _say_rank(board: Board, info: dict, name: str, oracle: Entry) -> None:
    """Where entry ``name`` stands, in the words and the numbers ``show`` uses (``ranking.standing``:
    the board proper, the peers ranked apart; by fresh cases where the board links some). A score on
    the public benchmark is never shown as a rank: anyone can carry the public answers (a memoriser
    that drafts only what the context holds is not even flagged), so it is the public score, and the
    entry is ranked by the fresh cases of the next build."""
    shown, _ = shown_entries(board, info["hash"])
    me = next(e for e in shown if e.name == name)
    label = "public benchmark" if info.get("public") else "benchmark"
    place = standing(shown, name)
    shown_oracle = ranked(shown).oracle or oracle
    if place is not None and (me.fresh is not None or not info.get("public")):
        mine, best = board_scores(me).score, board_scores(shown_oracle).score
        gain = oracle_gain(mine, best)
        share = f"; {100 * gain:.0f}% of the oracle's gain ({best:.3f}x)" if gain is not None else ""
        fresh = " on its fresh cases" if me.fresh is not None else ""
        print(f"rank {place[0]} of {place[1]} by score{fresh} on the {label} {info['hash']}, as "
              f"`leaderboard.py show` lists it (the peers are ranked apart){share}")
        if place[1] == 1:
            print(f"the board in {board.folder} holds no other scored entry to rank against: build it there first "
                  "(leaderboard.py build --board DIR), or submit to the default board (leaderboard/)")
    elif board_scores(me).ok or board_scores(me).status == PENDING:  # on the public cases only: a score, not a rank
        gain = oracle_gain(me.public.score, shown_oracle.public.score)
        share = f" ({100 * gain:.0f}% of the oracle's gain there)" if gain is not None else ""
        print(f"public score {me.public.score or 0:.3f}x on the {label} {info['hash']}{share}: not a rank. The "
              f"board ranks by fresh cases, made and scored at its next build, which ranks {name} by them "
              "(docs/competition.md)")
    else:  # scored here, disqualified on the board's fresh cases
        print(f"not ranked: {clean(board_scores(me).reason, 300)} (`leaderboard.py show` lists it so)")
    for flag in me.flags or ():
        print(f"FLAG {clean(flag, 300)}")


def _params(text: str | None) -> dict:
    """``--params``: a JSON object, or ``key=value`` pairs joined by ``:`` as in a drafter spec
    (``max_tokens=8:min_match=2``; values are Python literals, as ``compare.py --drafters`` reads them),
    bounded as every parameter is (``pldcore.params``: depth, size, types) before anything runs."""
    if not text:
        return {}
    if len(text) > 4 * MAX_PARAMS_BYTES:  # bounded before it is parsed, whatever it holds
        raise PLDError(f"--params: over {MAX_PARAMS_BYTES} bytes")
    if text.lstrip().startswith("{"):
        params = parse_json(text, "--params", "parameter object", max_depth=MAX_PARAMS_DEPTH)
        if not isinstance(params, dict):
            raise PLDError("--params must be a JSON object, like '{\"max_tokens\": 8}', or max_tokens=8")
        return check_params(params, "--params")
    if "=" not in text:
        raise PLDError("--params takes key=value pairs joined by ':' (max_tokens=8:min_match=2) or a JSON object")
    try:
        return check_params(parse_spec(f"submission:{text}")[1], "--params")
    except (RecursionError, MemoryError):  # a literal nested past the parser's patience
        raise PLDError(f"--params: nested deeper than {MAX_PARAMS_DEPTH} levels") from None


def _named_benchmark(args, board: Board) -> str:
    """The hash of the benchmark ``--benchmark`` names: a shipped one (by name, prefix or hash
    prefix), else a hash (prefix) of a benchmark on the board; or that of ``--traces``; or the current one."""
    if args.benchmark:
        try:
            info = read_benchmark(benchmark_folder(args.benchmark)) or {}
            if info.get("hash"):
                return str(info["hash"])
        except PLDError as shipped_error:
            try:
                return board.resolve(args.benchmark)
            except PLDError:
                if re.fullmatch(r"[0-9a-f]+", args.benchmark):  # a hash (prefix): the board's answer stands
                    raise
                raise shipped_error from None
    if args.traces:  # the board of the traces named
        return _benchmark(args)[1]["hash"]
    return _current_benchmark(args, board)


def views_folder(board: Board, info: dict) -> Path:
    """Where the views of a benchmark go: the board's folder for the default (the embedded model's)
    benchmark and for any unshipped one; ``<board>/<name>/`` for another shipped benchmark."""
    name = info.get("name")
    if info.get("default", True) or not isinstance(name, str) or not name:
        return board.folder
    return board.folder / model_key(name)


def cmd_show(args, board: Board) -> int:
    bench = _named_benchmark(args, board)
    entries, info = shown_entries(board, bench)
    if not entries:
        raise PLDError(f"nothing on the board for benchmark {clean(bench, 64)}; "
                       "run `python experiments/leaderboard.py build`")
    if args.profile is not None and args.profile.lower() != CPU_TRACK.name:
        track = track_named(args.profile).name
        if track not in track_names(entries):
            raise PLDError(f"the board of benchmark {clean(bench, 64)} has no track {track} yet: "
                           "`python experiments/leaderboard.py build` scores it")
        print(text_board(entries, info, track=track))
        return 0
    if args.name is None:
        print(text_board(entries, info))
        return 0
    named = [e for e in entries if e.name == args.name]
    if not named:
        # the names come from the board file: cleaned, like every text shown from it
        raise PLDError(unknown_name("entry", clean(args.name, 48), [clean(e.name, 48) for e in entries])
                       + f" (on benchmark {clean(bench, 64)})")
    print(entry_details(named[0], [e for e in entries if e.is_oracle], info))
    return 0


def cmd_render(args, board: Board) -> int:
    """The board's views written again from its file, as ``build`` ends (nothing scored, no W&B)."""
    bench = _named_benchmark(args, board)
    shown, info = shown_entries(board, bench)
    if not shown:
        raise PLDError(f"nothing on the board for benchmark {clean(bench, 64)}; "
                       "run `python experiments/leaderboard.py build`")
    paths = write_outputs(shown, info, views_folder(board, info), wandb_mode="off")
    print("rendered from " + clean(portable_path(board.path), 200) + ": " + ", ".join(str(p) for p in paths))
    return 0


def _current_benchmark(args, board: Board) -> str:
    """The benchmark of the default traces when they are here; else the board's own: the board
    file is enough to read it (the benchmark whose entries are the newest, when it holds several)."""
    try:
        return _benchmark(args)[1]["hash"]
    except PLDError:
        entries = board.entries()
        if not entries:
            raise PLDError(f"the board in {board.folder} is empty; run `python experiments/leaderboard.py build`") from None
        newest = max(entries, key=lambda e: e.time or "")
        if newest.benchmark is None:
            raise PLDError(f"the newest entry of the board in {board.folder} names no benchmark; "
                           "give one with --benchmark") from None
        return newest.benchmark


def cmd_build(args, board: Board) -> int:
    """Build the board of the benchmark named, or of every shipped benchmark in turn (one fresh seed
    for all: the same prompts, recorded on each benchmark's model)."""
    _limits(args)  # a bad limit is one line before any work
    if args.fresh is None:
        args.fresh = 0 if args.model else DEFAULT_PER_TASK
    if args.fresh < 0:
        raise PLDError("--fresh must be >= 0 prompts per task")
    if args.fresh:
        board = _fresh_seed(args, board)
    if args.model:
        return _build_own(args, board)
    if args.traces or args.benchmark:
        return _build(args, board, _folder(args))
    folders = list(shipped_benchmarks().values())
    if args.fresh and len(folders) > 1:
        _record_fresh_ahead(args, folders)
    for i, folder in enumerate(folders, 1):
        print(f"== benchmark {i} of {len(folders)}: {folder.name}")
        _build(args, board, folder)
    return 0


def _record_fresh_ahead(args, folders: Sequence[Path]) -> None:
    """Record every benchmark's fresh cases (greedy, and in each of its sampled tracks' regimes)
    before any is scored, side by side (``fresh_cases.record_fresh_together``): the models'
    recordings overlap, and each benchmark's build then finds its cases recorded."""
    jobs = []
    for folder in folders:
        model = traces_model([s for s in load_trace_sets(folder) if s.cases])
        if model is not None:  # a benchmark of another model fails in its own build, saying why
            jobs.append((model, [Regime.from_name(name) for name in sampled_sets(folder)]))
    if len(jobs) > 1:
        record_fresh_together(args.seed, args.fresh, jobs)


def _fresh_seed(args, board: Board) -> Board:
    """Settle the build's fresh seed (``args.seed``) and the board it writes. A seed the board has
    published (``fresh_cases.published_seeds``) ranks nothing again: anyone can make its cases
    (``check-fresh``) and carry their answers. So an official build draws a seed never published;
    ``--seed S`` of a published seed is an audit: the whole build runs on a copy of the board in a
    temporary folder, reports, and leaves this board (and every rank on it) as it was."""
    published = published_seeds(board.load())
    if args.seed is None:
        args.seed = new_seed(published)
        return board
    if args.seed not in published:
        return board
    import tempfile

    audit = board.copy_to(Path(tempfile.mkdtemp(prefix="pld-audit-")) / "board")
    print(f"audit: seed {args.seed} was published by {clean(portable_path(board.path), 200)}, so its cases rank "
          f"nothing again; scoring on a copy of the board ({audit.folder}), this board is left unchanged")
    return audit


def _build_own(args, board: Board) -> int:
    """``build --model``: record, profile, fit, board (:mod:`experiments.competition.own_board`), saying up front how
    long and after each step how long it took."""
    if args.traces or args.benchmark:
        raise PLDError("--model records its own benchmark: give --model or --traces/--benchmark, not both")
    check_prompts(args.prompts)
    if args.max_new_tokens < 1:
        raise PLDError("--max-new-tokens must be >= 1")
    target = decoding.load_model(args.model)
    plan = OwnBoard.plan(target, board.folder, args.prompts, args.max_new_tokens)
    print(plan.estimate(peers=not args.no_peers, scored=0 if args.rerun else plan.scored(board)), flush=True)
    timed("1/4 record", plan.record)
    timed("2/4 cost profile", plan.profile)
    print(timed("3/4 acceptance fit", plan.fit))
    return timed("4/4 board", lambda: _build(args, board, plan.traces))


def _build(args, board: Board, folder: Path) -> int:
    limits = _limits(args)
    landlock = not args.no_landlock
    sets, info, sampled = _benchmark(args, folder, sampled=True)
    model = traces_model(sets)
    t0 = time.perf_counter()
    oracle = ensure_oracle(board, sets, info, sampled)
    print(f"benchmark {info['hash']}: {info['cases']} cases, {info['tokens']:,} tokens in {info['folder']}")
    print(one_line(entry_of(oracle)))
    strict = args.require_isolation
    common = dict(rerun=args.rerun, landlock=landlock, require_isolation=strict, sampled=sampled)
    run_baselines(board, sets, info, limits, **common)
    if not args.no_peers:
        run_peers(board, sets, info, limits, **common)
    if args.examples:
        run_examples(board, sets, info, limits, **common)
    if args.fresh:
        if model is None:
            raise PLDError(f"the traces in {clean(portable_path(folder), 200)} are not of a packaged model, so no "
                           "fresh cases can be recorded for them: build with --fresh 0")
        seed = args.seed  # settled by _fresh_seed: never published, or an audit on a copy
        # sampled too where the public benchmark has sampled tracks: fresh cases of each of its regimes
        regimes = [Regime.from_name(name) for name in sampled]
        fresh_sets, fresh_folder = record_fresh(seed, args.fresh, model=model, regimes=regimes)
        fresh_sampled = sampled_sets(fresh_folder)
        fresh = fresh_info(fresh_sets, fresh_folder, seed, args.fresh, fresh_sampled)
        print(f"fresh benchmark {fresh['hash']}: {fresh['cases']} cases (seed {seed}); scoring every entry again")
        run_fresh(board, info, fresh_sets, fresh, limits, landlock=landlock, require_isolation=strict,
                  fresh_sampled=fresh_sampled)
    if args.verify:
        _verify(args, board, sets, info, limits, landlock)
    shown, shown_info = shown_entries(board, info["hash"])
    paths = write_outputs(shown, shown_info, views_folder(board, shown_info), wandb_mode=args.wandb)
    print(f"built in {time.perf_counter() - t0:.1f} s: " + ", ".join(str(p) for p in paths))
    return 0


def _verify(args, board: Board, sets, info: dict, limits, landlock: bool) -> None:

    if args.verify_top < 1 or args.verify_prompts < 1 or args.verify_tokens < 1:
        raise PLDError("--verify-top, --verify-prompts and --verify-tokens must be >= 1")
    top = ranked(board.entries(info["hash"]), PUBLIC).ranked[: args.verify_top]
    target = decoding.load_model(traces_model(sets))
    prompts = verify_prompts(sets, args.verify_prompts)
    results = verify_entries(top, target, prompts, args.verify_tokens, limits, [board.folder], landlock,
                             args.require_isolation, board=board, public=bool(info.get("public")))
    with board.editing() as data:
        for e in data["entries"]:
            bench, name = key_of(e)
            if bench == info["hash"] and name in results:
                e["verify"] = results[name]
    for name, r in results.items():
        if "speedup" in r:
            print(f"verify {clean(name, 48)}: measured {r['speedup']:.2f}x over none, identical output: {r['identical']}")
        else:
            print(f"verify {clean(name, 48)}: {clean(r.get('failed') or r.get('skipped'), 500)}")


def cmd_check_fresh(args, board: Board) -> int:
    """Regenerate the prompts of the board's fresh cases (its seed, size and generator version),
    record them on the embedded model, and compare their benchmark hash with the board's."""
    import tempfile

    from experiments.benchmarks.fresh import FRESH_VERSION
    from experiments.competition.entries import fresh_link

    public = _named_benchmark(args, board)
    link = fresh_link(board, public)
    if link is None:
        raise PLDError(f"the board in {board.folder} links no fresh cases to benchmark {clean(public, 64)}; "
                       "an official `leaderboard.py build` makes them")
    if str(link.get("version")) != FRESH_VERSION:
        raise PLDError(f"the board's fresh cases come from generator v{clean(link.get('version'), 20)}, "
                       f"this checkout has v{FRESH_VERSION}: check them out at the board's git sha")
    if not isinstance(link.get("seed"), int) or not isinstance(link.get("per_task"), int):  # typed at load
        raise PLDError(f"the board in {board.folder} links fresh cases to benchmark {clean(public, 64)} without "
                       "their seed and size: they cannot be made again")
    seed, per_task = link["seed"], link["per_task"]
    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="pld-fresh-check-"))
    model = _board_model(board, public)
    # in every regime a build records them in (its public benchmark's sampled tracks'): prompts decode
    # side by side, and a case's last bits depend on the batch it decoded in, so the same batches
    regimes = [Regime.from_name(name) for name in sampled_sets(shipped_folder(model))]
    sets, folder = record_fresh(seed, per_task, folder=folder, model=model, regimes=regimes)
    fresh = fresh_info(sets, folder, seed, per_task)
    oracle = ensure_oracle(Board(folder / "board"), sets, fresh)
    print(f"seed {seed}, {fresh['cases']} cases recorded in {folder}: benchmark {fresh['hash']}, oracle {oracle['score']:.3f}x")
    if fresh["hash"] != link["hash"]:
        print(f"DIFFERENT from the board's fresh benchmark {clean(link['hash'], 64)} (another model build, torch "
              f"or Python than the board's; the board records Python {clean(link.get('python'), 20)})")
        return 1
    print(f"identical to the board's fresh benchmark {link['hash']}: the cases it was ranked by; "
          f"`leaderboard.py build --seed {seed} --fresh {per_task}` audits every entry on them again (on a copy "
          "of the board: a published seed ranks nothing again)")
    return 0


def _board_model(board: Board, bench: str) -> str:
    """The packaged model a benchmark on the board was recorded on (the embedded one unless its
    info names another)."""
    info = board.load()["benchmarks"].get(bench) or {}
    models = info.get("model") if isinstance(info, dict) else None
    named = packaged_name(str(models[0])) if isinstance(models, list) and len(models) == 1 else None
    return named or EMBEDDED_NAME


def cmd_figures(args, board: Board) -> int:
    """Rewrite (or with --check, compare) the board's figures in README.md and docs/*.md."""
    root = Path(args.root) if args.root else ROOT
    differ = update_files(board, root, check=args.check)
    source = clean(portable_path(board.path), 200)
    for where, name in differ:  # one line per region
        print(f"{where}: figures:{name} differs from {source} (`leaderboard.py figures` renders it)" if args.check
              else f"{where}: figures:{name} rewritten from {source}")
    if not differ:
        print(f"{count_regions(root)} figures regions agree with {source}")
    return 1 if args.check and differ else 0


COMMANDS = {"submit": cmd_submit, "show": cmd_show, "build": cmd_build, "render": cmd_render,
            "check-fresh": cmd_check_fresh, "figures": cmd_figures}


if __name__ == "__main__":
    sys.exit(main())
