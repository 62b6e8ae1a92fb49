"""Compare drafters side by side on the embedded model (or yours), against transformers.

    python experiments/compare.py                       # one prompt of every task, default methods
    python experiments/compare.py --drafters none,unfold --prompts 3 --max-new-tokens 256
    python experiments/compare.py --temperature 0.7 --top-p 0.9 --seed 1
    python experiments/compare.py --replay             # every recorded trace, no model: under a minute
    python experiments/compare.py --replay --quick     # one prompt of every task: seconds
    python experiments/compare.py --replay --csv rows.csv   # the rows as a table too (or --parquet PATH)

Every (prompt, method) result is appended to a JSONL file as soon as it is measured; a rerun
of the same configuration skips what is already there while the code that made it is unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

from experiments.cli import ArgumentParser, add_prompt_file_options, add_traces_options, guarded, quiet_libraries  # noqa: E402
from lookup.specs import parse_list  # noqa: E402

import lookup  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402
from pldcore.setting import Regime  # noqa: E402
from experiments.reporting.export import FORMATS, check_writable  # noqa: E402
from experiments.reporting.plots import plot_folder, write_plots  # noqa: E402
from experiments.reporting.summary import oracle_speedups, oracle_times  # noqa: E402
from experiments.reporting.tables import oracle_line, report  # noqa: E402
from experiments.reporting.wandb_log import experiment_label, log_comparison, resolve_mode  # noqa: E402
from experiments.running.live import Comparison  # noqa: E402
from experiments.running.methods import parse_method  # noqa: E402
from experiments.running.replay import ReplayComparison, replay_methods, replayable_spec  # noqa: E402
from experiments.running.tracks import profile_arg, track_regime  # noqa: E402

DEFAULT_METHODS = "hf-greedy,hf-lookup,none,unfold"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--drafters", default=None,
                   help=f"comma-separated methods: drafter names (with :key=value params) or hf-greedy, hf-lookup "
                        f"(default: {DEFAULT_METHODS} plus every other registered drafter)")
    p.add_argument("--tasks", default=None, help="comma-separated task suites (default: all embedded)")
    add_prompt_file_options(p)
    p.add_argument("--prompts", type=int, default=None,
                   help="prompts per task (default: 1 live; every case with --replay, as traces.py replay)")
    p.add_argument("--full", action="store_true", help="run every prompt of every task")
    p.add_argument("--quick", action="store_true",
                   help="one prompt per task (5 cases): the default live, and a replay's quick subset")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--model", default=None,
                   help="a packaged model (gemma-3-270m-q4_k_m), a .gguf file, a local folder or a hub name "
                        "(default: the embedded SmolLM2-135M)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", default="results", help="folder for results JSONL (default: results/)")
    p.add_argument("--fresh", action="store_true", help="ignore earlier rows of this configuration")
    p.add_argument("--replay", action="store_true",
                   help="replay drafters against recorded traces (experiments/traces.py record; with --temperature, traces sampled at it) instead of "
                        "running the model: tau and estimated speedup in seconds")
    p.add_argument("--stream", action="store_true",
                   help="serve the cases as one stream of requests, so that drafters that keep a history across requests "
                        "(adaptive:history=true) learn from earlier cases only; live, each drafter runs every case again")
    add_traces_options(p, "the shipped benchmark of the embedded model; either one implies --replay")
    p.add_argument("--profile", default=None, metavar="NAME|FILE",
                   help="--replay under this cost profile, planned and priced: a track (cpu, flat, h100-8b; sampled at "
                        "temperature 1: cpu-t1, h100-8b-t1; a server at a batch: h100-8b-b32, h100-8b-b128), any "
                        "profile of docs/hardware.md (drafts of up to 63 nodes), or a JSON file (default: the traces')")
    p.add_argument("--wandb", default=None, choices=["online", "offline", "off"],
                   help="W&B logging (default: online when logged in, offline when WANDB_MODE=offline, else off; "
                        "never blocks; runs go under $WANDB_DIR when set, else the results folder)")
    p.add_argument("--csv", default=None, metavar="PATH", help="also write this comparison's rows to a CSV file")
    p.add_argument("--parquet", default=None, metavar="PATH",
                   help="also write this comparison's rows to a Parquet file (needs pyarrow or pandas)")
    return p


def resolve_case_count(args: argparse.Namespace) -> None:
    """One rule with ``traces.py replay``: a replay runs every case unless ``--quick`` or ``--prompts``
    says otherwise (the shipped benchmark's 400 cases replay in under a minute on a 2-core CPU); a
    live run, which takes minutes a case, runs one prompt per task unless told more."""
    if args.quick and (args.full or args.prompts is not None):
        raise PLDError("--quick is one prompt per task: give it without --full and --prompts")
    if args.prompts is None:
        args.full = args.full or (args.replay and not args.quick)
        args.prompts = 1


def use_track_regime(args: argparse.Namespace, regime: Regime) -> None:
    """A sampled track (``--profile cpu-t1``) replays its regime's traces: ``--temperature`` and the rest
    are the track's unless given otherwise, which is refused in one line."""
    if regime.greedy:
        return
    given = Regime(args.temperature, args.top_k, args.top_p)
    if not given.greedy and given != regime:
        raise PLDError(f"--profile {args.profile} is a track sampled at {regime.describe()}; --temperature and "
                       f"the rest say {given.describe()}: give one of them")
    args.temperature, args.top_k, args.top_p = regime.temperature, regime.top_k, regime.top_p


def default_methods() -> list[str]:
    base = parse_list(DEFAULT_METHODS)
    named = {lookup.canonical(m) for m in base}  # ``none`` is ``plain``: run once, under the name given
    return base + [n for n in lookup.available(peers=False) if n not in named]


@guarded
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.replay = args.replay or args.traces is not None  # traces named: nothing else to run on
    resolve_case_count(args)
    quiet_libraries()
    mode = resolve_mode(args.wandb)  # before any work: a bad value is a one-line error
    exports = {fmt: getattr(args, fmt) for fmt in FORMATS if getattr(args, fmt)}
    for fmt, path in exports.items():  # so is a missing parquet library, before the work rather than after
        check_writable(fmt, path)
    methods = parse_list(args.drafters) if args.drafters else default_methods()
    if args.replay and not args.drafters:  # traces stand in for the model: transformers' references need it
        methods = [m for m in methods if replayable_spec(m)]
    if args.profile and not args.replay:
        raise PLDError("--profile names the cost profile of a replay: give it with --replay (a live run measures its own)")
    # each spec parsed once, here: a typo fails now, before the traces load (live: before the model)
    parsed = replay_methods(methods) if args.replay else [parse_method(m) for m in methods]
    if args.replay:
        profile, budget = profile_arg(args.profile)
        use_track_regime(args, track_regime(args.profile))
        comparison = ReplayComparison.from_args(args, parsed, profile, budget)
    else:
        comparison = Comparison.from_args(args, parsed)
        print(comparison.estimate(), flush=True)  # said before the minutes it announces
    comparison.run()
    # the oracle needs the traces: known on a replay, not on a live run
    oracle, extra = None, []
    if args.replay:
        times = oracle_times((case, comparison.profile) for s in comparison.sets for case in s.cases)
        extra.append(oracle_line(times))
        oracle = oracle_speedups(times)  # the plot's estimates include the prefill: the oracle's too
    print(report(comparison, extra))
    rows = list(comparison.rows.values())
    for fmt, path in exports.items():
        print(f"rows ({fmt}): {FORMATS[fmt](rows, path)}")
    plots = write_plots(rows, plot_folder(args.results, comparison.experiment, comparison.order), oracle=oracle,
                        busy=getattr(comparison, "busy", None))  # a live run's timings on a busy machine are marked
    if plots:
        print(f"plots: {', '.join(str(p) for p in plots)}")
    log_comparison(rows, mode=mode, group=f"{experiment_label(comparison.config)}-{comparison.experiment}",
                   plots=plots, out_dir=Path(args.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
