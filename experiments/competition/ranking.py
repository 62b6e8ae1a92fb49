"""The one ranking of the board: every view, figure and command orders entries here.

    ranking = ranked(entries)                     # (oracle, scored best first, the rest by name)
    ranking = ranked(entries, basis=PUBLIC)       # by the public score, where fresh cases rank the board
    order = track_ranking(entries, "flat")        # one GPU track's ranking
    place = standing(entries, "mine")             # (rank, of how many) as the '#' column numbers it

An entry's *board scores* (:func:`board_scores`) are its fresh ones where the board links fresh
cases (``flags.with_fresh``), else its public ones; the public ones stay beside them
(``entry.public``), never overwritten. An entry is ranked when it scored (status ok, a non-zero
score) and is not the oracle; ties go by name. The peers are ranked apart from the board proper
(:func:`split_peers`), in their own table, except on the GPU tracks, where everything ranks together.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

from experiments.competition.records import PENDING, Entry, Scores


class Basis(enum.Enum):
    """Which scores rank: the board's (fresh where linked, else public) or the public ones."""

    BOARD = "board"
    PUBLIC = "public"


BOARD, PUBLIC = Basis.BOARD, Basis.PUBLIC


class Ranking(NamedTuple):
    oracle: Entry | None  # the ceiling: shown first, never ranked
    ranked: list[Entry]  # scored, best first (by name on a tie)
    unranked: list[Entry]  # disqualified or pending, by name


def board_scores(entry: Entry, basis: Basis = BOARD) -> Scores:
    """The scores ``entry`` ranks by on ``basis``: its fresh ones where fresh cases are linked, else public."""
    return entry.fresh if basis is BOARD and entry.fresh is not None else entry.public


def score_of(entry: Entry, basis: Basis = BOARD) -> float | None:
    """The score ``entry`` ranks by, or None where it is not ranked (the oracle, disqualified, pending, zero)."""
    scores = board_scores(entry, basis)
    return scores.score if not entry.is_oracle and scores.ok and scores.score else None


def ranked(entries: Sequence[Entry], basis: Basis = BOARD) -> Ranking:
    """(the oracle, the entries that scored -- best first, the others -- by name)."""
    oracle = next((e for e in entries if e.is_oracle), None)
    scored = sorted((e for e in entries if score_of(e, basis) is not None), key=lambda e: (-score_of(e, basis), e.name))
    rest = sorted((e for e in entries if not e.is_oracle and score_of(e, basis) is None), key=lambda e: e.name)
    return Ranking(oracle, scored, rest)


def better(new: Entry, old: Entry) -> bool:
    """Whether ``new`` ranks at least as high as ``old`` by their public scores: a scored entry above
    one that is not, a higher score above a lower one (a tie goes to ``new``)."""
    a, b = score_of(new, PUBLIC), score_of(old, PUBLIC)
    return b is None or (a is not None and a >= b)


def split_peers(entries: Sequence[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(the board proper: the oracle, baselines and submissions; the oracle and the peers)."""
    oracle = [e for e in entries if e.is_oracle]
    return [e for e in entries if not e.is_peer], oracle + [e for e in entries if e.is_peer]


def standing(entries: Sequence[Entry], name: str, basis: Basis = BOARD) -> tuple[int, int] | None:
    """(rank, of how many) of entry ``name`` as the views number it in the '#' column: among the
    board proper (the peers are ranked apart). None where it is not ranked."""
    scored = ranked(split_peers(entries)[0], basis).ranked
    return next(((i, len(scored)) for i, e in enumerate(scored, 1) if e.name == name), None)


def public_standing(entries: Sequence[Entry], name: str) -> tuple[int, int] | None:
    """(rank, of how many) of entry ``name`` by public score, among the board proper's entries that
    the board does not disqualify (scored, or pending their fresh score): where an entry submitted
    since the last build stands until that build ranks it by fresh cases."""
    pool = [e for e in entries if board_scores(e).ok or board_scores(e).status == PENDING]
    return standing(pool, name, PUBLIC)


def best_in_group(pool: Sequence[Entry], group: str) -> Entry | None:
    """The entry of ``pool`` with the highest public estimated speedup in task group ``group`` (the
    later name on a tie), or None where none has a (non-zero) number there."""
    scored = [(v, e.name, i) for i, e in enumerate(pool)
              if group in e.public.groups and (v := e.public.groups[group].est_speedup)]
    return pool[max(scored)[2]] if scored else None


def track_scores(entry: Entry, track: str) -> Scores | None:
    """An entry's scores on GPU track ``track`` where it scored there (status ok, a score), else None."""
    scores = entry.tracks[track] if track in entry.tracks else None
    return scores if scores is not None and scores.ok and scores.score is not None else None


def track_names(entries: Sequence[Entry]) -> list[str]:
    """The GPU tracks the oracle was scored on, in its order (none on a board from before tracks)."""
    oracle = ranked(entries).oracle
    return list(oracle.tracks) if oracle is not None else []


def track_ranking(entries: Sequence[Entry], track: str) -> list[Entry]:
    """Every entry (ours and the peers alike) scored on ``track``, best first (by name on a tie)."""
    scored = [e for e in entries if not e.is_oracle and track_scores(e, track) is not None]
    return sorted(scored, key=lambda e: (-track_scores(e, track).score, e.name))
