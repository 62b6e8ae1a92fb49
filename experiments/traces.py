"""Record runs of plain decoding once (greedy or sampled), replay any drafter against them in seconds.

    python experiments/traces.py record [--tasks summarization,...] [--prompts N | --full] [--max-new-tokens 128]
    python experiments/traces.py record --questions FILE --out DIR      # your own prompts (or --dataset FILE)
    python experiments/traces.py record --temperature 1.0 [--top-p P] [--seed S]   # sampled: a seed per case
    python experiments/traces.py list
    python experiments/traces.py profile [--remeasure | --check]   # --check: drift from the cached profile
    python experiments/traces.py replay --drafters suffix-automaton,unfold [--traces DIR] [--quick]
    python experiments/traces.py verify [--cases 10] [--traces DIR]   # are these traces this model's, here?
    python experiments/traces.py explain --drafters adaptive,voting      # where they lose time to the oracle
    python experiments/traces.py explain --profile FILE                 # ... priced by another machine's profile
    python experiments/traces.py fit-acceptance [--traces DIR]          # fit adaptive's models of acceptance

Traces live under ``$PLD_LAB_CACHE/traces/<model>/`` beside the cost profile of the model that
made them (``experiments.benchmarks.traces``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

import decoding  # noqa: E402
import lookup  # noqa: E402
from decoding.cost import (NOISY_SPREAD, REFERENCE_CONTEXT, cost_profile, is_noisy,  # noqa: E402
                           measure_cost_profile, profile_path, reference_profile)
from decoding.lossless import NUMERIC_MARGIN, SAMPLING_MARGIN  # noqa: E402
from decoding.progress import progress_bar  # noqa: E402
from experiments.benchmarks import tasks  # noqa: E402
from experiments.benchmarks.traces import (BENCHMARK_FILE, benchmark_hash, first_prompts, load_trace_sets, read_benchmark, traces_model, traces_setting,  # noqa: E402
                                          recording_folder, regime_folder, shipped_folder, write_benchmark, write_vocab)
from experiments.cli import ArgumentParser, add_prompt_file_options, add_traces_options, guarded, quiet_libraries  # noqa: E402
from experiments.reporting.plots import write_loss_plot, write_signal_plot  # noqa: E402
from experiments.reporting.tables import (LOSS_NOTES, describe_profile, format_profile, loss_notes,  # noqa: E402
                                          loss_table, render, report)
from experiments.running.cases import check_prompts, select_prompts  # noqa: E402
from experiments.running.explain import ALL, explain  # noqa: E402
from experiments.running import acceptance_fit  # noqa: E402
from experiments.running.hindsight import parse_mode as parse_hindsight_mode  # noqa: E402
from experiments.running.record import record  # noqa: E402
from experiments.running.replay import ReplayComparison, default_specs, replay_methods  # noqa: E402
from experiments.running.store import config_hash  # noqa: E402
from experiments.running.tracks import profile_arg  # noqa: E402
from experiments.running.verify import check_traces  # noqa: E402
from pldcore import fits as fits_module  # noqa: E402
from pldcore.cost import CPU_SMOLLM2, CostProfile  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402
from pldcore.setting import GREEDY, Regime  # noqa: E402
from lookup.specs import parse_list  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="decode task prompts once (greedy, or sampled: --temperature) and store the traces")
    rec.add_argument("--tasks", default=None, help="comma-separated suites (default: all embedded)")
    add_prompt_file_options(rec)
    rec.add_argument("--prompts", type=int, default=8,
                     help="prompts per task (default 8: live decoding, minutes a task on a CPU; --full for all)")
    rec.add_argument("--full", action="store_true", help="every prompt of every task")
    rec.add_argument("--max-new-tokens", type=int, default=128)
    rec.add_argument("--model", default=None)
    rec.add_argument("--device", default=None)
    rec.add_argument("--out", default=None, help="trace folder (default: the cache; a sampled regime in its "
                                                 "subfolder named for it, e.g. t1)")
    rec.add_argument("--temperature", type=float, default=0.0,
                     help="sample at this temperature with our exact sampler (default 0: greedy); every case gets "
                          "its own seed, drawn from --seed and its id, and stores it")
    rec.add_argument("--top-k", type=int, default=0, help="sampling: top-k (default 0: off)")
    rec.add_argument("--top-p", type=float, default=1.0, help="sampling: top-p (default 1.0: off)")
    rec.add_argument("--seed", type=int, default=0, help="sampling: the recording's seed (default 0)")
    rec.add_argument("--ship", action="store_true",
                     help="record a versioned benchmark: scored with the reference CPU profile (nothing measured), "
                          f"hashed into {BENCHMARK_FILE}; into the shipped folder unless --out")
    add_traces_options(sub.add_parser("list", help="show recorded traces"))
    prof = sub.add_parser("profile", help="measure (or show) the model's cost profile and store it with its traces")
    prof.add_argument("--remeasure", action="store_true", help="measure again even when a profile is cached")
    prof.add_argument("--check", action="store_true",
                      help="measure again and report the drift from the cached profile (the cache is left as it is)")
    prof.add_argument("--ship", action="store_true",
                      help="measure now and make it the reference profile of the model's shipped benchmark "
                           "(refused when the machine is busy); the benchmark is rehashed")
    prof.add_argument("--model", default=None)
    prof.add_argument("--device", default=None)
    rep = sub.add_parser("replay", help="replay drafters against traces")
    rep.add_argument("--drafters", default=None, help="comma-separated drafter specs (default: every registered drafter but the peers)")
    add_traces_options(rep)
    rep.add_argument("--results", default="results", help="folder for results JSONL (default: results/)")
    rep.add_argument("--fresh", action="store_true", help="replay again rows the results already hold")
    rep.add_argument("--quick", action="store_true",
                     help="one prompt per task (as compare.py --replay --quick); default: every case")
    rep.add_argument("--stream", action="store_true",
                     help="one stream of requests: drafters that keep a history across requests learn from earlier cases")
    exp = sub.add_parser("explain", help="where drafters lose time against the oracle, per task group (and a plot)")
    exp.add_argument("--drafters", default=lookup.DEFAULT_DRAFTER,
                     help=f"comma-separated drafter specs (default: {lookup.DEFAULT_DRAFTER})")
    add_traces_options(exp)
    exp.add_argument("--plot", default=None,
                     help="where to draw the plot ('' for none; default results/oracle_gap-HASH.png, HASH of the "
                          "drafters, traces, profile, --stream and --hindsight: another explain draws another file)")
    exp.add_argument("--stream", action="store_true",
                     help="one stream of requests: drafters that keep a history across requests learn from earlier cases")
    exp.add_argument("--profile", default=None, metavar="NAME|FILE",
                     help="plan and price every case under this cost profile instead of the benchmark's reference: "
                          "a named one (a board track: cpu, flat, h100-8b; or any of docs/hardware.md, with drafts "
                          "of up to 63 nodes), or a JSON file (as `traces.py profile` keeps one per machine under the "
                          "cache's profiles/ folder): the drafters and the oracle as they would fare there")
    exp.add_argument("--hindsight", default="",
                     help="also each drafter with hindsight of the answer, per mode: gate (no draft whose first token "
                          "is wrong), trim (only the accepted part), cut (the best prefix of it): ceilings, not drafters; "
                          "signal:AUC (adaptive drafters): a noisy reading of each node's acceptance, of that AUC alone, "
                          "added to the drafter's own estimates")
    fit = sub.add_parser("fit-acceptance", aliases=["fit-first-token"],
                         help="fit adaptive's models of acceptance (lookup/acceptance/first_token.py, lookup/acceptance/later_nodes.py) "
                              "on traces, held-out check included; --write writes the fit file")
    add_traces_options(fit)
    fit.add_argument("--write", nargs="?", const=True, default=None, metavar="PATH",
                     help="write the fit file (default: pldcore/fits/<model>.<benchmark hash>.json, "
                          "where adaptive finds the fit of its profile's model)")
    ver = sub.add_parser("verify", help="re-decode recorded cases on the model here and compare them token by token")
    ver.add_argument("--cases", type=int, default=10, help="cases to re-decode, one per task in turn (default 10)")
    add_traces_options(ver)
    ver.add_argument("--model", default=None)
    ver.add_argument("--device", default=None)
    return p


@guarded
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries()
    return COMMANDS[args.command](args)


def cmd_list(args) -> int:
    for s in load_trace_sets(args.traces):
        print(f"{s.path}  {len(s.cases)} cases, {s.tokens} tokens")
    return 0


def cmd_replay(args) -> int:
    specs = parse_list(args.drafters or "") or default_specs()
    sets = load_trace_sets(args.traces)
    if args.quick:  # the one quick subset compare.py --replay --quick replays too
        sets = first_prompts(sets, 1)
    comparison = ReplayComparison(sets, specs, args.results, fresh=args.fresh, stream=args.stream)
    comparison.run()
    print(report(comparison))
    return 0


def cmd_explain(args) -> int:
    # every mistake in the arguments fails before the traces load and any bar is drawn
    profile, budget = profile_arg(args.profile)
    specs = parse_list(args.drafters)
    if not specs:
        raise PLDError("--drafters is empty")
    replay_methods(specs)  # an unknown drafter, parameter or value: one line, with close names
    modes = parse_list(args.hindsight)
    for mode in modes:
        parse_hindsight_mode(mode)
    sets = load_trace_sets(args.traces)
    runs = [(spec, None) for spec in specs] + [(spec, mode) for spec in specs for mode in modes]
    losses = {}
    total = len(runs) * sum(len(s.cases) for s in sets)
    with progress_bar(total, "explain") as bar:
        for spec, mode in runs:
            label = spec if mode is None else f"{spec} [hindsight: {mode}]"
            losses[label] = explain(sets, spec, profile, progress=bar.update, stream=args.stream, hindsight=mode,
                                    draft_budget=budget)
    priced = traces_setting(sets, profile).profile.model + (f", profile {args.profile}" if profile else "")
    for spec, by_group in losses.items():
        print(f"\n{spec}: the gap to the cost-aware oracle, by part (decoding phase, {priced})")
        print(loss_table(by_group))
    notes = dict.fromkeys(note for by_group in losses.values() for note in loss_notes(by_group))
    print("", *notes, LOSS_NOTES, sep="\n")
    print("missed: no draft where the oracle drafted; wrong: nothing accepted though a correct run existed; "
          "short/long: accepted less/more than the oracle's best cut, or rejected draft tokens (long); "
          "beyond: past any run of the context; drafter: its own time")
    if args.plot is None:
        args.plot = default_plot(args, specs, modes)
    if args.plot:
        print(f"plot: {write_loss_plot(losses, args.plot)}")
        curves = signal_curves(runs, losses)
        if any(len(points) > 1 for points in curves.values()):
            plot = Path(args.plot)
            print(f"plot: {write_signal_plot(curves, plot.with_name(plot.stem + '_signal' + plot.suffix))}")
    return 0


def default_plot(args, specs: list[str], modes: list[str]) -> str:
    """``results/oracle_gap-HASH.png``, HASH of what the plot shows (the drafters, the traces, the
    profile, the stream, the hindsight modes): an explain of other inputs never overwrites it, the
    same explain again does."""
    folder = str(Path(args.traces).resolve()) if args.traces else "default"
    key = config_hash({"drafters": specs, "traces": folder, "profile": args.profile, "stream": bool(args.stream),
                       "hindsight": modes})
    return f"results/oracle_gap-{key}.png"


def signal_curves(runs: list[tuple[str, str | None]], losses: dict) -> dict[str, list[tuple[float, float]]]:
    """Per drafter, (first-token AUC, share of the oracle's gain) of its ``signal:AUC`` runs."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for spec, mode in runs:
        if mode is None or parse_hindsight_mode(mode)[0] != "signal":
            continue
        overall = losses[f"{spec} [hindsight: {mode}]"][ALL]
        if overall.first_token_auc is not None and overall.share_of_oracle_gain is not None:
            curves.setdefault(spec, []).append((overall.first_token_auc, overall.share_of_oracle_gain))
    return curves


def cmd_fit_acceptance(args) -> int:
    sets = load_trace_sets(args.traces)
    if not sets:
        raise PLDError("no traces to fit on: record some first (traces.py record)")
    with progress_bar(2 * sum(len(s.cases) for s in sets), "replay") as bar:
        data = acceptance_fit.collect(sets, progress=bar.update)
    first = data["context"]["first"]
    if not acceptance_fit.fittable(first):
        raise PLDError(f"too few drafts to fit ({len(first.y)} rows, all alike): record more traces")
    print(f"{len(first.y)} drafts from the context, first token accepted in {100 * first.y.mean():.1f}%")
    for fit, by_model in data.items():
        for name, rows in by_model.items():
            what = f"the {name} node{'s' if name == 'later' else ''} model, {acceptance_fit.FIT_NAMES[fit]}"
            if not acceptance_fit.fittable(rows):
                print(f"\n{what}: too few rows to fit ({len(rows.y)})")
                continue
            print(f"\n{what}: {len(rows.y)} nodes, {100 * rows.y.mean():.1f}% accepted; "
                  "AUC on the half of the cases the model was not fitted on:")
            checks = acceptance_fit.held_out(rows)
            print(render(list(checks[0]), [["" if v is None else f"{v:.3f}" if isinstance(v, float) else v
                                            for v in row.values()] for row in checks]))
    model, benchmark = acceptance_fit.model_of(sets), benchmark_hash(sets)
    fits = acceptance_fit.fits_of(data, model, benchmark, traces_setting(sets).regime)
    path = Path(args.write) if isinstance(args.write, str) else fits_module.FOLDER / fits_module.file_name(model, benchmark)
    same = path.exists() and path.read_text() == fits.to_json()
    if args.write:
        print(f"\n{'unchanged' if same else 'wrote'}: {fits.save(path)}")
    else:
        print(f"\nfitted on every case: {'the same as' if same else 'not yet in'} {path}"
              + ("" if same else " (--write writes it)"))
    return 0


def cmd_profile(args) -> int:
    target = decoding.load_model(args.model, device=args.device)
    if args.check:
        return check_profile(target)
    if args.ship:
        return ship_profile(target)
    profile = cost_profile(target, remeasure=args.remeasure, progress=True)
    folder = recording_folder(target.name)
    profile.save(folder / "profile.json")
    print(format_profile(profile))
    print(describe_profile(profile))
    print(f"saved with the traces in {folder}")
    return 0


def ship_profile(target) -> int:
    """Measure ``target``'s profile now and make it the reference profile of its shipped benchmark
    (what every score of that benchmark is priced with), rehashing the benchmark; refused when the
    measurement is noisy (the machine was busy) or the model has no shipped benchmark."""
    folder = shipped_folder(target.name)
    info = read_benchmark(folder)
    if info is None:
        raise PLDError(f"{target.name} has no shipped benchmark in {folder}: record one with `traces.py record --ship`")
    now = measure_cost_profile(target, progress=True)
    print(describe_profile(now))
    if is_noisy(now):
        print(f"not shipped: the machine was busy (repeats spread {100 * (now.spread or 0):.0f}%, load "
              f"{now.load_per_core} per core); measure again when nothing else runs")
        return 1
    reference = dataclasses.replace(now, model=f"{target.name} (reference)",
                                    host=f"{now.host}, nothing else running")
    # the traces as they hash now (checked), with the new profile: the benchmark they make
    sets = [dataclasses.replace(s, profile=reference) for s in load_trace_sets(folder)]
    kept = {k: v for k, v in info.items() if k not in ("hash", "cases", "tokens", "tasks", "profile")}
    reference.save(folder / "profile.json")
    info = write_benchmark(folder, sets, **kept)
    print(format_profile(reference))
    print(f"the reference profile of benchmark {folder.name}, now {info['hash']}: {folder / 'profile.json'}")
    for sampled in sorted(p.parent for p in folder.glob(f"*/{BENCHMARK_FILE}")):  # the model's sampled benchmarks
        held = read_benchmark(sampled) or {}
        sampled_sets = [dataclasses.replace(s, profile=reference) for s in load_trace_sets(sampled)]
        reference.save(sampled / "profile.json")
        again = write_benchmark(sampled, sampled_sets, **{k: v for k, v in held.items()
                                                            if k not in ("hash", "cases", "tokens", "tasks", "profile")})
        print(f"and of its sampled benchmark {folder.name}/{sampled.name}, now {again['hash']}")
    return 0


def _drift(then: float, now: float) -> str:
    return f"{1e3 * then:.1f} ms -> {1e3 * now:.1f} ms ({now / then - 1:+.0%})"


def check_profile(target) -> int:
    """Measure again; print how far the cached profile (and the reference) are from today's machine."""
    path = profile_path(target)
    cached = CostProfile.load(path) if path.exists() else None
    now = measure_cost_profile(target, progress=True)
    print(describe_profile(now))
    if is_noisy(now):
        print(f"this measurement is noise: the repeats spread over {100 * NOISY_SPREAD:.0f}%; "
              "check again when nothing else runs")
    shipped = _read_shipped_profile(shipped_folder(target.name))  # a second model's benchmark's reference
    reference = reference_profile(target) or shipped
    compared = [(name, p) for name, p in (("cached", cached), ("reference", reference)) if p]
    if not compared:
        print("no cached or reference profile to compare with; `traces.py profile` caches this machine's")
        return 0
    for name, p in compared:
        print(f"{name}: {describe_profile(p)}")
    rows = [[n, *(_drift(p.cost(n, REFERENCE_CONTEXT), now.cost(n, REFERENCE_CONTEXT)) for _, p in compared)]
            for n in now.sizes]
    print(f"forward time at a {REFERENCE_CONTEXT}-token context: then -> now")
    print(render(["tokens", *(name for name, _ in compared)], rows))
    return 1 if is_noisy(now) else 0


def cmd_record(args) -> int:
    if args.max_new_tokens < 1:
        raise PLDError("--max-new-tokens must be >= 1")
    check_prompts(args.prompts)
    if (args.questions or args.dataset) and not args.out:
        # the cache's folder holds the embedded suites' traces, under ids a user's file may reuse
        raise PLDError("recording your own prompts needs a folder of their own: --out DIR")
    regime = recording_regime(args)
    suites = _suites_to_record(args)
    target = decoding.load_model(args.model, device=args.device)
    shipped = shipped_folder(target.name)
    folder = Path(args.out) if args.out else regime_folder(shipped if args.ship else recording_folder(target.name), regime)
    if not args.ship and folder.resolve() in (shipped.resolve(), regime_folder(shipped, regime).resolve()):
        raise PLDError(f"{folder} is the shipped benchmark; record elsewhere (--out), or rebuild it with --ship")
    folder.mkdir(parents=True, exist_ok=True)
    # a shipped benchmark is scored with the reference profile, so that boards from any machine agree
    # (a sampled one with its model's greedy benchmark's: one model, one machine, one price)
    profile = cost_profile(target, progress=True) if not args.ship else (
        reference_profile(target) or _read_shipped_profile(folder) or _read_shipped_profile(shipped) or CPU_SMOLLM2)
    if args.ship and profile is CPU_SMOLLM2 and target.name != CPU_SMOLLM2.model.split(" (")[0]:
        print(f"{target.name} has no reference profile yet: the benchmark is priced with SmolLM2's until "
              f"`traces.py profile --model {target.name} --ship` measures one (on a quiet machine)")
    profile.save(folder / "profile.json")
    vocab = target.vocab()  # each id's text, for drafters that ask for it in replay
    if vocab is not None:
        write_vocab(folder, vocab, target.name)
    total = sum(len(p.turns) for ps in suites.values() for p in ps)
    t0 = time.perf_counter()
    with progress_bar(total, "record") as bar:
        for name, prompts in suites.items():
            record(target, name, prompts, args.max_new_tokens, folder, progress=bar, regime=regime, seed=args.seed)
    print(f"traces in {folder} ({regime.describe()}{'' if regime.greedy else f', seed {args.seed}'}; "
          f"{time.perf_counter() - t0:.0f} s)")
    if args.ship:
        sampled = {} if regime.greedy else {"regime": regime.name, "seed": args.seed}
        info = write_benchmark(folder, load_trace_sets(folder), model=target.name,
                               max_new_tokens=args.max_new_tokens, **sampled)
        print(f"benchmark {info['hash']}: {info['cases']} cases, {info['tokens']} tokens")
    return 0


def recording_regime(args) -> Regime:
    """``record``'s regime from its sampling options, checked before any model loads (one line each)."""
    if args.temperature == 0:
        if args.top_k or args.top_p != 1.0:
            raise PLDError("--top-k and --top-p apply to sampling: give --temperature T > 0 with them")
        return GREEDY
    if not math.isfinite(args.temperature) or args.temperature < 0:
        raise PLDError(f"--temperature must be a finite number >= 0, got {args.temperature}")
    if not 0 <= args.seed < 2**63:
        raise PLDError(f"--seed must be an integer in [0, 2**63), got {args.seed}")
    return Regime(args.temperature, args.top_k, args.top_p)


def _read_shipped_profile(folder: Path) -> CostProfile | None:
    """The reference profile a shipped benchmark holds already (kept when it is recorded further)."""
    path = folder / "profile.json"
    return CostProfile.load(path) if path.exists() and read_benchmark(folder) is not None else None


def _suites_to_record(args) -> dict[str, list[tasks.Prompt]]:
    """The prompts to record, per trace file: one file per embedded suite, or per category of the
    user's own prompts (``--questions`` / ``--dataset``), named for it."""
    if not (args.questions or args.dataset):
        names = parse_list(args.tasks) if args.tasks else tasks.available_tasks()
        return {name: tasks.load_task(name, None if args.full else args.prompts) for name in names}
    suites: dict[str, list[tasks.Prompt]] = {}
    for prompt in select_prompts(args):
        # a category may hold anything a file name must not; the cases keep it whole
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", prompt.category).strip("-.") or "custom"
        suites.setdefault(stem, []).append(prompt)
    return suites


def cmd_verify(args) -> int:
    """Exit 1 when a case parts from its trace at a margin wider than float noise."""
    sets = load_trace_sets(args.traces)
    target = decoding.load_model(args.model or traces_model(sets), device=args.device)
    checks = check_traces(target, sets, args.cases)
    rows = [[c.case, c.tokens, "yes" if c.identical else "NO",
             None if c.identical else c.mismatch.position, None if c.identical else c.mismatch.margin,
             "" if c.identical else ("float noise" if c.mismatch.is_numeric else "differs")] for c in checks]
    sampled = not traces_setting(sets).regime.greedy
    margin, limit = ("sampling margin", SAMPLING_MARGIN) if sampled else ("top-2 margin", NUMERIC_MARGIN)
    print(render(["case", "tokens", "identical", "first difference", margin, "verdict"], rows))
    same = sum(c.identical for c in checks)
    wide = [c for c in checks if not c.identical and not c.mismatch.is_numeric]
    print(f"\n{same} of {len(checks)} cases token-identical to their traces on {target.name} ({target.device}); "
          f"{len(checks) - same - len(wide)} part at a {margin} within float noise (<= {limit:g}), "
          f"{len(wide)} beyond it")
    return 1 if wide else 0


COMMANDS = {"record": cmd_record, "list": cmd_list, "profile": cmd_profile, "replay": cmd_replay, "explain": cmd_explain,
            "fit-acceptance": cmd_fit_acceptance, "fit-first-token": cmd_fit_acceptance,
            "verify": cmd_verify}


if __name__ == "__main__":
    sys.exit(main())
