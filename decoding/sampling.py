"""Exact sampled verification: temperature, top-k, top-p and rejection-sampling acceptance.

Three layers, each testable alone:

* :func:`process_logits` turns the target's logits into the distribution it samples from,
  applying temperature, top-k and top-p exactly as transformers' warpers do.
* :func:`sample_rows`, :func:`accept_deterministic` and :func:`accept_stochastic` are pure
  functions over probabilities and explicit uniforms: hand them uniforms and they decide.
* :class:`SamplingRule` (built by :func:`sampling_rule`) is the per-generation rule that
  :func:`decoding.generate` calls once per step. It owns the one ``torch.Generator``.

Randomness, in a fixed order. One generator per generation, seeded by ``seed``, on the CPU
whatever the target's device (its draws are moved there): the same seed gives the same uniforms on
every device, so a run sampled on a CPU is reproduced on a GPU up to float noise, and a sampled
trace recorded on one replays what the other commits. Output position ``t`` (0 = the first generated token) owns a pair of
uniforms ``(u_accept[t], u_sample[t])``; the generator fills them ``BLOCK`` positions at a
time (the j-th call is ``torch.rand(BLOCK, 2)``, float64, for positions ``j*BLOCK ..``), so the
pair of a position never depends on how many steps or draft tokens came before it. A step
at position ``t`` verifying ``k`` nodes reads the pairs of ``t .. t+k`` and moves on by the
tokens it committed; the pairs of rejected positions are read again by the next step.

* ``u_sample[t]`` picks the token committed at ``t`` by inverse CDF of the distribution it is
  drawn from (the target's, or a residual).
* ``u_accept[t]`` is the acceptance test of a draft node at ``t`` that carries ``q``.

For deterministic drafts (lookup drafters) the committed token at position ``t`` is then
``inverse_cdf(p_t, u_sample[t])`` whatever was drafted (see :func:`accept_deterministic`), so
every such drafter reproduces, token for token, plain sampling (drafter ``none``) with the
same seed, up to the last-bit differences between a batched and a one-token forward.

Token trees (:meth:`SamplingRule.tree`, layout in :mod:`decoding.tree`):

* Deterministic trees: at each node on the path draw ``y = inverse_cdf(p, u_sample[t])`` and
  descend to the (first) child carrying ``y``; stop and commit ``y`` when none does. Exact for
  the same reason as the chain rule, and again the committed tokens do not depend on the draft:
  a deterministic tree reproduces ``none`` with the same seed too.
* Trees that carry q: SpecInfer's multi-step speculative sampling (see :func:`accept_tree_stochastic`).
  Sibling ``j >= 1`` at position ``t`` needs an acceptance uniform of its own: it comes from
  :meth:`UniformStream.extra`, a generator seeded by (seed, t), so it too depends on the
  position only.
"""

from __future__ import annotations

import math
import secrets
from typing import Callable

import numpy as np
import torch

from decoding.acceptance import accept_greedy
from decoding.inputs import check_temperature, check_top_k, check_top_p
from decoding.target import Scores
from decoding.tree import TreeLayout, walk
from lookup.base import Draft
from pldcore.errors import PLDError

#: positions whose uniforms one generator call draws
BLOCK = 256
#: columns of the uniform stream
ACCEPT, SAMPLE = 0, 1
#: largest uniform used: 1 - 2**-52 keeps u * total below total in float64
_U_MAX = 1.0 - 2.0**-52


# -- the target's distribution --------------------------------------------------------------


def check_sampling_params(temperature: float, top_k: int, top_p: float) -> None:
    """Raise :class:`PLDError` (one line) unless the parameters describe a distribution."""
    if check_temperature(temperature) == 0:
        raise PLDError(f"temperature must be a finite number > 0 to sample (0 = greedy), got {temperature!r}")
    check_top_k(top_k)
    check_top_p(top_p)


def process_logits(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Sampling distribution of each row of ``logits`` ([n, V]) -> probabilities [n, V] float32.

    Temperature, then top-k, then top-p, then softmax: the order and the arithmetic of
    transformers' ``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper``
    (``min_tokens_to_keep=1``), so ties are kept or cut exactly as there. ``top_k=0`` and
    ``top_p=1`` are off. Removed tokens get probability exactly 0.
    """
    check_sampling_params(temperature, top_k, top_p)
    return _warp_softmax(logits, temperature, top_k, top_p)


def _warp_softmax(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """:func:`process_logits` without the parameter checks (the rule checks them once)."""
    scores = logits.float()  # float32, like transformers' generate
    if temperature != 1.0:  # transformers skips its warper at 1.0 too
        scores = scores / float(temperature)
    if top_k:
        k = min(int(top_k), scores.shape[-1])
        # ties with the k-th value stay in, as in transformers
        scores = scores.masked_fill(scores < torch.topk(scores, k)[0][..., -1:], -math.inf)
    if top_p < 1.0:
        # ascending sort; drop the low tail whose mass is <= 1 - top_p, always keep the top token
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_remove = cumulative <= (1 - top_p)
        sorted_remove[..., -1:] = False
        remove = sorted_remove.scatter(-1, sorted_indices, sorted_remove)
        scores = scores.masked_fill(remove, -math.inf)
    return scores.softmax(dim=-1)


# -- pure rules over probabilities and uniforms ----------------------------------------------


def sample_rows(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sample of each row: row ``i`` of ``probs`` ([n, V], rows with positive mass,
    need not be normalised) picked by ``u[i]`` in [0, 1) -> ids [n] int64.

    Token ``j`` of row ``i`` is chosen iff ``u[i] * total`` lies in ``[cdf[j-1], cdf[j])``. A
    zero-probability token is never chosen, on any device: its cdf entry is forced equal to
    the one before it (a parallel cumsum may round it apart), and ``u`` is capped at
    ``1 - 2**-52`` so that ``u * total < total`` in float64 (a shift of at most 2**-53).
    """
    cdf = probs.cumsum(dim=-1, dtype=torch.float64)  # [n, V]
    # non-decreasing and flat over zeros, whatever order the scan added in
    cdf = cdf.masked_fill(probs == 0, -math.inf).cummax(dim=-1).values
    x = u.clamp(max=_U_MAX).reshape(-1, 1) * cdf[:, -1:]  # [n, 1] float64 (promoted)
    return torch.searchsorted(cdf, x, right=True).reshape(-1)


def accept_deterministic(probs: torch.Tensor, draft: np.ndarray, u_sample: torch.Tensor) -> tuple[int, int]:
    """Verify a deterministic chain ``draft`` ([k]) against the target's ``probs`` ([k+1, V]).

    The rule: accept node ``i`` with probability ``p_i(d_i)``; at the first rejection commit a
    token drawn from ``p_i`` with ``d_i`` removed and renormalised; if every node is accepted,
    commit a bonus token drawn from ``p_k``. Returns ``(accepted, next_token)``.

    Implemented as a coupling with one uniform per position: draw ``x_i = inverse_cdf(p_i,
    u_sample[i])`` ([k+1]) and accept while ``x_i == d_i``. Then P(accept) = ``p_i(d_i)``, and
    given a rejection ``x_i`` is distributed as ``p_i`` without ``d_i``, renormalised: the same
    rule. The correction or bonus is ``x`` at the first mismatch, so the committed tokens do
    not depend on the draft at all (``p(d) = 1`` always accepts, ``p(d) = 0`` never does).
    """
    sampled = sample_rows(probs, u_sample).cpu().numpy()  # [k+1], the step's one transfer
    return accept_greedy(np.asarray(draft, dtype=np.int64), sampled)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Weights of ``norm(max(0, p - q))`` per row ([k, V] each; not normalised, which
    :func:`sample_rows` does not need). Rows where ``max(0, p - q)`` has no mass fall back to ``p``.

    A row has no residual mass only when ``p <= q`` everywhere, i.e. ``p == q``: then every
    node is accepted and the row is never used, except through float rounding.
    """
    r = (p - q).clamp_min(0)
    return torch.where(r.sum(dim=-1, keepdim=True) > 0, r, p)


def accept_stochastic(
    probs: torch.Tensor, draft: np.ndarray, q: torch.Tensor, u_accept: torch.Tensor, u_sample: torch.Tensor
) -> tuple[int, int]:
    """Verify a chain whose node ``i`` was drawn from ``q[i]`` ([k, V], rows sum to 1).

    Standard speculative sampling: accept node ``i`` iff ``u_accept[i] * q_i(d_i) < p_i(d_i)``
    (probability ``min(1, p/q)``, no division); at the first rejection commit a token drawn
    from ``norm(max(0, p_i - q_i))`` with ``u_sample[i]``; if all are accepted commit a bonus
    drawn from ``p_k`` with ``u_sample[k]``. Returns ``(accepted, next_token)``.
    Every row is sampled in one vectorised pass and read back in one transfer.
    """
    k = len(draft)
    d = torch.as_tensor(np.asarray(draft, dtype=np.int64), device=probs.device).reshape(k, 1)  # [k, 1]
    p_d, q_d = probs[:k].gather(1, d).reshape(k), q.gather(1, d).reshape(k)  # [k] each
    accept = u_accept * q_d < p_d  # [k] (float64 after promotion)
    candidates = sample_rows(torch.cat([residual(probs[:k], q), probs[k:]]), u_sample)  # [k+1]
    out = torch.cat([accept.long(), candidates]).tolist()
    rejected = [i for i in range(k) if not out[i]]
    accepted = rejected[0] if rejected else k
    return accepted, int(out[k + accepted])


def accept_tree_deterministic(
    probs: torch.Tensor, layout: TreeLayout, tokens: np.ndarray, u_sample: torch.Tensor
) -> tuple[np.ndarray, int]:
    """Verify a deterministic tree: ``probs`` [n+1, V] the target's law after each input,
    ``tokens`` [n+1] the inputs, ``u_sample`` [n+1] each input's uniform (its position's).

    Draw ``x_i = inverse_cdf(p_i, u_sample[i])`` for every input in one pass and walk from the
    root into the child carrying ``x`` (:func:`decoding.tree.walk`). Every committed token is a
    draw from the target's law at its position, whatever the tree. Returns (nodes [a], next_token).
    """
    sampled = sample_rows(probs, u_sample).cpu().numpy()  # [n+1], the step's one transfer
    return walk(layout, tokens, sampled)


def accept_tree_stochastic(
    probs: torch.Tensor,
    layout: TreeLayout,
    tokens: np.ndarray,
    q: torch.Tensor,
    u_accept: Callable[[int, int], list[float]],
    u_sample: torch.Tensor,
) -> tuple[np.ndarray, int]:
    """Verify a tree whose nodes were sampled from the q they carry (SpecInfer's multi-candidate rule).

    ``probs`` [n+1, V] the target's law after each input; ``tokens`` [n+1] the inputs; ``q`` [n, V]
    row ``i`` the law draft node ``i`` was drawn from (rows sum to 1); ``u_accept(depth, m)`` the
    ``m`` acceptance uniforms of the children at that depth (one per sibling, in order);
    ``u_sample`` [D+1] the sampling uniform per depth.

    At a node with target law ``p`` and children ``c_1 .. c_m`` (in draft order): accept ``c_j``
    iff ``u_j * q_j(x_j) < p(x_j)`` (probability ``min(1, p/q)``) and descend; otherwise set
    ``p <- norm(max(0, p - q_j))`` and try ``c_{j+1}``. When every child is rejected (or there is
    none) commit a draw from the current ``p``.

    Assumptions (those of SpecInfer's Theorem 4.2): given the path to a node, its children's
    tokens were drawn independently (with replacement: duplicate siblings are fine), child ``j``
    from ``q_j``, the ``q`` its own row states; the number and order of the children were fixed
    before the draw (they may not depend on the tokens drawn); each child's subtree was drawn the
    same way given the child. Then the committed token at each position has exactly the target's
    law. A node that has children but is rejected never matters; a chain is the case m = 1.
    Returns (accepted nodes [a], next_token).
    """
    nodes: list[int] = []
    at = 0
    while True:
        p = probs[at].double()
        p = p / p.sum()
        kids = layout.children[at]
        chosen = -1
        if kids:
            us = u_accept(int(layout.depths[at]), len(kids))
            for j, child in enumerate(kids):
                x = int(tokens[child])
                qj = q[child - 1].double()
                if us[j] * float(qj[x]) < float(p[x]):
                    chosen = child
                    break
                r = (p - qj).clamp_min(0)
                mass = float(r.sum())
                if mass > 0:  # p == q leaves no residual, and the child was accepted surely (but for rounding)
                    p = r / mass
        if chosen < 0:
            token = int(sample_rows(p.unsqueeze(0), u_sample[int(layout.depths[at])].reshape(1))[0])
            return np.asarray(nodes, dtype=np.int64), token
        nodes.append(chosen - 1)
        at = chosen


# -- the per-generation rule -----------------------------------------------------------------


class UniformStream:
    """Uniform pairs indexed by output position, from one ``torch.Generator`` (see module doc).

    Block ``j`` (positions ``j*block ..``) is always the generator's ``j``-th draw, so a
    position's pair does not depend on which positions were read before. Positions are read
    in non-decreasing order; blocks behind the current position are dropped.
    """

    def __init__(self, seed: int, device: torch.device | str, block: int = BLOCK) -> None:
        self.seed = int(seed)
        self.device = torch.device(device)
        # on the CPU for every device: CUDA's generator draws another sequence from the same seed
        self.generator = torch.Generator(device="cpu")
        self.generator.manual_seed(seed)
        self.block = block
        self._first = 0  # block index of self._buf[0]
        self._drawn = 0  # blocks drawn so far
        self._buf = torch.empty(0, 2, dtype=torch.float64, device=self.device)  # [m, 2]

    def take(self, position: int, n: int) -> torch.Tensor:
        """Uniforms of positions ``position .. position+n-1``: [n, 2] float64, columns ACCEPT, SAMPLE."""
        first = position // self.block
        if first < self._first:
            start = self._first * self.block
            raise ValueError(f"position {position} was already dropped (the stream starts at {start})")
        last = (position + max(n, 1) - 1) // self.block
        if self._drawn <= last:
            fresh = [
                torch.rand(self.block, 2, generator=self.generator, dtype=torch.float64).to(self.device)
                for _ in range(last + 1 - self._drawn)
            ]
            self._buf = torch.cat([self._buf, *fresh])
            self._drawn = last + 1
        if first > self._first:
            self._buf = self._buf[(first - self._first) * self.block :]
            self._first = first
        offset = position - self._first * self.block
        return self._buf[offset : offset + n]

    def extra(self, position: int, n: int) -> list[float]:
        """``n`` more acceptance uniforms for ``position`` (the second and later siblings of a
        tree that carries q): a generator of their own, seeded by (seed, position)."""
        if n <= 0:
            return []
        return np.random.default_rng([self.seed, position]).random(n).tolist()


class SamplingRule:
    """``rule(draft, scores) -> (accepted, next_token)`` for one sampled generation.

    Holds the parameters, the uniform stream and the output position; create one per generation.
    ``seed`` is the seed actually used (drawn at random when none was given).
    """

    def __init__(self, temperature: float, top_k: int, top_p: float, seed: int | None, device) -> None:
        check_sampling_params(temperature, top_k, top_p)
        if seed is None:
            seed = secrets.randbits(63)
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise PLDError(f"seed must be an integer in [0, 2**64) or None, got {seed!r}")
        self.temperature, self.top_k, self.top_p, self.seed = float(temperature), int(top_k), float(top_p), int(seed)
        self.device = torch.device(device)
        self.stream = UniformStream(self.seed, self.device)
        self.position = 0  # output position of the next committed token

    @torch.inference_mode()  # nothing here needs autograd, and its bookkeeping costs time on every step
    def __call__(self, draft: Draft, scores: Scores) -> tuple[int, int]:
        if not draft.is_chain:
            raise PLDError("this rule verifies chains; verify a tree with rule.tree(draft, scores)")
        if scores.logits is None:
            raise PLDError("sampling needs a target that returns logits; this one only knows its argmax")
        k = len(draft)
        if scores.logits.shape[0] != k + 1:
            raise PLDError(f"the target scored {scores.logits.shape[0]} positions for a draft of {k} nodes")
        probs = _warp_softmax(scores.logits, self.temperature, self.top_k, self.top_p)  # [k+1, V]
        u = self.stream.take(self.position, k + 1)  # [k+1, 2], on the target's device
        if draft.probs is None:
            accepted, token = accept_deterministic(probs, draft.tokens, u[:, SAMPLE])
        else:
            q = _draft_q(draft, probs.shape[-1]).to(probs.device)  # [k, V]
            accepted, token = accept_stochastic(probs, draft.tokens, q, u[:k, ACCEPT], u[:, SAMPLE])
        self.position += accepted + 1
        return accepted, token

    @torch.inference_mode()
    def tree(self, draft: Draft, scores: Scores) -> tuple[np.ndarray, int]:
        """Verify a token tree: returns (accepted nodes root to leaf [a], the token committed after them)."""
        if scores.logits is None:
            raise PLDError("sampling needs a target that returns logits; this one only knows its argmax")
        n = len(draft)
        if scores.logits.shape[0] != n + 1:
            raise PLDError(f"the target scored {scores.logits.shape[0]} positions for a draft of {n} nodes")
        layout = TreeLayout.of(draft.parents)
        tokens = np.concatenate([[-1], draft.tokens])  # [n+1]; input 0 is never compared
        probs = _warp_softmax(scores.logits, self.temperature, self.top_k, self.top_p)  # [n+1, V]
        depth = int(layout.depths.max())
        u = self.stream.take(self.position, depth + 1)  # [D+1, 2], by depth
        if draft.probs is None:
            at = torch.as_tensor(layout.depths, device=u.device)
            nodes, token = accept_tree_deterministic(probs, layout, tokens, u[at, SAMPLE])
        else:
            q = _draft_q(draft, probs.shape[-1]).to(probs.device)  # [n, V]
            accepts = u[:, ACCEPT].tolist()
            start = self.position

            def u_accept(d: int, m: int) -> list[float]:
                return [accepts[d], *self.stream.extra(start + d, m - 1)]

            nodes, token = accept_tree_stochastic(probs, layout, tokens, q, u_accept, u[:, SAMPLE])
        self.position += len(nodes) + 1
        return nodes, token

    def __repr__(self) -> str:
        return (
            f"SamplingRule(temperature={self.temperature}, top_k={self.top_k}, top_p={self.top_p}, "
            f"seed={self.seed}, device={self.device})"
        )


def _draft_q(draft: Draft, vocab_size: int) -> torch.Tensor:
    """``draft.probs`` checked and normalised: [k, V] float32.

    A node drawn from ``q`` has ``q(d) > 0``; anything else means the stated q is not the one
    the drafter sampled from, and the acceptance test would no longer be exact.
    """
    q = draft.probs
    if q.shape[1] != vocab_size:
        raise PLDError(f"draft probabilities cover {q.shape[1]} ids, the target's vocabulary has {vocab_size}")
    if not np.isfinite(q).all() or (q < 0).any():
        raise PLDError("draft probabilities must be finite and >= 0")
    mass = q.sum(axis=1, keepdims=True, dtype=np.float64)
    picked = q[np.arange(len(draft)), draft.tokens]
    if (picked <= 0).any():
        i = int(np.flatnonzero(picked <= 0)[0])
        raise PLDError(f"draft node {i} (id {int(draft.tokens[i])}) has probability 0 under the q it states")
    return torch.from_numpy((q / mass).astype(np.float32))


def sampling_rule(temperature: float, top_k: int, top_p: float, seed: int | None, device) -> SamplingRule:
    """The acceptance rule of one sampled generation (see :class:`SamplingRule`)."""
    return SamplingRule(temperature, top_k, top_p, seed, device)
