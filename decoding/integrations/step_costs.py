"""An engine's step time, fitted online from the steps it runs: ``fixed + per_row * rows + per_node * nodes``.

The vLLM proposer's batch rule (:mod:`decoding.integrations.vllm`) prices a draft node against a step
and a row. A hand fit of those prices holds for one model on one machine; the engine's own steps say
what they cost wherever it runs. Each observation is one decoding step: its wall time, the rows it
decoded and the draft nodes it verified. The fit is a decayed least-squares fit pulled towards the
hand fit's shape (its ratios, scaled to the observed times) by ``strength`` pseudo-steps on each
coefficient: what the steps do not tell apart (a step's fixed cost from a row's, in a steady batch)
is settled by that pull, what they vary is learnt from them. A step much slower than expected (the
machine busy with other work) counts as only ``CLIP`` times the expected time.
"""

from __future__ import annotations

import numpy as np

from pldcore.cost import CostProfile

#: a step's time counts as at most this many times what the fit expects (one slow step, one outlier)
CLIP = 3.0
#: steps observed before the fit replaces the hand fit (the first ones set the scale: their median)
MIN_STEPS = 8
#: how far (a factor either way) the fitted price of a node may stray from the hand fit's
BOUND = 8.0


class StepCosts:
    """The engine's step time by rows and draft nodes, fitted online (see the module docstring)."""

    def __init__(self, fixed_tokens: float, row_tokens: float, strength: float = 5.0, decay: float = 0.995) -> None:
        """
        Args:
            fixed_tokens, row_tokens: the hand fit, in units of one draft node: a step's fixed cost and
                one row's (the prior shape of the fit).
            strength: how many steps the hand fit's shape is worth on each coefficient (> 0).
            decay: weight a step's observation keeps per later step, in (0, 1].
        """
        if not (strength > 0 and 0 < decay <= 1):
            raise ValueError(f"strength must be > 0 and decay in (0, 1], got {strength!r}, {decay!r}")
        self.shape = np.array([fixed_tokens, row_tokens, 1.0])  # [3] the hand fit's shape
        self.strength, self.decay = float(strength), float(decay)
        self.xx = np.zeros((3, 3))  # decayed sum of x x^T, x = (1, rows, nodes)
        self.xy = np.zeros(3)  # decayed sum of x * seconds
        self.steps = 0
        self._first: list[tuple[np.ndarray, float]] = []  # the first MIN_STEPS steps, held until the scale is known
        self.scale = 0.0  # seconds per unit of the hand fit (the first steps' median)
        self.fit: np.ndarray | None = None  # [3] seconds: fixed, per row, per node (None: too few steps)

    def add(self, rows: int, nodes: int, seconds: float) -> None:
        """One decoding step of ``rows`` rows that verified ``nodes`` draft nodes took ``seconds``."""
        x = np.array([1.0, rows, nodes])
        self.steps += 1
        if self.steps < MIN_STEPS:
            self._first.append((x, seconds))
            return
        if self._first:
            first, self._first = self._first + [(x, seconds)], []
            self.scale = float(np.median([y / float(u @ self.shape) for u, y in first]))
            for u, y in first:
                self._observe(u, y)
        else:
            self._observe(x, seconds)
        self.fit = self._solve()

    def _observe(self, x: np.ndarray, seconds: float) -> None:
        expected = float(x @ self.fit) if self.fit is not None else self.scale * float(x @ self.shape)
        seconds = min(seconds, CLIP * expected)
        self.xx = self.decay * self.xx + np.outer(x, x)
        self.xy = self.decay * self.xy + x * seconds

    def _solve(self) -> np.ndarray:
        """The penalised least-squares fit, in seconds ([3]: fixed, per row, per node)."""
        n = self.xx[0, 0]
        mean = self.xx[0] / n  # [3] the features' means (1 first)
        # the data's information on each coefficient is its feature's spread: the prior gets
        # `strength` steps' worth of it (at least a spread of 1 for a count the steps never varied)
        spread = np.maximum(np.diag(self.xx) / n - mean ** 2, 1.0)  # [3]
        spread[0] = 1.0
        weight = self.strength * spread
        fit = np.linalg.solve(self.xx + np.diag(weight), self.xy + weight * self.scale * self.shape)
        return np.maximum(fit, 0.0)

    def tokens(self) -> tuple[float, float] | None:
        """(fixed_tokens, row_tokens) as the steps say, in units of one draft node; None before
        ``MIN_STEPS`` steps. The node's price stays within ``BOUND`` times the hand fit's (a few
        noisy steps can make a node look free or ruinous; the engines we know are not that far off)."""
        if self.fit is None:
            return None
        fixed, row, node = self.fit
        node = max(min(max(node, self.scale / BOUND), self.scale * BOUND), 1e-12)
        return fixed / node, max(row / node, 1e-6)


#: forward sizes of a profile made from step prices (one request's verified tokens)
PROFILE_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def step_profile(fixed_tokens: float, row_tokens: float, batch: int, model: str = "?") -> CostProfile:
    """One request's forward cost by the tokens it verifies, in a step of ``batch`` rows priced
    ``fixed + row * rows + nodes`` (in units of one draft node): each row sends ``k - 1`` nodes, and a
    request pays its share of the step. What a drafter that plans (``adaptive``) plans under inside the
    engine: the prices the engine's steps taught (:meth:`StepCosts.tokens`), at the batch it serves."""
    batch = max(int(batch), 1)
    seconds = tuple((fixed_tokens + batch * (row_tokens + k - 1)) / batch for k in PROFILE_SIZES)
    return CostProfile(PROFILE_SIZES, seconds, model=f"{model} (the engine's step prices, batch {batch})",
                       device="vLLM engine", host="learnt from the engine's own steps")
