"""What the views rank and flag: an entry's fresh score beside its public one, and the marks of an
entry that knows more than lookup can.

    shown = with_fresh(public_entries, fresh_entries)   # the entries the views render: ranked by fresh
    share = beyond_share(cases)                          # accepted tokens no context run holds

**Rank by fresh cases.** Where the board links fresh cases to the public benchmark
(``entries.link_fresh``), each entry carries its fresh scores as ``fresh`` beside its public ones
(:mod:`.ranking` ranks by them); an entry with no fresh score yet (it was submitted after the
build) is ``pending``: listed, not ranked.

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

import dataclasses
import json
from typing import Iterable, Sequence

import numpy as np

from experiments.competition.records import DISQUALIFIED, PENDING, Entry, Scores
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
                runs = oracle_runs(full, offset + start, ORACLE_CAP)  # kept for the next entry (oracle.py)
            at = step.context - start  # the step's position among the output's tokens
            run = int(runs[at]) if 0 <= at < len(runs) else 0
            beyond += max(0, step.accepted - run)
        if stream:
            history = full
    return beyond / accepted if accepted else None


def _ratio(entry: Entry) -> float | None:
    """An entry's public score over its fresh one, where it has both (and the fresh one is positive)."""
    public, fresh = entry.public.score, entry.fresh.score if entry.fresh is not None else None
    return public / fresh if public is not None and fresh is not None and fresh > 0 else None


def with_fresh(public: Sequence[Entry], fresh: Sequence[Entry]) -> list[Entry]:
    """The public benchmark's entries as the views show them once fresh cases are linked: each with
    the scores of the fresh entry of its name as ``fresh`` (what ranks: :mod:`.ranking`), its
    public ones kept as they are, and ``flags``. An entry scored on the public cases but not on
    the fresh ones -- or resubmitted since with other code or parameters, so the fresh entry of its
    name scored something else -- is ``pending``; one disqualified on the fresh cases is
    disqualified, with that reason."""
    by_name = {e.name: e for e in fresh}
    shown = []
    for entry in public:
        f = by_name.get(entry.name)
        if f is not None and _scored_as(f) != _scored_as(entry):
            f = None  # resubmitted since the build (other code or parameters): that fresh score is not its own
        if f is None:
            scores = (Scores(status=PENDING, reason="not scored on fresh cases yet (the next build scores it)")
                      if entry.public.ok else entry.public)
        elif not f.public.ok:
            scores = Scores(status=DISQUALIFIED, reason=f.public.reason)
        else:  # the fresh numbers, under the public status (a fresh score does not lift a disqualification)
            scores = dataclasses.replace(f.public, status=entry.public.status, reason=entry.public.reason)
        shown.append(dataclasses.replace(entry, fresh=scores))
    return _flag(shown)


def _scored_as(entry: Entry) -> tuple:
    """What an entry's score is a score of: its source (a file by its content's hash, else by
    name), its parameters and its code key: a fresh score belongs to a public one only when they agree."""
    source = entry.source
    return (source.kind, source.sha256 or source.name, json.dumps(entry.params, sort_keys=True, default=str),
            entry.code)


def _flag(entries: list[Entry]) -> list[Entry]:
    """The entries with their ``flags`` (see the module's docstring); reads both benchmarks' scores."""
    reference = [r for e in entries if e.kind in REFERENCE_KINDS and (r := _ratio(e)) is not None]
    limit = max(reference) * (1 + GAP_MARGIN) if reference else None
    flagged = []
    for e in entries:
        if e.is_oracle:
            flagged.append(e)
            continue
        flags = []
        shares = [s for s in (e.public.beyond_share, e.fresh.beyond_share if e.fresh else None) if s is not None]
        if shares and max(shares) > BEYOND_FLAG:
            flags.append(f"beyond: {100 * max(shares):.0f}% of accepted tokens beyond any run of its context")
        ratio = _ratio(e)
        if limit is not None and ratio is not None and ratio > limit and e.kind not in REFERENCE_KINDS:
            flags.append(f"public-gap: public {e.public.score:.3f}x vs fresh {e.fresh.score:.3f}x "
                         f"(baselines at most {max(reference):.3f}x that ratio)")
        flagged.append(dataclasses.replace(e, flags=tuple(flags)))
    return flagged


def flags_alone(entries: Sequence[Entry]) -> list[Entry]:
    """Entries of one benchmark with their ``beyond`` flags (no fresh cases linked: ``submit``'s
    quick public score, or a board built with ``--fresh 0``)."""
    return _flag(list(entries))
