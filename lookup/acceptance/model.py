"""The acceptance model: P(a draft node is accepted), from statistics, priors and fitted models.

    model = AcceptanceModel(max_tokens=32, fits=fits_for(profile.model))
    row = model.row(evidence.source, evidence.match_length)      # the statistics this draft is judged by
    acceptance = model.chain(row, evidence, n, tokens)  # [n] P(node i accepted | nodes before it accepted)
    path = model.tree(row, parents)                 # [n] P(node i on the accepted path)
    model.learn_chain(row, chain, sent, accepted, committed, acceptance)   # after the target's verdict

Three sources of knowledge, each owned here and by nothing else:

* **statistics**: within a sequence, how often a node at depth ``d`` was accepted after a match of
  about this length from this source (:data:`SOURCES`), as decayed counts (recent steps weigh
  more) smoothed towards a prior (:class:`Priors`, the learner :class:`lookup.acceptance.learner.AcceptanceRates`
  and its one bucketing of match lengths);
  and for trees, how often a younger sibling was right when its elder ones were wrong;
* **the first-node model** (:mod:`lookup.acceptance.first_token`): the statistics' estimate, the
  match length and how the match's occurrences agree with the chain (an :class:`Evidence`);
* **the later-nodes model** (:mod:`lookup.acceptance.later_nodes`): how many occurrences still
  follow the chain at each depth and whether they go on with its token;
* **the tokens drafted** (:mod:`lookup.acceptance.tokens`, with the models only): how often a node
  holding each token was accepted so far, a log-odds offset on the models' estimates;
* **the sequence's calibration** (:mod:`lookup.acceptance.calibration`, with the models only): how
  many of the chain nodes checked in this sequence were accepted against how many the estimates
  expected, one more log-odds offset on every chain node.

The models' coefficients are data (:class:`pldcore.fits.Fits`), fitted per source: a
chain from the history is judged by fits made on the benchmark served as one stream, which also
read what the context's own match says of it (``Evidence.other``); a chain from the context of a
drafter that keeps a history has a first-node fit of its own, which reads what the history says.

The model holds no drafter state: what it learns comes from :meth:`learn_chain` and
:meth:`learn_tree`; which draft, and what was sent, is the caller's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NamedTuple, Sequence

import numpy as np

from lookup.arrays import kernel_array
from lookup.acceptance import first_token, later_nodes
from lookup.acceptance.later_nodes import warm_up as warm_up_later_nodes
from lookup.acceptance.calibration import Calibration, without
from lookup.acceptance.chain_kernel import chain_estimate
from lookup.acceptance.chain_kernel import warm_up as warm_up_chain_kernel
from lookup.acceptance.tokens import TokenRates
from pldcore.fits import Fits, default_fits
from lookup.acceptance.learner import BUCKET_EDGES, UNKNOWN_MATCH, AcceptanceRates, match_bucket
from lookup.acceptance.rates import DecayedRate
from lookup.base import SOURCES, Draft, Evidence

#: the fit for drafts from the context while a history is kept (a fit name of the first-node model)
WITH_HISTORY = "context, with a history"
#: the fit that reads no second index (the other fits read ``Evidence.other``)
OWN_ONLY = SOURCES[0]
#: the fits each model has, by the model's name in a fit file
FITTED = {"first": (*SOURCES, WITH_HISTORY), "later": SOURCES}


@dataclass(frozen=True)
class Priors:
    """What the statistics assume before any observation, per match-length bucket
    (:data:`lookup.acceptance.learner.BUCKET_EDGES`, the one bucketing).

    Chosen by hand, not fitted (``docs/acceptance.md`` gives the replays that chose them); a fit
    file records the priors it was fitted with (and the bucketing), and a test fails when they
    differ from these.
    """

    #: P(first node accepted) per bucket, for a draft from the context
    first: tuple[float, ...] = (0.2, 0.35, 0.5, 0.6, 0.7, 0.8)
    #: the same for a draft from a history of earlier requests: a match of a given length in another
    #: request's output is followed far less often than one in the context
    first_history: tuple[float, ...] = (0.15, 0.25, 0.35, 0.4, 0.45, 0.5)
    #: later nodes (given the earlier ones) are likelier: this much more, at most LATER_CAP
    later_bonus: float = 0.2
    later_cap: float = 0.9
    #: P(a younger sibling is right | its elder siblings are wrong), per rank >= 1
    rank: float = 0.3
    #: sibling ranks with statistics of their own; later ones share the last
    max_rank: int = 8

    def depth_prior(self, first: Sequence[float], max_tokens: int) -> np.ndarray:
        """Prior P(node at depth d accepted | the ones before accepted) per bucket: ``first`` at depth
        0, ``later_bonus`` more (at most ``later_cap``) after.  # [B, L]"""
        first = np.asarray(first, dtype=np.float64)
        later = np.minimum(first + self.later_bonus, self.later_cap)
        return np.column_stack([first, np.repeat(later[:, None], max_tokens - 1, axis=1)])

    def settings(self) -> dict:
        """The priors and the bucketing they are per, as a fit file records them (in the order fit
        files have always recorded them, so that a fit stays byte for byte what the command writes)."""
        own = {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}
        return {"bucket_edges": list(BUCKET_EDGES), **own, "unknown_match": UNKNOWN_MATCH}


PRIORS = Priors()


class Row(NamedTuple):
    """Which statistics a draft is judged by: its source (an index of SOURCES) and its match-length
    bucket. Indexes the model's ``[S, B, ...]`` arrays directly."""

    source: int
    bucket: int


@dataclass(frozen=True)
class Inputs:
    """What the fitted models read of one chain: the statistics' estimate per node, and each model's
    fit and features (None where the evidence holds no occurrences)."""

    own: np.ndarray  # [n] the statistics' P(node i accepted | nodes before it accepted)
    first_fit: str
    first: np.ndarray | None  # [F] the first-node model's features
    later_fit: str
    later: np.ndarray | None  # [n-1, F'] the later-nodes model's features, depths 1..n-1


class AcceptanceModel:
    """Per-node acceptance probabilities for the drafts of one sequence (or one stream of requests).

    Args:
        max_tokens: the deepest node judged (drafts are judged on their first ``max_tokens`` nodes).
        prior_strength: how many observations a prior is worth (> 0).
        decay: weight kept by past observations per step, in (0, 1].
        fits: the fitted models' coefficients (None: the embedded model's shipped fit, where a model is on).
        first_node: use the first-node model where the evidence allows.
        later_nodes: use the later-nodes model where the evidence allows.
        priors: the statistics' priors.
        tokens: move a chain's estimates by what its tokens did before (:class:`TokenRates`), where
            :meth:`chain` is given them; cleared with the statistics.
        calibrate: move a chain's estimates by how the estimates of the nodes checked so far compare
            with what became of them (:class:`~lookup.acceptance.calibration.Calibration`); cleared
            with the statistics and by :meth:`restart`.
    """

    def __init__(self, max_tokens: int = 32, prior_strength: float = 2.0, decay: float = 0.98,
                 fits: Fits | None = None, first_node: bool = True, later_nodes: bool = True,
                 priors: Priors = PRIORS, tokens: bool = False, calibrate: bool = False) -> None:
        self.max_tokens, self.priors = max_tokens, priors
        self.fits = fits if fits is not None or not (first_node or later_nodes) else default_fits()
        self.first_node, self.later_nodes = first_node, later_nodes
        # P(node at depth d accepted | the ones before accepted), per source and match-length bucket: [S, B, L]
        prior = np.stack([priors.depth_prior(first, max_tokens) for first in (priors.first, priors.first_history)])
        self._depth = AcceptanceRates(prior, prior_strength, decay)
        # P(the rank-r child is right | its elder siblings are wrong), r >= 1 (index 0 unused): [R]
        self._ranks = DecayedRate(np.full(priors.max_rank, priors.rank), prior_strength, decay)
        if later_nodes:
            warm_up_later_nodes()  # its kernel compiled off the timed path
        self.tokens = TokenRates() if tokens else None
        self.calibration = Calibration() if calibrate else None
        self._fit_cache: dict[tuple[str, str], tuple[np.ndarray, float] | None] = {}
        warm_up_chain_kernel()  # chain()'s kernel compiled off the timed path

    # -- which statistics ----------------------------------------------------------------------
    def row(self, source: str, match_length: int | None) -> Row:
        """The statistics a draft from ``source`` (one of SOURCES; another counts as the context) after
        a match of ``match_length`` tokens (None: unknown; :func:`~lookup.acceptance.learner.match_bucket`)
        is judged by."""
        return Row(SOURCES.index(source) if source in SOURCES else 0, match_bucket(match_length))

    # -- estimates -----------------------------------------------------------------------------
    def rates(self, row: Row) -> np.ndarray:
        """The statistics' P(node i accepted | nodes before accepted) at ``row``.  # [L]"""
        return self._depth.estimate(row)

    def rank_rates(self) -> np.ndarray:
        """The statistics' P(the rank-r child is right | its elder siblings are wrong), r >= 1 (index 0 unused).  # [R]"""
        return self._ranks.estimate()

    def counts(self, row: Row) -> tuple[np.ndarray, np.ndarray]:
        """The decayed (trials, hits) per depth at ``row`` behind :meth:`rates` (copies).  # [L], [L]"""
        return self._depth.counts(row)

    def rank_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The decayed (trials, hits) per sibling rank behind :meth:`rank_rates` (copies).  # [R], [R]"""
        return self._ranks.trials.copy(), self._ranks.hits.copy()

    def fit_names(self, evidence: Evidence) -> tuple[str, str]:
        """The fit (first node's, later nodes') a chain with this evidence is judged by: its source's, but
        a chain from the context of a drafter that keeps a second index takes :data:`WITH_HISTORY` for its
        first node (that fit was made on what the history says of such chains)."""
        source = evidence.source if evidence.source in SOURCES else SOURCES[0]
        first = WITH_HISTORY if source == SOURCES[0] and evidence.second_index else source
        return (first if self.fits is None or first in self.fits.first else source), source

    def inputs(self, row: Row, evidence: Evidence, n: int) -> Inputs:
        """What the fitted models read of a chain of ``n`` nodes with ``evidence`` (its ``own`` and
        ``other`` agreement over at least n tokens), judged at ``row``. A query."""
        own = self.rates(row)[:n]
        first_fit, later_fit = self.fit_names(evidence)
        if evidence.own is None or not n:
            return Inputs(own, first_fit, None, later_fit, None)
        first_other = evidence.other if first_fit != OWN_ONLY else None
        later_other = evidence.other if later_fit != OWN_ONLY else None
        first = first_token.features(*first_token_inputs(evidence.own, float(own[0]), first_other))
        later = later_nodes.features(*_triple(evidence.own, n), None if later_other is None else _triple(later_other, n))
        return Inputs(own, first_fit, first, later_fit, later)

    def chain(self, row: Row, evidence: Evidence | None, n: int, tokens: np.ndarray | None = None) -> np.ndarray:
        """P(node i accepted | nodes before it accepted) for the first ``n`` nodes of a chain: the
        statistics at ``row``, with the first node's from the first-node model and the later nodes'
        from the later-nodes model where they are on and ``evidence`` counts the match's occurrences;
        then, where the chain's ``tokens`` ([>= n] ids) are given and the model learns per token, moved
        by what those tokens did before; and, where the model calibrates, by the sequence's offset
        (one kernel: :func:`lookup.acceptance.chain_kernel.chain_estimate`).  # [min(n, max_tokens)]"""
        m = min(n, self._depth.depths)
        first = later = own = other = None
        first_other = later_other = False
        if evidence is not None and evidence.own is not None and (self.first_node or self.later_nodes):
            own, other = evidence.own, evidence.other
            first_fit, later_fit = self.fit_names(evidence)
            # a fit file may lack a fit (too few rows to make it): those nodes keep the statistics' estimate
            first = self._fit_arrays("first", first_fit) if self.first_node else None
            later = self._fit_arrays("later", later_fit) if self.later_nodes else None
            first_other = first is not None and other is not None and first_fit != OWN_ONLY
            later_other = later is not None and other is not None and later_fit != OWN_ONLY
            shortest = min(len(own.support), len(own.agree), *((len(other.support), len(other.agree)) if other else ()))
            if shortest < m:  # the kernel reads an entry per node, unchecked
                raise ValueError(f"the evidence counts {shortest} nodes of a chain of {m}")
        rates = self.tokens if tokens is not None else None
        if rates is not None and len(tokens) < m:
            raise ValueError(f"{len(tokens)} tokens for a chain of {m} nodes")
        depth = self._depth
        return chain_estimate(
            m, depth.hits, depth.trials, depth.prior, (row.source, row.bucket), depth.strength,
            first is not None, *(first or _NO_FIT), later is not None, *(later or _NO_FIT),
            0 if own is None else int(own.match_length), *_counts(own),
            first_other, later_other, 0 if other is None else int(other.match_length), *_counts(other),
            rates is not None, _NO_TOKENS if rates is None else kernel_array(tokens, np.int64),
            *(_NO_RATES if rates is None else rates.source_arrays(row.source)),
            0.0 if self.calibration is None else float(self.calibration.offset))

    def _fit_arrays(self, model: str, name: str) -> tuple[np.ndarray, float] | None:
        """The fit ``name`` of ``model`` ("first" or "later") as the kernel reads it (None: no such fit)."""
        key = (model, name)
        if key not in self._fit_cache:
            table = self.fits.first if model == "first" else self.fits.later
            self._fit_cache[key] = (None if name not in table else
                                    (kernel_array(table[name][0], np.float64), float(table[name][1])))
        return self._fit_cache[key]

    def tree(self, row: Row, parents: np.ndarray) -> np.ndarray:
        """P(node i is on the accepted path) of a tree ([n] parents, -1 = root), judged at ``row``:
        ``P(node) = P(parent) * hit``, with ``hit = a_d`` for a first child at depth ``d`` and
        ``(1 - a_d) * prod_{1<=s<r} (1 - c_s) * c_r`` for the ``r``-th younger sibling.  # [n]"""
        a = self.rates(row)  # [L]
        c = self.rank_rates()  # [R]
        last = self.priors.max_rank - 1
        # miss[r]: P(ranks 1..r-1 all wrong | rank 0 wrong)
        miss = np.concatenate([[1.0, 1.0], np.cumprod(1.0 - c[1:-1])])  # [R]
        n = len(parents)
        prob = np.zeros(n)
        depth = np.zeros(n, dtype=np.int64)
        kids = np.zeros(n + 1, dtype=np.int64)  # children seen so far per node (+1: the root at 0)
        for i in range(n):
            p = int(parents[i])
            rank = int(kids[p + 1])
            kids[p + 1] += 1
            depth[i] = 1 if p < 0 else depth[p] + 1
            a_d = a[min(depth[i], len(a)) - 1]
            r = min(rank, last)
            hit = a_d if rank == 0 else (1.0 - a_d) * miss[r] * c[r]
            prob[i] = hit * (1.0 if p < 0 else prob[p])
        return prob

    # -- learning ------------------------------------------------------------------------------
    def age(self) -> None:
        """One step passes: past observations weigh ``decay`` times less (and past calibration nodes
        their own calibration decay)."""
        self._depth.age()
        self._ranks.age()
        if self.calibration is not None:
            self.calibration.age()

    def clear(self) -> None:
        """Forget every observation."""
        self._depth.clear()
        self._ranks.clear()
        if self.tokens is not None:
            self.tokens.clear()
        self.restart()

    def restart(self) -> None:
        """A new request: the calibration starts over (a shift is the request's), while the statistics
        and token rates carry on where :meth:`clear` is not called (a history)."""
        if self.calibration is not None:
            self.calibration.clear()

    def learn_chain(self, row: Row, chain: np.ndarray, sent: int, accepted: int, committed: Sequence[int],
                    acceptance: np.ndarray | None = None) -> None:
        """A chain candidate (``chain``: [n] tokens, judged at ``row``) of which ``sent`` nodes were sent
        and ``accepted`` accepted, the step committing ``committed``: nodes 0..accepted were tried and
        0..accepted-1 hit; the node after an all-accepted (or empty) send is checked for free against
        the target's own next token. ``acceptance`` ([n], what :meth:`chain` said of the candidate
        before this verdict; None: not known) is what the calibration compares the outcome with."""
        tried = min(accepted + 1, sent)
        self._depth.learn_prefix(row, tried, accepted)
        free = accepted == sent and sent < len(chain) and len(committed) > sent
        hit = free and committed[sent] == chain[sent]
        if free:
            self._depth.learn_node(row, sent, hit)
        if self.tokens is not None:
            self.tokens.learn(row.source, chain, tried, accepted, bool(hit) if free else None)
        if self.calibration is not None and acceptance is not None:
            checked = min(tried + free, len(acceptance))
            if checked:
                # the estimates before the offset: the one it compares with must not feed on itself
                before = without(acceptance[:checked], self.calibration.offset)
                self.calibration.learn(float(before.sum()), min(accepted, checked) + (hit and checked > tried))

    def learn_tree(self, row: Row, tree: Draft, committed: Sequence[int]) -> None:
        """Follow ``committed`` down the whole offered tree (sent or not); at each level reached, note
        the rank of the child that carried the committed token (or that none did)."""
        children: dict[int, list[int]] = {}
        for i, p in enumerate(tree.parents.tolist()):
            children.setdefault(p, []).append(i)
        ranks, last = self._ranks, self.priors.max_rank - 1
        node = -1
        for level, token in enumerate(committed):
            kids = children.get(node)
            if not kids or level >= self._depth.depths:
                return
            rank = next((r for r, k in enumerate(kids) if tree.tokens[k] == token), -1)
            self._depth.learn_node(row, level, rank == 0)
            tried = len(kids) - 1 if rank < 0 else rank  # younger siblings tested before the hit (or all)
            for r in range(1, tried + 1):
                ranks.trials[min(r, last)] += 1
            if rank > 0:
                ranks.hits[min(rank, last)] += 1
            if rank < 0:
                return
            node = kids[rank]

    def settings(self) -> dict:
        """What a fit made with this model's statistics depends on: its priors, strength and decay."""
        return {"priors": self.priors.settings(), "prior_strength": self._depth.strength,
                "decay": self._depth.decay, "max_tokens": self.max_tokens}


_NO_FIT = (np.zeros(0), 0.0)
_NO_TOKENS = np.zeros(0, dtype=np.int64)
_NO_COUNTS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
#: TokenRates.source_arrays where no token is judged
_NO_RATES = (np.full((16, 2), -1, dtype=np.int64), np.zeros((2, 1)), np.zeros((2, 1)), np.ones(2), np.ones(2), 1.0, 0.0)


def _counts(agreement) -> tuple[np.ndarray, np.ndarray]:
    """An Agreement's (support, agree) as the chain's kernel reads them (empty for None)."""
    if agreement is None:
        return _NO_COUNTS
    return kernel_array(agreement.support, np.int64), kernel_array(agreement.agree, np.int64)


def _triple(agreement, n: int) -> tuple[int, np.ndarray, np.ndarray]:
    return agreement.match_length, agreement.support[:n], agreement.agree[:n]


def first_token_inputs(own, estimate: float, other=None) -> tuple[int, float, int, float, tuple[int, int, int] | None]:
    """The inputs of :func:`lookup.acceptance.first_token.features` for a chain: from its own
    :class:`~lookup.base.Agreement`, the statistics' ``estimate`` of P(first node accepted) and the
    other index's agreement (or None): (match length, estimate, occurrences remembered, share of them
    followed by the chain's first token, and (the other's match length, occurrences, those followed by
    the first token) or None)."""
    occurrences = int(own.support[0])
    seen = None if other is None else (other.match_length, int(other.support[0]), int(other.agree[0]))
    return own.match_length, estimate, occurrences, float(own.agree[0]) / max(occurrences, 1), seen
