"""What the views rank and flag: an entry's fresh score beside its public one, and the marks of an
entry that knows more than lookup can.

    shown = with_fresh(public_entries, fresh_entries)   # the entries the views render: ranked by fresh
    share = beyond_share(cases)                          # accepted tokens no context run holds

**Rank by fresh cases.** Where the board links fresh cases to the public benchmark
(``entries.link_fresh``), each entry's ``score`` (what :func:`board.ranked` sorts by) becomes its
fresh score, and the public one moves to ``score_public``; an entry with no fresh score yet (it
was submitted after the build) is ``pending``: listed, not ranked.

**Flags.**

* ``beyond``: more than :data:`BEYOND_FLAG` of its accepted tokens lie beyond the longest run its
  context holds at that step (for a stream entry, its context and every earlier case). Lookup
  cannot reach them; the target's top-k rows can (``recycling``: the most of any baseline or
  peer), and so can a static corpus (llama.cpp's static cache, REST's datastore: legitimate,
  flagged and shown), and so can a file of the public answers.
* ``public-gap``: its public score is above its fresh score by a ratio more than
  :data:`GAP_MARGIN` above the largest such ratio of any baseline or peer on the same two
  benchmarks (what the two case sets' difference alone explains).
"""

from __future__ import annotations

import copy
import json
from typing import Iterable, Sequence

import numpy as np

from experiments.running.oracle import ORACLE_CAP, oracle_runs, sequence_of

#: the share of accepted tokens beyond every context run above which an entry is flagged. On the
#: shipped benchmark the baselines and peers reach at most 8% (`recycling`, which drafts from the
#: target's top-k rows; every lookup drafter stays under 1%), a memorising file ~100%: docs/competition.md
BEYOND_FLAG = 0.2
#: how far (relative) an entry's public/fresh ratio may exceed the baselines' largest before it is flagged
GAP_MARGIN = 0.05
#: the kinds whose ratios set the public-gap threshold: our code and the peers' ports
REFERENCE_KINDS = ("baseline", "peer")


def beyond_share(cases: Iterable[tuple], stream: bool = False) -> float | None:
    """The share of accepted draft tokens that lie beyond the longest correct run the context holds
    at their step (:func:`experiments.running.oracle.oracle_runs`); ``cases`` are ``(set, case,
    GenerationResult)`` in the order they were served, and with ``stream`` the context of a case
    holds every earlier case too. None when nothing was accepted."""
    accepted = beyond = 0
    history = np.zeros(0, dtype=np.int64)
    for _, case, out in cases:
        seq = sequence_of(case)
        start = len(case.prompt)
        full = np.concatenate([history, seq]) if stream else seq
        offset = len(full) - len(seq)
        runs = None
        for step in out.stats.steps:
            if step.accepted <= 0:
                continue
            accepted += step.accepted
            if runs is None:
                runs = _runs(case, full, offset + start)
            at = step.context - start  # the step's position among the output's tokens
            run = int(runs[at]) if 0 <= at < len(runs) else 0
            beyond += max(0, step.accepted - run)
        if stream:
            history = full
    return beyond / accepted if accepted else None


#: (case, where its output starts in the stream) -> its context runs: the same for every entry
_RUNS: dict[tuple, np.ndarray] = {}


def _runs(case, full: np.ndarray, start: int) -> np.ndarray:
    key = (case.case, case.turn, tuple(case.prompt[:8]), len(case.prompt), len(full), start)
    if key not in _RUNS:
        if len(_RUNS) > 50_000:
            _RUNS.clear()
        _RUNS[key] = oracle_runs(full, start, ORACLE_CAP)
    return _RUNS[key]


def _ratio(entry: dict) -> float | None:
    public, fresh = entry.get("score_public"), entry.get("score")
    return public / fresh if isinstance(public, (int, float)) and isinstance(fresh, (int, float)) and fresh > 0 else None


def with_fresh(public: Sequence[dict], fresh: Sequence[dict]) -> list[dict]:
    """The public benchmark's entries as the views show them once fresh cases are linked: copies,
    each with its fresh scores as ``score``/``score_gpu`` (ranked by), the public ones as
    ``score_public``/``score_gpu_public``, and ``flags``. An entry scored on the public cases but
    not on the fresh ones -- or resubmitted since with other code or parameters, so the fresh
    entry of its name scored something else -- is ``status: pending``; one disqualified on the
    fresh cases is disqualified, with that reason."""
    by_name = {e.get("name"): e for e in fresh}
    shown = []
    for entry in public:
        e = copy.deepcopy(entry)
        f = by_name.get(entry.get("name"))
        if f is not None and _scored_as(f) != _scored_as(entry):
            f = None  # resubmitted since the build (other code or parameters): that fresh score is not its own
        e["score_public"], e["score_gpu_public"] = entry.get("score"), entry.get("score_gpu")
        if f is None:
            if e.get("status") == "ok":
                e["status"], e["score"] = "pending", None
                e["reason"] = "not scored on fresh cases yet (the next build scores it)"
        elif f.get("status") != "ok":
            e.update(status="disqualified", score=None, reason=f.get("reason"), fresh_reason=f.get("reason"))
        else:
            e["score"], e["score_gpu"], e["tau_fresh"] = f.get("score"), f.get("score_gpu"), f.get("tau")
            e["beyond_share_fresh"] = f.get("beyond_share")
            if e.get("kind") == "oracle":
                e["score_cost_aware"] = f.get("score_cost_aware")
        shown.append(e)
    _flag(shown)
    return shown


def _scored_as(entry: dict) -> tuple:
    """What an entry's score is a score of: its source (a file by its content's hash, else by
    name), its parameters and its code key: a fresh score belongs to a public one only when they agree."""
    source = entry.get("source") if isinstance(entry.get("source"), dict) else {}
    return (source.get("kind"), source.get("sha256") or source.get("name"),
            json.dumps(entry.get("params") or {}, sort_keys=True, default=str), entry.get("code"))


def _flag(entries: list[dict]) -> None:
    """Set each entry's ``flags`` (see the module's docstring); reads both benchmarks' scores."""
    reference = [r for e in entries if e.get("kind") in REFERENCE_KINDS and (r := _ratio(e)) is not None]
    limit = max(reference) * (1 + GAP_MARGIN) if reference else None
    for e in entries:
        if e.get("kind") == "oracle":
            continue
        flags = []
        shares = [s for s in (e.get("beyond_share"), e.get("beyond_share_fresh")) if isinstance(s, (int, float))]
        if shares and max(shares) > BEYOND_FLAG:
            flags.append(f"beyond: {100 * max(shares):.0f}% of accepted tokens beyond any run of its context")
        ratio = _ratio(e)
        if limit is not None and ratio is not None and ratio > limit and e.get("kind") not in REFERENCE_KINDS:
            flags.append(f"public-gap: public {e['score_public']:.3f}x vs fresh {e['score']:.3f}x "
                         f"(baselines at most {max(reference):.3f}x that ratio)")
        e["flags"] = flags


def flags_alone(entries: Sequence[dict]) -> list[dict]:
    """Entries of one benchmark with their ``beyond`` flags (no fresh cases linked: ``submit``'s
    quick public score, or a board built with ``--fresh 0``)."""
    shown = [copy.deepcopy(e) for e in entries]
    _flag(shown)
    return shown
