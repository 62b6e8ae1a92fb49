"""Record greedy runs once, replay any drafter against them in seconds.

    python experiments/traces.py record [--tasks summarization,...] [--prompts N | --full] [--max-new-tokens 128]
    python experiments/traces.py list
    python experiments/traces.py replay --drafters suffix-automaton,unfold [--traces DIR]

A trace file holds, per case, the prompt ids, the greedy output ids and the per-step forward
times of plain decoding (gzip JSONL, one gzip member per case so an interrupted recording
resumes). Files live under ``$PLD_LAB_CACHE/traces/<model>/<task>-n<max_new_tokens>.jsonl.gz``,
beside the cost profile of the model that made them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.cli import guarded, parse_list, quiet_libraries  # noqa: E402
from lookup.cost import CostProfile  # noqa: E402
from lookup.errors import PLDError  # noqa: E402


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
    from decoding.loading import cache_dir

    return cache_dir() / "traces"


def model_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def trace_file(folder: Path, task: str, max_new_tokens: int) -> Path:
    return folder / f"{task}-n{max_new_tokens}.jsonl.gz"


def read_cases(path: Path) -> list[TraceCase]:
    """All complete cases of a trace file; a member cut short by a crash is dropped."""
    if not path.exists():
        return []
    cases, data = [], path.read_bytes()
    while data:  # one gzip member per case: decompress them one by one
        member = zlib.decompressobj(wbits=31)
        try:
            text = member.decompress(data)
        except zlib.error:
            break
        if not member.eof:  # truncated tail
            break
        data = member.unused_data
        for line in text.decode().splitlines():
            try:
                cases.append(TraceCase(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
    return cases


def append_case(path: Path, case: TraceCase) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
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
    if profile_file.exists():
        profile = CostProfile.load(profile_file)
    else:  # a hand-made trace folder: fall back to the reference CPU profile
        from lookup.cost import CPU_SMOLLM2 as profile
    sets = []
    for path in files:
        task = path.name.split("-n")[0]
        sets.append(TraceSet(path, task, read_cases(path), profile))
    return sets


def default_folder() -> Path:
    from decoding.loading import EMBEDDED_NAME

    return traces_root() / model_key(EMBEDDED_NAME)


# -- recording ---------------------------------------------------------------------------
def record(target, task: str, prompts: Sequence, max_new_tokens: int, folder: Path, progress=None) -> Path:
    """Greedy-decode every turn of ``prompts`` not yet in the trace file; returns the file."""
    import decoding
    import lookup
    from experiments.runner import conversation_cases

    path = trace_file(folder, task, max_new_tokens)
    done = {c.case: c for c in read_cases(path)}

    def answer(case) -> list[int]:
        if case.id not in done:
            out = decoding.generate(target, case.ids, lookup.create("none"), max_new_tokens)
            done[case.id] = TraceCase(
                case.id, case.category, case.turn, case.ids, out.tokens, [s.forward_s for s in out.stats.steps],
                target.name, target.vocab_size, sorted(target.eos_token_ids), max_new_tokens,
            )
            append_case(path, done[case.id])
        if progress is not None:
            progress.update()
        return done[case.id].output

    for prompt in prompts:
        for case in conversation_cases(target, prompt, answer):
            pass  # conversation_cases calls answer() for each turn
    return path


# -- replaying ---------------------------------------------------------------------------
def replay_case(case: TraceCase, drafter, profile: CostProfile, draft_budget: int = 32):
    """Run ``drafter`` against one trace through the live loop; returns the GenerationResult."""
    import decoding
    from decoding.trace_target import TraceTarget

    target = TraceTarget(case.prompt, case.output, case.vocab_size, case.eos, profile)
    # eos is honoured by the loop itself; a trace that ended by length stops at its length
    return decoding.generate(target, case.prompt, drafter, max_new_tokens=len(case.output), draft_budget=draft_budget)


# -- CLI ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="greedy-decode task prompts once and store the traces")
    rec.add_argument("--tasks", default=None, help="comma-separated suites (default: all embedded)")
    rec.add_argument("--prompts", type=int, default=8, help="prompts per task (default 8)")
    rec.add_argument("--full", action="store_true", help="every prompt of every task")
    rec.add_argument("--max-new-tokens", type=int, default=128)
    rec.add_argument("--model", default=None)
    rec.add_argument("--device", default=None)
    rec.add_argument("--out", default=None, help="trace folder (default: the cache)")
    sub.add_parser("list", help="show recorded traces").add_argument("--traces", default=None)
    prof = sub.add_parser("profile", help="measure (or show) the model's cost profile and store it with its traces")
    prof.add_argument("--remeasure", action="store_true", help="measure again even when a profile is cached")
    prof.add_argument("--model", default=None)
    prof.add_argument("--device", default=None)
    rep = sub.add_parser("replay", help="replay drafters against traces")
    rep.add_argument("--drafters", default=None, help="comma-separated drafter specs (default: all)")
    rep.add_argument("--traces", default=None, help="trace folder (default: the embedded model's)")
    return p


@guarded
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries()
    if args.command == "record":
        return _record(args)
    if args.command == "profile":
        return _profile(args)
    if args.command == "list":
        for s in load_trace_sets(args.traces):
            print(f"{s.path}  {len(s.cases)} cases, {s.tokens} tokens")
        return 0
    from experiments.replay import ReplayComparison, default_specs

    comparison = ReplayComparison(load_trace_sets(args.traces), parse_list(args.drafters or "") or default_specs())
    comparison.run()
    print(comparison.report())
    return 0


def _profile(args) -> int:
    import decoding
    from decoding.cost import cost_profile

    target = decoding.load_model(args.model, device=args.device)
    profile = cost_profile(target, remeasure=args.remeasure, progress=True)
    folder = traces_root() / model_key(target.name)
    profile.save(folder / "profile.json")
    print(format_profile(profile))
    print(f"saved with the traces in {folder}")
    return 0


def format_profile(profile: CostProfile) -> str:
    """Forward ms by size (rows) and context (columns), each with its multiple of one token."""
    contexts = profile.contexts or (None,)
    head = "tokens " + "".join(f"{'ctx ' + str(c) if c else 'forward':>20}" for c in contexts)
    lines = [head]
    for n in profile.sizes:
        cells = (f"{1e3 * profile.cost(n, c):8.1f} ms ({profile.relative(n, c):.2f}x)" for c in contexts)
        lines.append(f"{n:>6} " + "".join(f"{cell:>20}" for cell in cells))
    if profile.prefill:
        lines.append("prefill" + "".join(f"{1e3 * p:17.1f} ms" for p in profile.prefill))
    return "\n".join(lines)


def _record(args) -> int:
    from tqdm import tqdm

    import decoding
    from decoding.cost import cost_profile
    from experiments import tasks

    if args.max_new_tokens < 1:
        raise PLDError("--max-new-tokens must be >= 1")
    names = parse_list(args.tasks) if args.tasks else tasks.available_tasks()
    suites = {name: tasks.load_task(name, None if args.full else args.prompts) for name in names}
    target = decoding.load_model(args.model, device=args.device)
    folder = Path(args.out) if args.out else traces_root() / model_key(target.name)
    folder.mkdir(parents=True, exist_ok=True)
    profile = cost_profile(target, progress=True)
    profile.save(folder / "profile.json")
    total = sum(len(p.turns) for ps in suites.values() for p in ps)
    t0 = time.perf_counter()
    with tqdm(total=total, desc="record", unit="case") as bar:
        for name, prompts in suites.items():
            record(target, name, prompts, args.max_new_tokens, folder, progress=bar)
    print(f"traces in {folder} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
