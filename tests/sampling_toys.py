"""Stand-ins for the sampling tests: a fast n-gram target, drafters that carry q or always miss,
and the goodness-of-fit statistics (chi-square, total variation) used to check distributions.
"""

from __future__ import annotations

import abc
import math
from typing import Sequence

import numpy as np
import torch

from decoding.model_target import ModelTarget
from decoding.sampling import process_logits
from decoding.target import Scores, Target
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from toys import tiny_llama


class NgramTarget(Target):
    """A tiny language model in its own right: the logits of the next token are a fixed random
    function of the last two tokens (a trigram table), so a forward costs microseconds.

    ``cycle`` tokens get a ``boost`` to their logit after the two cycle tokens before them, so a
    prompt that repeats the cycle is continued often, but not always: lookup drafters propose
    and get both accepted and rejected.
    """

    device = torch.device("cpu")
    max_length = None

    def __init__(
        self, vocab_size: int = 8, seed: int = 0, scale: float = 1.5, cycle: Sequence[int] = (), boost: float = 2.5
    ) -> None:
        self.vocab_size = vocab_size
        self.eos_token_ids = frozenset()
        rng = np.random.default_rng(seed)
        table = rng.normal(0.0, scale, size=(vocab_size, vocab_size, vocab_size))  # [a, b, next]
        c = list(cycle)
        for i in range(len(c)):
            table[c[i - 2], c[i - 1], c[i]] += boost
        self.table = torch.as_tensor(table, dtype=torch.float32)  # [V, V, V]
        self._flat = self.table.reshape(vocab_size * vocab_size, vocab_size)  # [V*V, V]
        self._context: list[int] = []  # committed tokens except the last one ("the cache")
        self._pending_tokens = np.zeros(0, dtype=np.int64)  # inputs of the last score()

    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> np.ndarray | None:
        self._context = [int(t) for t in prompt_ids][:-1]
        if not top_k:
            return None
        seq = [0, *self._context]  # the prompt's rows, as score() would give them
        rows = np.asarray(seq[:-1], dtype=np.int64) * self.vocab_size + np.asarray(seq[1:], dtype=np.int64)
        return self._flat[torch.from_numpy(rows)].topk(min(top_k, self.vocab_size), dim=-1).indices.numpy()

    def score(self, tokens: np.ndarray) -> Scores:
        seq = self._context[-1:] if self._context else [0]  # a 1-token prompt sees id 0 before it
        pairs = np.asarray(seq + tokens.tolist(), dtype=np.int64)
        rows = pairs[:-1] * self.vocab_size + pairs[1:]  # [n] (token before, token) per input
        logits = self._flat[torch.from_numpy(rows)]  # [n, V]
        self._pending_tokens = tokens
        return Scores(argmax=logits.argmax(dim=-1).numpy(), logits=logits)

    def keep(self, n: int) -> None:
        self._context.extend(int(t) for t in self._pending_tokens[:n])

    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        # the token before input i is its parent's (input 0: the last cached one)
        seq = self._context[-1:] if self._context else [0]
        up = np.concatenate([[-1], np.asarray(parents, dtype=np.int64) + 1])  # [n+1] parent input
        tokens = np.asarray(tokens, dtype=np.int64)
        before = np.where(up < 0, seq[0], tokens[np.maximum(up, 0)])
        logits = self._flat[torch.from_numpy(before * self.vocab_size + tokens)]  # [n+1, V]
        self._pending_tokens = tokens
        return Scores(argmax=logits.argmax(dim=-1).numpy(), logits=logits)

    def keep_path(self, inputs: np.ndarray) -> None:
        self._context.extend(int(t) for t in self._pending_tokens[np.asarray(inputs)])

    def processed(self, temperature: float, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
        """Next-token probabilities after the warpers for every (a, b): [V, V, V] float64."""
        probs = process_logits(self._flat, temperature, top_k, top_p).double().numpy()
        return probs.reshape(self.table.shape)

    def sequence_distribution(self, prompt: Sequence[int], temperature: float, top_k: int = 0, top_p: float = 1.0):
        """Exact probability of each 3-token continuation of ``prompt``: [V, V, V] float64."""
        p = self.processed(temperature, top_k, top_p)
        a, b = prompt[-2], prompt[-1]
        p1 = p[a, b]  # [x1]
        p2 = p[b]  # [x1, x2]
        p3 = p  # [x1, x2, x3]
        return p1[:, None, None] * p2[:, :, None] * p3


def small_llama(vocab_size: int = 8, seed: int = 0, sharpen: float = 3.0) -> ModelTarget:
    """A one-layer Llama with hidden size 16: a real transformer forward, still cheap."""
    return tiny_llama(vocab_size, seed=seed, layers=1, hidden=16, heads=2, max_positions=128, sharpen=sharpen,
                      name="small-llama")


@torch.inference_mode()
def llama_sequence_distribution(target: ModelTarget, prompt: Sequence[int], temperature: float, top_k=0, top_p=1.0):
    """Exact probability of each 3-token continuation, from full (cache-free) forwards: [V, V, V]."""
    V = target.vocab_size
    x1, x2 = np.meshgrid(np.arange(V), np.arange(V), indexing="ij")
    seqs = np.concatenate([np.tile(prompt, (V * V, 1)), x1.reshape(-1, 1), x2.reshape(-1, 1)], axis=1)
    logits = target.model(input_ids=torch.as_tensor(seqs)).logits.float()  # [V*V, L+2, V]
    L = len(prompt)
    p1 = process_logits(logits[0, L - 1 : L], temperature, top_k, top_p).double().numpy()[0]  # [V]
    p2 = process_logits(logits[::V, L], temperature, top_k, top_p).double().numpy()  # [x1, x2]
    p3 = process_logits(logits[:, L + 1], temperature, top_k, top_p).double().numpy().reshape(V, V, V)
    return p1[:, None, None] * p2[:, :, None] * p3


class OneDrawPerContext(Drafter):
    """A random drafter that draws one draft per context (``_draw``), however often propose asks.

    Repeated proposes agree, as the contract wants, and a budget cut takes a prefix: for chains
    drawn node by node and trees listed parents-first, a prefix is itself such a draw.
    """

    _draft: Draft | None = None

    def reset(self, prompt: Sequence[int]) -> None:
        super().reset(prompt)
        self._draft = None

    def extend(self, tokens: Sequence[int]) -> None:
        super().extend(tokens)
        self._draft = None

    @abc.abstractmethod
    def _draw(self) -> Draft:
        """A fresh draft for the current context."""

    def propose(self, budget: int) -> Draft:
        if budget <= 0:
            return EMPTY_DRAFT
        if self._draft is None:
            self._draft = self._draw()
        d = self._draft
        cut = lambda a: None if a is None else a[:budget]  # noqa: E731
        return Draft(d.tokens[:budget], cut(d.parents), probs=cut(d.probs))


class QDrafter(OneDrawPerContext):
    """Samples its chain from a distribution ``q`` it states in ``Draft.probs``.

    ``q`` for the next node is a mix of ``weights`` (a [V, V, V] table of the last two tokens,
    e.g. the target's own unprocessed probabilities) and a random table of its own, so it agrees
    with the target sometimes, too often (q > p) and too rarely (q < p), and puts mass where a
    top-k target puts none.
    """

    name = "q-test"

    def __init__(self, weights: np.ndarray, length: int = 3, mix: float = 0.5, seed: int = 0) -> None:
        super().__init__()
        V = weights.shape[-1]
        rng = np.random.default_rng(seed + 1)
        own = rng.dirichlet(np.full(V, 0.5), size=(V, V))  # [V, V, V]
        weights = np.asarray(weights, dtype=np.float64)
        self.table = mix * weights / weights.sum(-1, keepdims=True) + (1 - mix) * own  # [V, V, V]
        self._cdf = self.table.cumsum(-1)  # [V, V, V], for fast inverse-CDF draws
        self.length = length
        self._rng = np.random.default_rng(seed)
        self._draft: Draft | None = None  # the chain for the current context, drawn on first use

    def _draw(self) -> Draft:
        # One chain per context, however often propose asks: repeated proposes agree, as the
        # contract wants. A prefix of a chain drawn node by node is itself such a draw, so
        # cutting it to the budget keeps q exact.
        a, b = (self.context[-2:] if len(self.context) > 1 else [0, *self.context])
        tokens, rows = [], []
        for u in self._rng.random(self.length):
            cdf = self._cdf[a, b]
            t = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(cdf) - 1)
            tokens.append(t)
            rows.append((a, b))
            a, b = b, t
        return Draft(np.asarray(tokens), probs=self.table[tuple(np.asarray(rows).T)])


class QTreeDrafter(QDrafter):
    """Samples a token tree from the q it states: every node's children are drawn independently
    (with replacement) from ``q`` of the node's last two tokens, ``widths[d]`` children per node at
    depth ``d`` (the root is depth 0). Nodes come breadth first, so a budget cut keeps a fixed shape."""

    name = "q-tree-test"

    def __init__(self, weights: np.ndarray, widths: Sequence[int] = (2, 2), mix: float = 0.5, seed: int = 0) -> None:
        super().__init__(weights, length=len(widths), mix=mix, seed=seed)
        self.widths = list(widths)

    def _draw(self) -> Draft:
        a, b = (self.context[-2:] if len(self.context) > 1 else [0, *self.context])
        tokens, parents, rows = [], [], []
        level = [(-1, a, b)]  # (node, token before, token)
        for width in self.widths:
            nxt = []
            for node, x, y in level:
                cdf = self._cdf[x, y]
                for u in self._rng.random(width):
                    t = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(cdf) - 1)
                    tokens.append(t)
                    parents.append(node)
                    rows.append((x, y))
                    nxt.append((len(tokens) - 1, y, t))
            level = nxt
        return Draft(np.asarray(tokens), np.asarray(parents), probs=self.table[tuple(np.asarray(rows).T)])


class WrongDrafter(Drafter):
    """Proposes, node by node, the token the target likes least (outside any top-k): every node
    should be rejected, and the corrections must still have the target's distribution."""

    name = "wrong-test"

    def __init__(self, table: torch.Tensor, length: int = 3) -> None:
        super().__init__()
        self.worst = table.argmin(dim=-1).numpy()  # [V, V]
        self.length = length

    def propose(self, budget: int) -> Draft:
        n = min(budget, self.length)
        if n <= 0:
            return EMPTY_DRAFT
        a, b = self.context[-2:] if len(self.context) > 1 else [0, *self.context]
        tokens = []
        for _ in range(n):
            t = int(self.worst[a, b])
            tokens.append(t)
            a, b = b, t
        return Draft(np.asarray(tokens))


# -- goodness of fit ------------------------------------------------------------------------


def chi_square(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson's chi-square goodness of fit: (statistic, degrees of freedom, p-value).

    Cells whose expected count is below ``min_expected`` are pooled into one cell (so the
    chi-square approximation holds); cells of probability 0 must be empty and are dropped.
    The p-value is the regularized upper incomplete gamma Q(df/2, stat/2) (no scipy needed).
    """
    counts, probs = counts.reshape(-1).astype(np.float64), probs.reshape(-1)
    n = counts.sum()
    if counts[probs == 0].sum():
        return math.inf, 0, 0.0  # an impossible outcome was sampled
    expected = probs * n
    small = (expected < min_expected) & (probs > 0)
    big = expected >= min_expected
    obs = list(counts[big])
    exp = list(expected[big])
    if small.any():
        obs.append(counts[small].sum())
        exp.append(expected[small].sum())
    obs_a, exp_a = np.asarray(obs), np.asarray(exp)
    stat = float(((obs_a - exp_a) ** 2 / exp_a).sum())
    df = len(obs_a) - 1
    half = torch.tensor([df / 2, stat / 2], dtype=torch.float64)
    p = float(torch.special.gammaincc(half[0], half[1]))
    return stat, df, p


def total_variation(counts: np.ndarray, probs: np.ndarray) -> float:
    """0.5 * sum |empirical - exact|."""
    counts = counts.reshape(-1).astype(np.float64)
    return 0.5 * float(np.abs(counts / counts.sum() - probs.reshape(-1)).sum())


def expected_total_variation(probs: np.ndarray, n: int) -> float:
    """E[TV] of an exact sampler with ``n`` samples: each cell's |p_hat - p| is about normal with
    sd sqrt(p(1-p)/n), whose mean absolute value is sd * sqrt(2/pi)."""
    p = probs.reshape(-1)
    return 0.5 * math.sqrt(2 / math.pi) * float(np.sqrt(p * (1 - p) / n).sum())


class RandomTreeDrafter(OneDrawPerContext):
    """Proposes a random duplicate-free token tree (no two siblings share a token), new each step.

    Nodes are added one at a time under a random earlier node (the root included) that has fewer
    than ``max_children`` children. With ``truth`` (prompt + the target's greedy output), each
    node copies the true token of its position with probability ``hit`` when no sibling has it yet,
    so deep paths that are not the first branch get accepted too.
    """

    name = "random-tree-test"

    def __init__(self, vocab_size: int, nodes: int = 8, max_children: int = 3, seed: int = 0,
                 truth: Sequence[int] | None = None, hit: float = 0.5) -> None:
        super().__init__()
        self.vocab_size, self.nodes, self.max_children, self.hit = vocab_size, nodes, max_children, hit
        self.truth = None if truth is None else [int(t) for t in truth]
        self._rng = np.random.default_rng(seed)
        self._draft: Draft | None = None

    def _draw(self) -> Draft:
        rng, at = self._rng, len(self.context)
        tokens: list[int] = []
        parents: list[int] = []
        depth: list[int] = []
        kids: dict[int, list[int]] = {-1: []}
        on_truth: dict[int, bool] = {-1: True}
        for i in range(self.nodes):
            open_ = [p for p in [-1, *range(i)] if len(kids[p]) < min(self.max_children, self.vocab_size)]
            if not open_:
                break
            p = int(rng.choice(open_))
            d = 1 if p < 0 else depth[p] + 1
            taken = {tokens[c] for c in kids[p]}
            true = self.truth[at + d - 1] if self.truth is not None and at + d - 1 < len(self.truth) else None
            if true is not None and on_truth[p] and true not in taken and rng.random() < self.hit:
                t = true
            else:
                t = int(rng.integers(self.vocab_size))
                while t in taken:  # fewer siblings than ids: this ends
                    t = int(rng.integers(self.vocab_size))
            tokens.append(t)
            parents.append(p)
            depth.append(d)
            kids[p].append(i)
            kids[i] = []
            on_truth[i] = on_truth[p] and t == true
        return Draft(np.asarray(tokens, dtype=np.int64), np.asarray(parents, dtype=np.int32))
