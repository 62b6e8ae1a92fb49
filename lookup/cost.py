"""Cost profiles: the target's forward time as a function of the number of tokens verified.

On a CPU a forward over 9 tokens costs ~1.5x a forward over one; on a big GPU model ~1x.
Cost-aware drafters and the estimated speedup read this profile instead of assuming either.
Measuring one is :func:`decoding.cost.measure_cost_profile`; this module only holds the data.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CostProfile:
    """Forward seconds for ``sizes[i]`` tokens; linear in between, flat-extrapolated past the ends."""

    sizes: tuple[int, ...]  # [m] ascending token counts, starting at 1
    seconds: tuple[float, ...]  # [m] forward time for each size
    model: str = "?"
    device: str = "?"

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.seconds) or not self.sizes:
            raise ValueError("a cost profile needs one time per size, and at least one size")
        if list(self.sizes) != sorted(set(self.sizes)) or self.sizes[0] < 1:
            raise ValueError(f"sizes must be ascending and >= 1, got {self.sizes}")
        # a lookup table for the sizes drafts actually have: the hot path is an index, not np.interp
        table = np.interp(np.arange(0, 257), self.sizes, self.seconds)
        object.__setattr__(self, "_table", table)

    def cost(self, n_tokens: int) -> float:
        """Seconds for one forward over ``n_tokens`` (the last committed token + the draft)."""
        if n_tokens < len(self._table):
            return float(self._table[n_tokens])
        slope = (self.seconds[-1] - self.seconds[-2]) / (self.sizes[-1] - self.sizes[-2]) if len(self.sizes) > 1 else 0.0
        return float(self.seconds[-1] + slope * (n_tokens - self.sizes[-1]))

    def relative(self, n_tokens: int) -> float:
        """Cost relative to a one-token forward (1.0 = as cheap as plain decoding)."""
        return self.cost(n_tokens) / self.cost(1)

    @classmethod
    def flat(cls, up_to: int = 64, seconds: float = 1.0, name: str = "flat") -> "CostProfile":
        """The large-GPU regime: verifying up to ``up_to`` tokens costs the same as one."""
        return cls((1, up_to, up_to + 1), (seconds, seconds, seconds * 2), model=name, device="ideal")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "CostProfile":
        data = json.loads(text)
        return cls(tuple(data["sizes"]), tuple(data["seconds"]), data.get("model", "?"), data.get("device", "?"))

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "CostProfile":
        return cls.from_json(Path(path).read_text())


#: The embedded SmolLM2-135M on a 2-core CPU (fp32, ~600-token cache), measured on our dev
#: machine: a sensible default before a profile of the user's own target exists.
CPU_SMOLLM2 = CostProfile(
    sizes=(1, 2, 4, 8, 11, 16, 32, 64),
    seconds=(0.061, 0.100, 0.091, 0.095, 0.124, 0.123, 0.156, 0.25),
    model="SmolLM2-135M-Instruct (reference)",
    device="cpu (2 cores)",
)
