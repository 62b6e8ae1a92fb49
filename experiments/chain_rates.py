"""How often a copied chain's node is right, by depth and by the length of the match it was copied after:
what ``recycling``'s priors for long matches were chosen from (``docs/acceptance.md``).

    python experiments/chain_rates.py                                  # both shipped benchmarks, pooled
    python experiments/chain_rates.py --traces DIR [--traces DIR2]     # trace folders of your own

At every position of every case, the suffix automaton's chain (the most recent occurrence's
continuation, round a loop, up to 63 tokens) is checked against what the model went on to write:
P(node d right | nodes 0..d-1 right), per match-length range. Every position counts, not only the
ones a decoding step starts at, so the rates run higher than a replay's (a step starts after a
rejection, where matches are shorter); compare ranges with each other, not with a replay. Several
folders are pooled with each weighing the same (its checks of first nodes scaled to one).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from a checkout

from decoding.progress import progress_bar  # noqa: E402
from experiments.benchmarks.traces import load_trace_sets, shipped_benchmarks  # noqa: E402
from experiments.cli import ArgumentParser, guarded  # noqa: E402
from experiments.reporting.tables import render  # noqa: E402
from lookup.drafters.recycling import LONG_EDGES  # noqa: E402
from lookup.acceptance.learner import BUCKET_EDGES  # noqa: E402
from lookup.registry import create  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402

#: where a match-length range starts: the shared bucketing's edges, then recycling's long levels
EDGES = (0, 1, *BUCKET_EDGES, *LONG_EDGES)
#: the deepest node checked (a GPU track's budget)
DEPTH = 63
#: the depths the table shows
SHOWN = (0, 1, 2, 4, 8, 16, 32, 62)


def chain_checks(sets, edges: Sequence[int] = EDGES, depth: int = DEPTH, bar=None) -> tuple[np.ndarray, np.ndarray]:
    """(checks, hits) per match-length range and depth over every position of every case of ``sets``:
    ``[len(edges), depth]`` each; range r holds matches of ``edges[r]`` tokens up to the next edge."""
    checks, hits = np.zeros((len(edges), depth)), np.zeros((len(edges), depth))
    for trace_set in sets:
        for case in trace_set.cases:
            drafter = create("suffix-automaton", max_tokens=depth, length_rule=None)
            drafter.reset(list(case.prompt))
            out = np.asarray(case.output, dtype=np.int64)
            for t in range(len(out)):
                chain = drafter.propose(depth).tokens[: len(out) - t]
                if len(chain):
                    r = int(np.searchsorted(edges, drafter.match_length(), side="right")) - 1
                    wrong = np.flatnonzero(chain != out[t : t + len(chain)])
                    right = int(wrong[0]) if len(wrong) else len(chain)  # nodes 0..right-1 right
                    checks[r, : min(right + 1, len(chain))] += 1
                    hits[r, :right] += 1
                drafter.extend(out[t : t + 1].tolist())
            if bar is not None:
                bar.update(1)
    return checks, hits


def table(checks: np.ndarray, hits: np.ndarray, edges: Sequence[int] = EDGES) -> str:
    """One row per match-length range: its share of first-node checks, then P(right | before right) per shown depth."""
    rows = []
    total = checks[:, 0].sum()
    for r, lo in enumerate(edges):
        if not checks[r, 0]:
            continue
        span = f"{lo}+" if r == len(edges) - 1 else (f"{lo}" if edges[r + 1] == lo + 1 else f"{lo}-{edges[r + 1] - 1}")
        rates = [round(hits[r, d] / checks[r, d], 3) if checks[r, d] else None for d in SHOWN if d < checks.shape[1]]
        rows.append((span, round(checks[r, 0] / total, 3), *rates))
    return render(("match", "share", *(f"d={d}" for d in SHOWN if d < checks.shape[1])), rows)


@guarded
def main(argv: Sequence[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", action="append", metavar="DIR",
                    help="a trace folder (repeatable; default: every shipped benchmark)")
    args = ap.parse_args(argv)
    folders = [Path(f) for f in args.traces] if args.traces else list(shipped_benchmarks().values())
    loaded = []
    for folder in folders:
        if not folder.is_dir():
            raise PLDError(f"--traces {folder}: no such folder")
        sets = [s for s in load_trace_sets(folder) if s.cases]
        if not sets:
            raise PLDError(f"--traces {folder}: no traces there")
        loaded.append(sets)
    pooled_checks, pooled_hits = np.zeros((len(EDGES), DEPTH)), np.zeros((len(EDGES), DEPTH))
    with progress_bar(total=sum(len(s.cases) for sets in loaded for s in sets), desc="cases", unit="case") as bar:
        for sets in loaded:
            checks, hits = chain_checks(sets, bar=bar)
            weight = 1.0 / max(checks[:, 0].sum(), 1.0)  # each folder weighs the same
            pooled_checks += weight * checks
            pooled_hits += weight * hits
    print(f"P(chain node right | the ones before right), every position, pooled over {len(folders)} folder(s): "
          + ", ".join(f.name for f in folders))
    print(table(pooled_checks, pooled_hits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
