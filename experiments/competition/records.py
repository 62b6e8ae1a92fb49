"""The board's entries as typed values: what every view, figure and command reads.

    entry.name, entry.kind, entry.public.score     # the entry as scored on its own benchmark
    entry.fresh                                    # its scores on the linked fresh cases (flags.with_fresh), or None
    entry.tracks["flat"].groups["doc-qa"].tau      # per GPU track, per task group
    entry.flags                                    # what flags.py marks it with (None: not flagged yet)

Values are built once, by :mod:`experiments.competition.loader`, from the untrusted board file:
a number here is a finite float or None, a text is a str (still to be escaped by each view), a
mapping is read-only. ``record`` keeps the JSON object the entry was read from, for what writes the
board back and for the machine-readable view, which republishes the file's own fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from experiments.running.explain import Loss

#: the kinds of entry the board ranks apart or not at all
ORACLE_KIND = "oracle"
PEER_KIND = "peer"
#: an entry's status: scored, disqualified, or (once fresh cases rank the board) waiting for its fresh score
OK, DISQUALIFIED, PENDING = "ok", "disqualified", "pending"

@dataclass(frozen=True)
class GroupScores:
    """One task group's numbers (on one benchmark or track); None where the file has no finite number."""

    est_speedup: float | None = None  # estimated speedup under the benchmark's (or track's) profile
    tau: float | None = None  # tokens per target forward
    est_speedup_gpu: float | None = None  # the same cases priced under the flat GPU track
    est_speedup_cost_aware: float | None = None  # the oracle's: the cost-aware oracle's speedup
    est_speedup_topk: float | None = None  # the oracle's, on a track: the bound that also reads the top-k


@dataclass(frozen=True)
class Scores:
    """An entry's numbers on one set of cases (its benchmark, the fresh cases, one GPU track, or its
    cross-fitted run): whether it scored there, its score (the geometric mean over groups of the
    estimated speedup) and its groups."""

    status: str = OK  # OK | DISQUALIFIED | PENDING
    reason: str | None = None  # why it is not scored (as the board recorded it: cleaned, not escaped)
    score: float | None = None
    score_gpu: float | None = None  # the flat GPU track's score, shown beside the CPU one
    tau: float | None = None
    drafter_us_per_step: float | None = None
    beyond_share: float | None = None  # share of accepted tokens beyond any run of its context (flags.py)
    score_cost_aware: float | None = None  # the oracle's: the cost-aware oracle's score
    score_topk: float | None = None  # the oracle's, on a track: the top-k bound's score
    groups: Mapping[str, GroupScores] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(frozen=True)
class Source:
    """Where an entry's code comes from: a built-in (by name), an installed entry point, or a file
    of the board's store (by the hash of its content)."""

    kind: str | None = None  # "builtin" | "entry_point" | "file" | "oracle"
    name: str | None = None
    sha256: str | None = None
    display: str | None = None  # the file's name as submitted


@dataclass(frozen=True)
class Verify:
    """What ``build --verify`` measured of an entry live on the model (or why it could not)."""

    speedup: float | None = None
    identical: bool | None = None
    model: str | None = None
    prompts: Any = None  # shown as it is (cleaned): a count
    max_new_tokens: Any = None
    failed: str | None = None
    skipped: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One submission an entry lists (``board.attempt_of``): when, its score or why it failed."""

    time: str | None = None
    status: str | None = None
    score: float | None = None
    reason: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    source: Source = Source()
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # as the file holds it


@dataclass(frozen=True)
class Entry:
    """One entry of the board on one benchmark."""

    name: str
    kind: str  # ORACLE_KIND, "baseline", PEER_KIND, "submission" (or what a hand-edited file says)
    benchmark: str | None
    public: Scores  # as scored on its own benchmark: what `submit` prints, what `record_best` compares
    fresh: Scores | None = None  # on the linked fresh cases, where the board links some (flags.with_fresh)
    flags: tuple[str, ...] | None = None  # flags.py's marks; None: not flagged (the oracle, an unflagged view)
    tracks: Mapping[str, Scores] = field(default_factory=dict)  # per GPU track, in the file's order
    cross_fitted: Scores | None = None  # an entry fitted on the public cases, scored cross-fitted (cross_fit.py)
    source: Source = Source()
    params: Mapping[str, Any] = field(default_factory=dict)
    code: str | None = None  # the code key of a built-in's score
    stream: bool = False  # one drafter serves the cases in order
    refused: tuple[str, ...] = ()
    refused_count: int = 0
    isolation: str | None = None
    full_isolation: bool = False
    reset_ms_per_case: float | None = None
    eval_s: float | None = None
    verify: Verify | None = None
    oracle_gap: Mapping[str, Loss] | None = None  # per group; None unless every group's breakdown is whole
    attempts: tuple[Attempt, ...] = ()
    time: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the JSON object read

    @property
    def is_oracle(self) -> bool:
        return self.kind == ORACLE_KIND

    @property
    def is_peer(self) -> bool:
        return self.kind == PEER_KIND
