"""Your own model's board in one command: ``leaderboard.py build --model NAME_OR_GGUF``.

    plan = OwnBoard.plan(target, folder, prompts=8, max_new_tokens=128)   # what is left, and how long
    print(plan.estimate())
    plan.record(); plan.profile(); plan.fit()                             # then the board is built

Four steps, each resumable (a step done is skipped when the command runs again): record the
model's greedy traces of the embedded task suites into ``<board>/traces/`` (cases already recorded
are kept); measure its cost profile on this machine (cached per model and device; a busy machine
does not measure where a profile stands in: :func:`decoding.cost.cost_profile`), kept beside the
traces so that the board prices every entry under it; fit ``adaptive``'s models of acceptance on the
traces (``<board>/traces/fits.json``, which :func:`experiments.benchmarks.traces.traces_setting`
hands every drafter replayed on them; too few drafts to fit: the shipped fit stands); then the board
(``leaderboard.py build --traces <board>/traces``: the oracle, the baselines, the peers and the GPU
tracks, into ``<board>/``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from decoding.cost import cost_profile
from decoding.progress import progress_bar
from experiments.benchmarks import tasks
from experiments.benchmarks.traces import (FITS_FILE, benchmark_hash, load_trace_sets, model_key, read_cases,
                                          trace_file, write_vocab)
from experiments.running.live import estimate_seconds, time_one_token
from experiments.running.record import record
from pldcore.cost import CostProfile

#: a cost profile's measurement, when one is taken (about two minutes on a quiet 2-core CPU)
PROFILE_S = 120.0
#: a board build's seconds per entry (starting its sandboxes, one per track: 59 s for 9 entries of a
#: 5-case slice on the busy 2-core dev box, 2026-12-06) and per entry and case (the committed board's
#: entries took 6-26 s, 18 s typically, for the CPU track's 400 cases; three tracks)
BUILD_S_PER_ENTRY, BUILD_S_PER_CASE = 6.0, 0.14
#: entries a board replays besides the oracle: the baselines, and the peers unless left out
ENTRIES, PEERS = 9, 9


def default_board(model: str) -> Path:
    """Where an own model's board goes unless ``--board`` says: ``results/boards/<model>/`` (results/
    is the scratch folder git ignores; the committed board is never touched)."""
    return Path("results") / "boards" / model_key(model)


@dataclass
class OwnBoard:
    """The steps of one model's board, and what is left of them."""

    target: object  # the loaded decoding.ModelTarget
    folder: Path  # the board's folder; its traces in folder / "traces"
    suites: dict[str, list[tasks.Prompt]]
    max_new_tokens: int

    @classmethod
    def plan(cls, target, folder: Path, prompts: int, max_new_tokens: int) -> "OwnBoard":
        suites = {name: tasks.load_task(name, prompts) for name in tasks.available_tasks()}
        return cls(target, Path(folder), suites, max_new_tokens)

    @property
    def traces(self) -> Path:
        return self.folder / "traces"

    def cases(self) -> int:
        return sum(len(p.turns) for ps in self.suites.values() for p in ps)

    def to_record(self) -> list[int]:
        """Each case not yet recorded, by its prompt's length (roughly: a later turn's holds the
        earlier turns and their answers)."""
        left = []
        for name, prompts in self.suites.items():
            done = {c.case for c in read_cases(trace_file(self.traces, name, self.max_new_tokens))}
            for prompt in prompts:
                held = 0
                for turn, text in enumerate(prompt.turns, 1):
                    held += len(self.target.chat_ids(text, system=prompt.system))
                    case = prompt.id if len(prompt.turns) == 1 else f"{prompt.id}#{turn}"
                    if case not in done:
                        left.append(held)
                    held += self.max_new_tokens
        return left

    def scored(self, board) -> int:
        """Entries of these traces' benchmark the board holds already (none while cases are left to record)."""
        if self.to_record():
            return 0
        return len(board.entries(benchmark_hash(load_trace_sets(self.traces))))

    def estimate(self, peers: bool = True, scored: int = 0) -> str:
        """One line, before the work: the steps left and roughly how long each takes here now (``scored``:
        entries the board holds already, the oracle among them)."""
        from decoding.cost import profile_path

        left = self.to_record()
        forward = time_one_token(self.target)
        profile = CostProfile.load(profile_path(self.target)) if profile_path(self.target).exists() else None
        priced = profile or _flat_guess(forward)
        record_s = estimate_seconds(left, [False] * len(left), self.max_new_tokens, forward, priced)
        profile_s = 0.0 if profile is not None else PROFILE_S
        entries = max(0, ENTRIES + (PEERS if peers else 0) + 1 - scored)
        build_s = entries * (BUILD_S_PER_ENTRY + BUILD_S_PER_CASE * self.cases())
        total = record_s + profile_s + build_s
        return (f"build --model {self.target.name}: {len(left)} of {self.cases()} cases to record (up to "
                f"{self.max_new_tokens} new tokens each), about {_minutes(record_s)}; the cost profile: "
                f"{'cached' if profile is not None else f'about {_minutes(profile_s)} to measure, if the machine is quiet'}"
                f"; the acceptance fit and the board: about {_minutes(build_s)}. In all about {_minutes(total)} on "
                f"this machine now (a one-token forward takes {forward * 1e3:.0f} ms); the folder: {self.folder}")

    def record(self) -> None:
        """Step 1: the traces (cases recorded before are kept), with the vocabulary's strings."""
        self.traces.mkdir(parents=True, exist_ok=True)
        vocab = self.target.vocab()
        if vocab is not None and not (self.traces / "vocab.json.gz").exists():
            write_vocab(self.traces, vocab, self.target.name)
        with progress_bar(self.cases(), "record") as bar:  # a case recorded before counts at once
            for name, prompts in self.suites.items():
                record(self.target, name, prompts, self.max_new_tokens, self.traces, progress=bar)

    def profile(self) -> CostProfile:
        """Step 2: this machine's profile of the model (cached, or measured once), kept with the traces:
        the board prices every entry under it."""
        profile = cost_profile(self.target, progress=True)
        profile.save(self.traces / "profile.json")
        return profile

    def fit(self) -> str:
        """Step 3: ``adaptive``'s acceptance models fitted on the traces (skipped when the fit of these
        very traces is there); one line saying what was done."""
        from experiments.running import acceptance_fit
        from pldcore.fits import Fits

        sets = load_trace_sets(self.traces)
        benchmark, path = benchmark_hash(sets), self.traces / FITS_FILE
        if path.exists() and Fits.load(path).benchmark == benchmark:
            return f"fit: {path} (of these traces already)"
        with progress_bar(2 * sum(len(s.cases) for s in sets), "fit") as bar:
            data = acceptance_fit.collect(sets, progress=bar.update)
        if not all(acceptance_fit.fittable(rows) for by_model in data.values() for rows in by_model.values()):
            path.unlink(missing_ok=True)
            return ("fit: too few drafts on these traces to fit every model; the shipped fit stands (record more "
                    "prompts: --prompts)")
        acceptance_fit.fits_of(data, acceptance_fit.model_of(sets), benchmark).save(path)
        return f"fit: {path}"


def _flat_guess(forward: float) -> CostProfile:
    """A stand-in profile for an estimate before any is measured: every forward as long as one token's."""
    return CostProfile((1, 2), (forward, forward))


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def timed(step: str, what):
    """Run ``what()``, then say in one line how long step ``step`` took; returns what it returned."""
    t0 = time.perf_counter()
    out = what()
    print(f"{step}: done in {time.perf_counter() - t0:.0f} s", flush=True)
    return out
