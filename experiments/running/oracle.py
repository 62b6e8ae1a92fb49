"""The lookup oracle: the best any drafter that copies from the context could do on a trace.

    runs = oracle_runs(seq, start)                 # the longest correct run at every position
    steps = oracle_steps(case, profile)            # drafting exactly that run, every step
    plan = cost_aware_plan(case, profile)          # the cheapest way through the trace (and its values)

Both oracles know the future, which no drafter does: they bound every lookup drafter from above.
The cost-aware one also knows the cost of a forward and drafts a prefix of the longest correct
run (possibly nothing) wherever that makes the whole generation cheapest, so its estimated
speedup is the ceiling of lookup under a cost profile; :mod:`experiments.running.explain`
measures a drafter's distance from it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from decoding.generate import DRAFT_BUDGET, StepRecord
from experiments.benchmarks.traces import TraceCase
from pldcore.cost import CostProfile

#: the oracle's longest run, in tokens: the draft budget's nodes and the token before them
ORACLE_CAP = DRAFT_BUDGET + 1
#: how many runs and plans this process keeps (each a few arrays as long as an output): a build
#: prices the same cases under a few profiles for every entry (the decomposition of each entry's
#: gap, the oracle on each track, the flags), so each is computed once
MEMO_SIZE = 8192


class _Memo:
    """Results kept by key, the least recently used dropped past :data:`MEMO_SIZE` (every caller
    shares a result: what is kept holds read-only arrays)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, key: Hashable, make):
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        value = make()
        self._kept[key] = value
        if len(self._kept) > MEMO_SIZE:
            self._kept.popitem(last=False)
        return value


_RUNS = _Memo()
_PLANS = _Memo()


def _content(seq: np.ndarray) -> bytes:
    """A key for the tokens of ``seq`` (an int64 array): their digest."""
    return hashlib.blake2b(seq.tobytes(), digest_size=16).digest()


def sequence_of(case: TraceCase) -> np.ndarray:
    """Prompt then output, as one id array.  # [P + T] int64"""
    return np.concatenate([np.asarray(case.prompt, dtype=np.int64), np.asarray(case.output, dtype=np.int64)])


def oracle_runs(seq: Sequence[int] | np.ndarray, start: int, cap: int = ORACLE_CAP) -> np.ndarray:
    """The longest correct lookup run at every context length ``L`` in ``[start, len(seq))``.  # [T-start] int64

    At ``L`` (last token ``seq[L-1]``): the longest run of the true continuation ``seq[L:]`` that
    follows some earlier occurrence ``j < L-1`` of the last token, ``max_j lcp(seq[j+1:], seq[L:])``
    -- a run may overlap the future, as a drafter copying its own draft would -- capped at ``cap``
    and at the tokens left minus one (the target always adds one); 0 when nothing matches.

    Cost: per position, one pass over the earlier tokens, then a shrinking candidate set per
    matched token: milliseconds for a long trace. Kept by the tokens' content (:class:`_Memo`):
    the array returned is read-only.
    """
    seq = np.asarray(seq, dtype=np.int64)
    return _RUNS.get((_content(seq), int(start), int(cap)), lambda: _runs(seq, int(start), int(cap)))


def _runs(seq: np.ndarray, start: int, cap: int) -> np.ndarray:
    total = len(seq)
    runs = np.zeros(max(total - int(start), 0), dtype=np.int64)
    for pos in range(int(start), total):
        limit = min(cap, total - pos - 1)
        run = 0
        if limit > 0 and pos >= 1:
            cand = np.flatnonzero(seq[: pos - 1] == seq[pos - 1]) + 1  # where each continuation starts
            while cand.size and run < limit:
                cand = cand[seq[cand + run] == seq[pos + run]]  # cand + run <= pos - 1 + run < total
                if cand.size:
                    run += 1
        runs[pos - start] = run
    runs.flags.writeable = False  # kept and shared (_Memo)
    return runs


def oracle_accepts(seq: Sequence[int] | np.ndarray, start: int, cap: int = ORACLE_CAP) -> np.ndarray:
    """Accepted draft tokens per step of the lookup oracle generating ``seq[start:]``.  # [steps] int64

    Each step drafts the longest correct run (:func:`oracle_runs`), so nothing is wasted and tau is
    the highest any lookup drafter can reach: how far a step reaches never decreases with the
    context length, so taking the longest run every time is optimal.
    """
    runs = oracle_runs(seq, start, cap)
    out, pos = [], 0
    while pos < len(runs):
        out.append(int(runs[pos]))
        pos += int(runs[pos]) + 1
    return np.asarray(out, dtype=np.int64)


def oracle_steps(case: TraceCase, profile: CostProfile, cap: int = ORACLE_CAP) -> list[StepRecord]:
    """The oracle's steps over one trace case: it drafts exactly the run it knows will be accepted."""
    steps, context = [], len(case.prompt)
    for a in oracle_accepts(sequence_of(case), len(case.prompt), cap).tolist():
        steps.append(StepRecord(context, a, a, a + 1, 0.0, profile.cost(a + 1, context)))
        context += a + 1
    return steps


@dataclass(frozen=True)
class OraclePlan:
    """The cost-aware oracle on one trace (decoding phase), position by position.

    ``best[i]``: the least time to generate output tokens ``i..T-1`` (``best[T] = 0``);
    ``choice[i]``: the accepted run its step at ``i`` drafts (0 = no draft); ``runs[i]``: the longest
    correct run at ``i``; ``plain``: plain decoding's time for the whole output.
    """

    runs: np.ndarray  # [T] int64
    best: np.ndarray  # [T + 1] float64, seconds
    choice: np.ndarray  # [T] int64
    plain: float
    start: int  # prompt length: output position i sits at context start + i

    @property
    def seconds(self) -> float:
        return float(self.best[0]) if len(self.best) else 0.0


def cost_aware_plan(case: TraceCase, profile: CostProfile, cap: int = ORACLE_CAP) -> OraclePlan:
    """Dynamic programming over output positions: at each, draft a prefix of the longest correct
    run (0..runs[i] tokens accepted), paying the cheapest forward over at least that many + 1
    tokens (a drafter may draft more than is accepted), whichever makes the rest cheapest. Kept by
    the case's tokens, ``profile`` and ``cap`` (:class:`_Memo`): its arrays are read-only."""
    seq = sequence_of(case)
    start = len(case.prompt)
    return _PLANS.get((_content(seq), start, profile, int(cap)), lambda: _plan(seq, start, profile, int(cap)))


def _plan(seq: np.ndarray, start: int, profile: CostProfile, cap: int) -> OraclePlan:
    runs = oracle_runs(seq, start, cap)
    n = len(runs)
    best = np.zeros(n + 1)
    choice = np.zeros(n, dtype=np.int64)
    plain = 0.0
    for pos in range(n - 1, -1, -1):
        costs = profile.costs(cap + 1, start + pos)  # [cap+1]: forwards over 1..cap+1 tokens
        cheapest = np.minimum.accumulate(costs[::-1])[::-1]  # [cap+1]: cheapest[k] = min cost over >= k+1 tokens
        k = np.arange(int(runs[pos]) + 1)
        totals = cheapest[k] + best[pos + k + 1]
        choice[pos] = int(np.argmin(totals))
        best[pos] = float(totals[choice[pos]])
        plain += float(costs[0])
    best.flags.writeable = choice.flags.writeable = False  # kept and shared (_Memo)
    return OraclePlan(runs, best, choice, plain, start)


def cost_aware_oracle_times(case: TraceCase, profile: CostProfile, cap: int = ORACLE_CAP) -> tuple[float, float]:
    """(plain decoding's seconds, the best run's seconds) of the cost-aware oracle under ``profile``
    (decoding phase): the estimated-speedup ceiling of lookup is their ratio.

    On a CPU, where verifying 2 tokens costs well over one plain step, drafting every 1-token run loses
    time; this oracle skips those, so its speedup bounds every lookup drafter's under ``profile``.
    """
    plan = cost_aware_plan(case, profile, cap)
    return plan.plain, plan.seconds


#: the least gain over plain decoding (oracle speedup - 1) of which a share is shown: below it a
#: drafter's own time, a percent or two of plain decoding's, moves the share by tens of points
MIN_ORACLE_GAIN = 0.05


def oracle_gain(speedup: float | None, oracle: float | None) -> float | None:
    """The share of the oracle's gain over plain decoding that ``speedup`` reaches: (s - 1) / (o - 1);
    None when either is missing or the oracle gains less than ``MIN_ORACLE_GAIN`` (a share of next to
    nothing is noise: an oracle of 1.02x turns a 0.98x drafter into -100%)."""
    if speedup is None or oracle is None or oracle - 1 < MIN_ORACLE_GAIN:
        return None
    return (speedup - 1) / (oracle - 1)
