"""``adaptive``: wrap any drafter and choose, each step, how much of its draft to send.

A draft is not free: every node it adds makes the target's forward dearer (by how much is the
target's cost profile), so a wasted draft is a slowdown. Each step this drafter

1. asks the wrapped drafter for its longest draft, and the length of the match behind it;
2. estimates ``P(node i accepted | nodes before it accepted)`` from the acceptances seen so
   far in this sequence at the same match length (recent steps weigh more), starting from
   a prior (:class:`lookup.policy.DecayedRate`);
3. sends the prefix length ``k`` (possibly 0) that maximises expected committed tokens per
   second: ``(1 + sum_{i<k} prod_{j<=i} a_j) / cost(k + 1)``, with ``cost`` the target's
   cost profile (:func:`lookup.policy.best_cut`); or, by default, the ``k`` planned over this
   forward and the ones after it (below).

A wrapped drafter that reports no :meth:`~lookup.base.Drafter.match_length` is treated as if
its matches were of a middling length (``UNKNOWN_MATCH``). A wrapped drafter that says where its
draft comes from (a ``match_source()`` method returning one of ``SOURCES``, as
``suffix-automaton`` with a history does) gets acceptance statistics per source: a match of the
same length in another request is not as good a guide as one in the current context.

When it drafts less than it could, the token the target commits still tells whether the
next draft node would have been right, so it keeps learning even while drafting nothing.

Models of acceptance. A wrapped drafter that reports how its match's earlier occurrences agree
with its chain (a ``chain_agreement(tokens)`` method, as ``suffix-automaton`` has) gets better
estimates than the statistics above: :mod:`lookup.first_token` for the first node
(``first_token_model=True``, the default) combines the estimate above with the match length, the
number of occurrences and the share of them that agree; :mod:`lookup.later_nodes` for the later
ones (``chain_model=True``, the default) reads how many occurrences still follow the chain at each
depth and whether they go on with its token. Each model has a fit per source: a chain from the
history is judged by fits made on the benchmark served as one stream, which also read what the
context's own match says of it (a ``context_agreement(tokens)`` method, as ``suffix-automaton``
with a history has). With ``history=True`` the first node of a chain from the context has a fit of
its own too, which reads what the history's match says of it (``history_agreement(tokens)``).

Planning a chain. With ``chain_model`` the length of a chain is planned over the forwards that
follow (:func:`lookup.policy.plan_chain`) instead of judged by this forward alone: nodes not sent
now are drafted again at the next step if the part sent holds, so a doubtful start is sent short
and the rest follows once it is confirmed.

Trees. When the wrapped drafter returns a token tree, the drafter sends the first ``m`` nodes
of it (the wrapped drafter's priority order; any prefix keeps parents before children), the
``m`` that maximises ``(1 + sum_{i<m} P(node i on the accepted path)) / cost(m + 1)``. The model
behind ``P``, kept simple:

* ``P(node) = P(parent) * P(node accepted | parent accepted)`` (the root has P = 1);
* a node of depth ``d`` that is its parent's ``r``-th child (0 = first, in draft order) is
  accepted when the target's token is not one of its ``r`` elder siblings' and is its own:
  ``hit_d(0) = a_d``, the per-depth acceptance above (learnt on first children and on chains:
  the same quantity); ``hit(r) = (1 - a_d) * prod_{1<=s<r} (1 - c_s) * c_r`` for ``r >= 1``, with
  ``c_r = P(rank-r child right | elder siblings wrong)`` learnt per rank (depth-independent, prior
  ``PRIOR_RANK``).

Both are learnt from the committed tokens, against the whole tree the wrapped drafter offered
(sent or not): at each level the committed path reaches, the rank of the child carrying the
committed token (or none) is one observation for ``a_d`` and for each ``c_r`` it tried.
"""

from __future__ import annotations

from types import ModuleType
from typing import Sequence

import numpy as np

from lookup import first_token, later_nodes
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.cost import CPU_SMOLLM2, CostProfile
from lookup.policy import DecayedRate, best_cut, chain_path_probs, forward_costs, plan_chain, warm_up
from lookup.params import require_bool
from lookup.registry import create, register

#: match-length bucket edges: [0-1], 2, 3, [4-5], [6-9], [10+]
BUCKET_EDGES = np.array([2, 3, 4, 6, 10])
#: prior P(first node accepted) per bucket; later nodes (given the earlier ones) are likelier
PRIOR_FIRST = np.array([0.2, 0.35, 0.5, 0.6, 0.7, 0.8])
PRIOR_LATER_BONUS = 0.2
#: the same for drafts copied from earlier requests (``match_source() == "history"``): a match of a
#: given length in another request's output is followed far less often than one in the context
#: (first tokens accepted 16-51% against 25-96% on the shipped benchmark, docs/oracle-gap.md)
PRIOR_FIRST_HISTORY = np.array([0.15, 0.25, 0.35, 0.4, 0.45, 0.5])
#: prior P(a younger sibling is right | its elder siblings are wrong), per rank >= 1
PRIOR_RANK = 0.3
#: sibling ranks with statistics of their own; later ones share the last
MAX_RANK = 8
#: tokens of context between two look-ups of the cost table
COST_REFRESH = 128
#: match length assumed for a wrapped drafter that reports none
UNKNOWN_MATCH = 3
#: where a wrapped drafter's draft may come from (its ``match_source()``), each with its own statistics
SOURCES = ("context", "history")
DEFAULT_BASE = "suffix-automaton"
#: the policy picks the length, so the default base drafts as far as its match goes; without the
#: fallback to the earliest occurrence, whose long continuations from far away were mostly wrong
#: (docs/oracle-gap.md)
DEFAULT_BASE_PARAMS = {"max_tokens": 32, "length_rule": None, "fallback": False, "occurrences": 8}


def _depth_prior(first: np.ndarray, max_tokens: int) -> np.ndarray:
    """Prior P(node at depth d accepted | the ones before accepted) per bucket: ``first`` at depth 0,
    likelier (``PRIOR_LATER_BONUS`` more, at most 0.9) after.  # [B, L]"""
    later = np.minimum(first + PRIOR_LATER_BONUS, 0.9)
    return np.column_stack([first, np.repeat(later[:, None], max_tokens - 1, axis=1)])


@register("adaptive")
class AdaptiveDrafter(Drafter):
    """Cost-aware draft length on top of ``base`` (a drafter name or instance).

    ``wants_top`` is the wrapped drafter's (the default base wants none); ``profile`` is the
    target's cost profile (a path to a saved one, or None for the reference CPU profile).
    ``history=True`` asks the wrapped drafter (named, with a ``history`` parameter, as
    ``suffix-automaton`` has) to keep the requests served before and draft from them too, and
    keeps this drafter's acceptance statistics from one request to the next.
    """

    uses_profile = True

    def __init__(
        self,
        base: str | Drafter = DEFAULT_BASE,
        profile: CostProfile | str | None = None,
        max_tokens: int = 32,
        prior_strength: float = 2.0,
        decay: float = 0.98,
        base_params: dict | None = None,
        history: bool = False,
        first_token_model: bool = True,
        chain_model: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(base, (str, Drafter)):
            # a spec's base=none parses to None: the drafter named "none" must be quoted
            hint = " (the drafter named none is written base='none')" if base is None else ""
            raise TypeError(f"base must be a drafter name or instance, got {base!r}{hint}")
        if base_params is None:
            base_params = DEFAULT_BASE_PARAMS if base == DEFAULT_BASE else {}
        if require_bool("history", history):
            if not isinstance(base, str):
                raise TypeError("history=True needs the wrapped drafter by name (it is created with history=True)")
            base_params = {**base_params, "history": True}
        self.base = create(base, **base_params) if isinstance(base, str) else base
        self.profile = CostProfile.load(profile) if isinstance(profile, str) else (profile or CPU_SMOLLM2)
        self.max_tokens, self.prior_strength, self.decay = max_tokens, prior_strength, decay
        self.wants_top = self.base.wants_top  # the wrapped drafter's wish
        # [S*B, L]: the match-length buckets of each source in turn (SOURCES order)
        prior = np.concatenate([_depth_prior(first, max_tokens) for first in (PRIOR_FIRST, PRIOR_FIRST_HISTORY)])
        # P(node at depth d accepted | the ones before accepted), per source and match-length bucket: [S*B, L]
        self._depth = DecayedRate(prior, prior_strength, decay)
        # P(the rank-r child is right | its elder siblings are wrong), r >= 1 (index 0 unused): [R]
        self._ranks = DecayedRate(np.full(MAX_RANK, PRIOR_RANK), prior_strength, decay)
        self._context = 0  # committed tokens (prompt + output)
        self._cost_context = -1  # the context self._cost was looked up at
        self.history = bool(history)
        self.first_token_model = require_bool("first_token_model", first_token_model)
        self.chain_model = require_bool("chain_model", chain_model)
        if self.chain_model:
            warm_up()  # off the timed path: the board times proposals, not construction
        self._init_counts(forget=True)

    def _init_counts(self, forget: bool) -> None:
        if forget:
            self._depth.clear()
            self._ranks.clear()
        self._last: tuple[Draft, int, int] | None = None  # (full draft, bucket, sent) of the last propose
        self._committed: list[int] = []

    # -- the Drafter interface ---------------------------------------------------------------
    def reset(self, prompt: Sequence[int]) -> None:
        self.base.reset(prompt)
        self._context = len(prompt)
        # with a history, what the last requests taught carries on (decaying as within a request):
        # requests served one after the other are alike more often than not (docs/oracle-gap.md)
        self._init_counts(forget=not self.history)

    def extend(self, tokens: Sequence[int]) -> None:
        self.base.extend(tokens)
        self._committed = list(tokens)
        self._context += len(tokens)

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        self.base.observe_top(tokens, top, probs)

    @property
    def _cost(self) -> np.ndarray:
        """Forward cost over k+1 tokens, k = 0..max_tokens, at about the current context.  # [L+1]

        Longer contexts make multi-token forwards dearer relative to one token, so the table is
        looked up again every COST_REFRESH tokens (never, for a profile without a context axis).
        """
        bucket = self._context // COST_REFRESH * COST_REFRESH if self.profile.contexts else 0
        if bucket != self._cost_context:
            self._cost_table = forward_costs(self.profile, self.max_tokens, bucket + COST_REFRESH // 2)
            self._cost_context = bucket
        return self._cost_table

    def propose(self, budget: int) -> Draft:
        full, bucket = self.candidate(budget)
        if len(full) == 0:
            return self.send(full, bucket, 0)
        if full.is_chain:
            k = self.best_length(bucket, len(full), full.tokens)
        else:
            k = self.best_size(bucket, full.parents)
        return self.send(full, bucket, k)

    def candidate(self, budget: int) -> tuple[Draft, int]:
        """The wrapped drafter's longest draft now (within ``budget`` and ``max_tokens``), and the
        statistics row it is judged by (its source and match-length bucket). A query."""
        full = self.base.propose(min(budget, self.max_tokens))
        return full, (self._bucket() if len(full) else 0)

    def send(self, full: Draft, bucket: int, k: int) -> Draft:
        """The first ``k`` nodes of ``full`` (a :meth:`candidate`), remembered for :meth:`observe`,
        which learns from them: :meth:`propose` with the policy's ``k``. Analyses that choose ``k``
        another way (``experiments/running/hindsight.py``) call it too."""
        # remembered for observe(); it changes no future proposal by itself
        self._last = (full, bucket, k) if len(full) else None  # the last propose's, whichever call that was
        if not k:
            return EMPTY_DRAFT
        probs = None if full.probs is None else full.probs[:k]
        return Draft(full.tokens[:k], probs=probs) if full.is_chain else Draft(full.tokens[:k], full.parents[:k], probs)

    def observe(self, draft: Draft, accepted: int) -> None:
        self.base.observe(draft, accepted)
        if self._last is None:
            return
        full, bucket, sent = self._last
        self._last = None
        self._depth.age()
        self._ranks.age()
        if not full.is_chain:
            self._learn_tree(full, bucket)
            return
        full = full.tokens
        depth = self._depth
        # nodes actually verified: 0..accepted were tried, 0..accepted-1 hit
        tried = min(accepted + 1, sent)
        depth.trials[bucket, :tried] += 1
        depth.hits[bucket, :accepted] += 1
        # the node after an all-accepted (or empty) draft is checked for free against the
        # target's own next token
        if accepted == sent and sent < len(full) and len(self._committed) > sent:
            depth.trials[bucket, sent] += 1
            depth.hits[bucket, sent] += float(self._committed[sent] == full[sent])

    # -- the policy ------------------------------------------------------------------------
    def acceptance(self, bucket: int) -> np.ndarray:
        """Estimated P(node i accepted | nodes before accepted) at this bucket.  # [L]"""
        return self._depth.estimate(bucket)

    def best_length(self, bucket: int, available: int, chain: np.ndarray | None = None) -> int:
        """The draft length (0..available) to send now; ``chain``: the candidate's tokens ([>= available]),
        for the models of acceptance (:meth:`chain_acceptance`)."""
        return self.chain_cut(self.chain_acceptance(bucket, available, chain))

    def chain_acceptance(self, bucket: int, available: int, chain: np.ndarray | None = None) -> np.ndarray:
        """P(node i accepted | nodes before it accepted) for the first ``available`` nodes of the chain
        ``chain`` (its tokens, [>= available]; None: judged by the statistics alone): :meth:`acceptance`,
        where the wrapped drafter reports how its match's occurrences agree with the chain
        (:meth:`chain_evidence`), with the first node's from :mod:`lookup.first_token`
        (``first_token_model``) and the later nodes' from :mod:`lookup.later_nodes` (``chain_model``).  # [available]"""
        estimate = self.acceptance(bucket)[:available]
        if chain is None or not len(estimate) or not (self.first_token_model or self.chain_model):
            return estimate
        if len(chain) < len(estimate):
            raise ValueError(f"chain_acceptance: the chain has {len(chain)} tokens, "
                             f"fewer than the {len(estimate)} nodes judged")
        # a wrapped drafter that returns more than max_tokens is judged on the first max_tokens
        evidence = self.chain_evidence(chain[: len(estimate)])
        if evidence is None:
            return estimate
        estimate = estimate.copy()
        (first_fit, first_other), (later_fit, later_other) = self.model_evidence(
            self.source(bucket), chain[: len(estimate)], self.first_token_model, self.chain_model)
        if self.first_token_model:
            inputs = self.first_token_inputs(evidence, float(estimate[0]), first_other)
            estimate[0] = first_token.first_probability(*inputs, fit=first_fit)
        if self.chain_model and len(estimate) > 1:
            coefficients, intercept = later_nodes.FITS[later_fit]
            estimate[1:] = later_nodes.probabilities(*evidence, later_other, coefficients=coefficients,
                                                     intercept=intercept)
        return estimate

    def model_evidence(self, source: str, chain: np.ndarray, first: bool = True, later: bool = True
                       ) -> tuple[tuple[str, tuple[int, np.ndarray, np.ndarray] | None],
                                  tuple[str, tuple[int, np.ndarray, np.ndarray] | None]]:
        """For a chain from ``source`` ([n] tokens): the fit each model judges it by (:meth:`fit_of`), and
        what the other index says of it for that fit (:meth:`other_evidence`), as ((first node's fit,
        other), (later nodes' fit, other)). ``other`` is None for the context's own fits, which do not
        read it, and for a model not asked for (``first``, ``later``). The other index is asked once,
        and for the first token only where only the first node's fit reads it. A query; the fit
        (``experiments/running/acceptance_fit.py``) reads the same evidence."""
        first_fit, later_fit = self.fit_of(first_token, source), self.fit_of(later_nodes, source)
        first_reads, later_reads = first and first_fit != SOURCES[0], later and later_fit != SOURCES[0]
        other = (self.other_evidence(source, chain if later_reads else chain[:1])
                 if first_reads or later_reads else None)
        return (first_fit, other if first_reads else None), (later_fit, other if later_reads else None)

    def fit_of(self, model: ModuleType, source: str) -> str:
        """The key of ``model.FITS`` (:mod:`lookup.first_token` or :mod:`lookup.later_nodes`) that judges
        a chain from ``source``: the source's own, but a chain from the context while a history is
        kept (``history=True``) takes :data:`lookup.first_token.WITH_HISTORY` where ``model`` has it
        and the wrapped drafter can say what its history says of the chain (``history_agreement``):
        that fit was made on those inputs."""
        if (source == SOURCES[0] and self.history and first_token.WITH_HISTORY in model.FITS
                and hasattr(self.base, "history_agreement")):
            return first_token.WITH_HISTORY
        return source

    def chain_evidence(self, chain: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """How the wrapped drafter's match's earlier occurrences agree with ``chain`` ([n] tokens):
        (match length, support [n], agree [n]) as its ``chain_agreement`` gives them (scratch arrays,
        valid until the next call), over the occurrences of the match the chain is copied after: in
        the context, or in the history for a chain from there. None where it reports none (no
        ``chain_agreement`` method, or no match). A query; the fit
        (``experiments/running/acceptance_fit.py``) reads the same evidence."""
        if not hasattr(self.base, "chain_agreement"):
            return None
        found = self.base.chain_agreement(chain)
        return None if found is None else (self.base.match_length() or 0, *found)

    def other_evidence(self, source: str, chain: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """What the other index says of a chain from ``source`` ([n] tokens): for a chain from the history,
        what the context's own match says (the wrapped drafter's ``context_agreement``); for one from
        the context, what the history's match says (its ``history_agreement``). (that match's length,
        support [n], agree [n]) over its occurrences (scratch arrays, valid until the next call), or
        None where there is no such match, or the wrapped drafter has no such method. A query."""
        ask = getattr(self.base, "context_agreement" if source != SOURCES[0] else "history_agreement", None)
        return None if ask is None else ask(chain)

    @staticmethod
    def first_token_inputs(evidence: tuple[int, np.ndarray, np.ndarray], estimate: float,
                           other: tuple[int, np.ndarray, np.ndarray] | None = None
                           ) -> tuple[int, float, int, float, tuple[int, int, int] | None]:
        """The inputs of :mod:`lookup.first_token`'s model for a chain, from its :meth:`chain_evidence`,
        this drafter's own ``estimate`` of P(first node accepted) and its :meth:`other_evidence`:
        (match length, estimate, occurrences remembered, share of them followed by the chain's first
        token, and (the other index's match length, its occurrences, those followed by the first token)
        or None)."""
        match_length, support, agree = evidence
        occurrences = int(support[0])
        seen = None if other is None else (other[0], int(other[1][0]), int(other[2][0]))
        return match_length, estimate, occurrences, float(agree[0]) / max(occurrences, 1), seen

    def chain_cut(self, acceptance: np.ndarray) -> int:
        """The chain length (0..n) to send now, given ``acceptance[i]`` = P(node i accepted | nodes
        before it accepted) ([n]) and the cost profile: planned over the forwards that follow
        (:func:`lookup.policy.plan_chain`) with ``chain_model``, else the most expected tokens per
        second of this forward alone (:func:`lookup.policy.best_cut`)."""
        if self.chain_model:
            return plan_chain(acceptance, self._cost)
        return best_cut(chain_path_probs(acceptance), self._cost)

    def rank_acceptance(self) -> np.ndarray:
        """Estimated P(the rank-r child is right | its elder siblings are wrong), r >= 1 (index 0 unused).  # [R]"""
        return self._ranks.estimate()

    def node_probabilities(self, bucket: int, parents: np.ndarray) -> np.ndarray:
        """Estimated P(node i is on the accepted path) of a tree ([n] parents, -1 = root).  # [n]"""
        a = self.acceptance(bucket)  # [L]
        c = self.rank_acceptance()  # [R]
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
            r = min(rank, MAX_RANK - 1)
            hit = a_d if rank == 0 else (1.0 - a_d) * miss[r] * c[r]
            prob[i] = hit * (1.0 if p < 0 else prob[p])
        return prob

    def best_size(self, bucket: int, parents: np.ndarray) -> int:
        """The number of leading tree nodes (0..n) with the most expected tokens per second."""
        n = len(parents)
        cost = self._cost if n <= self.max_tokens else forward_costs(self.profile, n, self._context)
        return best_cut(self.node_probabilities(bucket, parents), cost)

    def _learn_tree(self, full: Draft, bucket: int) -> None:
        """Follow the committed tokens down the whole offered tree; at each level reached, note the
        rank of the child that carried the committed token (or that none did)."""
        children: dict[int, list[int]] = {}
        for i, p in enumerate(full.parents.tolist()):
            children.setdefault(p, []).append(i)
        depth, ranks = self._depth, self._ranks
        node = -1
        for level, token in enumerate(self._committed):
            kids = children.get(node)
            if not kids or level >= depth.trials.shape[1]:
                return
            rank = next((r for r, k in enumerate(kids) if full.tokens[k] == token), -1)
            depth.trials[bucket, level] += 1
            depth.hits[bucket, level] += float(rank == 0)
            tried = len(kids) - 1 if rank < 0 else rank  # younger siblings tested before the hit (or all)
            for r in range(1, tried + 1):
                ranks.trials[min(r, MAX_RANK - 1)] += 1
            if rank > 0:
                ranks.hits[min(rank, MAX_RANK - 1)] += 1
            if rank < 0:
                return
            node = kids[rank]

    def match_length(self) -> int | None:
        """The wrapped drafter's match length (None when it reports none)."""
        return self.base.match_length()

    @staticmethod
    def source(bucket: int) -> str:
        """Where the drafts judged by statistics row ``bucket`` (a :meth:`candidate`'s) come from: one of ``SOURCES``."""
        return SOURCES[bucket // (len(BUCKET_EDGES) + 1)]

    def _bucket(self) -> int:
        """The statistics row of the wrapped drafter's current match: its source, then its length."""
        m = self.base.match_length()
        bucket = int(np.searchsorted(BUCKET_EDGES, UNKNOWN_MATCH if m is None else m, side="right"))
        source = self.base.match_source() if hasattr(self.base, "match_source") else SOURCES[0]
        row = SOURCES.index(source) if source in SOURCES else 0
        return bucket + row * (len(BUCKET_EDGES) + 1)

    def params(self) -> dict:
        return {"base": self.base.name, "base_params": self.base.params(), "profile": self.profile.model,
                "max_tokens": self.max_tokens, "prior_strength": self.prior_strength, "decay": self.decay,
                "history": self.history, "first_token_model": self.first_token_model,
                "chain_model": self.chain_model}
