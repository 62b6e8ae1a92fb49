"""Cost profiles: the target's forward time as a function of the tokens verified and the context.

How much dearer a forward over several tokens is than a forward over one depends on the model
and the device. Every forward also costs more the more tokens the KV cache holds (attention
reads all of them), and a run pays once for the prompt's prefill. Cost-aware drafters and the
estimated speedup read this profile instead of assuming any of it. Measuring one is
:func:`decoding.cost.measure_cost_profile`; this module only holds the data.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pldcore.untrusted import read_json

#: forward sizes with a precomputed cost: the hot path is an index, not np.interp
TABLE_SIZE = 257


def _extrapolated(xs: tuple[int, ...], ys, x: float) -> float:
    """Piecewise-linear through (xs, ys); flat below the first point, the last slope past the end."""
    if x <= xs[-1] or len(xs) == 1:
        return float(np.interp(x, xs, ys))
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return float(ys[-1] + slope * (x - xs[-1]))


@dataclass(frozen=True)
class CostProfile:
    """Forward seconds by size (and, when measured, by context), plus prefill seconds by prompt length.

    ``seconds`` is the one-dimensional profile (at one reference context), which is all a profile
    from before the context axis, or a hand-made one, has. ``grid`` adds the context axis:
    ``grid[i][j]`` is a forward over ``sizes[j]`` tokens after ``contexts[i]`` cached tokens, and
    ``prefill[i]`` the prefill of a ``contexts[i]``-token prompt. Between measured points costs are
    linear; past the last size or context they follow the last slope.
    """

    sizes: tuple[int, ...]  # [m] ascending token counts, starting at 1
    seconds: tuple[float, ...]  # [m] forward time for each size, at the reference context
    model: str = "?"
    device: str = "?"
    contexts: tuple[int, ...] = ()  # [c] ascending cache lengths of the grid (empty: no context axis)
    grid: tuple[tuple[float, ...], ...] = ()  # [c][m] forward time by context and size
    prefill: tuple[float, ...] = ()  # [c] time to prefill a prompt of contexts[i] tokens
    prefill_rows: tuple[float, ...] = ()  # [c] the same, with every row's logits and top-k (for drafters that read them)
    #: how noisy the measurement was: the median over points of (median repeat / fastest repeat - 1)
    spread: float | None = None
    measured_at: str = ""  # ISO time of the measurement ("" = unknown)
    host: str = ""  # the machine it was measured on (CPU model and cores, or the GPU)
    load_per_core: float | None = None  # the 1-minute load average per core when the measurement began
    #: how many times one request's drafter seconds count in a step: 1 for one request at a time; a
    #: server drafting a batch of B requests over T threads pays B / T of them (pldcore.hardware)
    drafter_scale: float = 1.0

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.seconds) or not self.sizes:
            raise ValueError("a cost profile needs one time per size, and at least one size")
        if list(self.sizes) != sorted(set(self.sizes)) or self.sizes[0] < 1:
            raise ValueError(f"sizes must be ascending and >= 1, got {self.sizes}")
        if list(self.contexts) != sorted(set(self.contexts)):
            raise ValueError(f"contexts must be ascending, got {self.contexts}")
        if len(self.grid) != len(self.contexts) or any(len(row) != len(self.sizes) for row in self.grid):
            raise ValueError("the grid needs one row per context and one time per size in each row")
        if any(times and len(times) != len(self.contexts) for times in (self.prefill, self.prefill_rows)):
            raise ValueError("prefill times need one time per context")
        sizes = np.arange(TABLE_SIZE)
        object.__setattr__(self, "_table", np.interp(sizes, self.sizes, self.seconds))  # [TABLE_SIZE]
        rows = np.array([np.interp(sizes, self.sizes, row) for row in self.grid]).reshape(len(self.grid), TABLE_SIZE)
        object.__setattr__(self, "_rows", rows)  # [c, TABLE_SIZE]

    def cost(self, n_tokens: int, context: int | None = None) -> float:
        """Seconds for one forward over ``n_tokens`` (the last committed token + the draft).

        With ``context`` (tokens already committed) and a grid, the cost at that context;
        otherwise the reference-context cost.
        """
        if context is None or not self.contexts:
            return self._at(self._table, self.seconds, n_tokens)
        i = bisect.bisect_left(self.contexts, context)
        if i == 0:  # at or below the first measured context
            return self._at(self._rows[0], self.grid[0], n_tokens)
        j = min(i, len(self.contexts) - 1)  # past the last one: extrapolate from the last two rows
        lo, hi = self.contexts[j - 1], self.contexts[j]
        a, b = self._at(self._rows[j - 1], self.grid[j - 1], n_tokens), self._at(self._rows[j], self.grid[j], n_tokens)
        return max(a + (b - a) * (context - lo) / (hi - lo), a)

    def costs(self, n_tokens: int, context: int | None = None) -> np.ndarray:
        """:meth:`cost` of forwards over 1..``n_tokens`` tokens, as one array (the same floats, at
        a fraction of the calls: drafters read it every step).  # [n_tokens] float64"""
        if n_tokens + 1 > TABLE_SIZE:
            return np.array([self.cost(k, context) for k in range(1, n_tokens + 1)])
        if context is None or not self.contexts:
            return self._table[1 : n_tokens + 1].copy()
        i = bisect.bisect_left(self.contexts, context)
        if i == 0:
            return self._rows[0, 1 : n_tokens + 1].copy()
        j = min(i, len(self.contexts) - 1)
        lo, hi = self.contexts[j - 1], self.contexts[j]
        a, b = self._rows[j - 1, 1 : n_tokens + 1], self._rows[j, 1 : n_tokens + 1]
        return np.maximum(a + (b - a) * (context - lo) / (hi - lo), a)

    def _at(self, table: np.ndarray, seconds, n_tokens: int) -> float:
        if n_tokens < TABLE_SIZE:
            return float(table[n_tokens])
        return _extrapolated(self.sizes, seconds, n_tokens)

    def relative(self, n_tokens: int, context: int | None = None) -> float:
        """Cost relative to a one-token forward at the same context (1.0 = as cheap as plain decoding)."""
        return self.cost(n_tokens, context) / self.cost(1, context)

    def prefill_cost(self, prompt_tokens: int, rows: bool = False) -> float:
        """Seconds to prefill a ``prompt_tokens`` prompt (``rows``: with every row's top-k, as for a
        drafter that reads them, when measured); 0.0 when the profile did not measure prefill."""
        times = self.prefill_rows if rows and self.prefill_rows else self.prefill
        if not times:
            return 0.0
        # through the origin below the first measured prompt: an empty prompt costs nothing
        return max(0.0, _extrapolated((0, *self.contexts), (0.0, *times), prompt_tokens))

    @classmethod
    def flat(cls, up_to: int = 64, seconds: float = 1.0, name: str = "flat") -> "CostProfile":
        """The large-GPU regime: verifying up to ``up_to`` tokens costs the same as one."""
        return cls((1, up_to, up_to + 1), (seconds, seconds, seconds * 2), model=name, device="ideal")

    def to_json(self) -> str:
        data = asdict(self)
        if self.drafter_scale == 1.0:  # one request at a time: stored as every profile before batches was
            del data["drafter_scale"]
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> "CostProfile":
        """Read a profile; profiles saved before the context axis existed load without one."""
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict) -> "CostProfile":
        """A profile from :meth:`to_json`'s fields, parsed and checked (:func:`check_profile`: what a
        file holds is a profile only when every time is a positive finite number that never falls
        as a forward verifies more tokens or follows a longer context); a ValueError says what is not."""
        if not isinstance(data, dict):
            raise ValueError(f"a cost profile is a JSON object, not {type(data).__name__}")
        return check_profile(cls(
            tuple(data["sizes"]), tuple(data["seconds"]), data.get("model", "?"), data.get("device", "?"),
            tuple(data.get("contexts", ())), tuple(tuple(row) for row in data.get("grid", ())),
            tuple(data.get("prefill", ())), tuple(data.get("prefill_rows", ())), data.get("spread"),
            data.get("measured_at", ""), data.get("host", ""), data.get("load_per_core"),
            float(data.get("drafter_scale", 1.0)),
        ))

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "CostProfile":
        """The profile in file ``path``: a regular file of at most :data:`MAX_PROFILE_BYTES` (never
        ``/dev/zero`` read to the end), JSON nested at most 64 deep, checked by :meth:`from_dict`.
        A PLDError says why a file is not readable, a ValueError why its content is not a profile."""
        return cls.from_dict(read_json(path, MAX_PROFILE_BYTES, "cost profile"))


#: the largest profile file read: a measured one is ~3 kB
MAX_PROFILE_BYTES = 1 << 20


def check_profile(profile: CostProfile) -> CostProfile:
    """``profile`` when its sizes are integers and every time in it (forwards, the grid, prefills)
    is a positive finite number that never falls along a row (more tokens verified) or a column (a
    longer context), as measuring makes them (``decoding.cost``); else a ValueError naming the first
    that is not. A zero, negative or NaN cost would divide by zero, drop the speedup column, or make
    a drafter that plans by cost draft nothing."""
    if any(isinstance(n, bool) or not isinstance(n, int) for n in (*profile.sizes, *profile.contexts)):
        raise ValueError("sizes and contexts must be integers")
    rows = {"seconds": profile.seconds, **{f"grid[{i}]": row for i, row in enumerate(profile.grid)},
            "prefill": profile.prefill, "prefill_rows": profile.prefill_rows}
    for name, row in rows.items():
        for value in row:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} holds {value!r}: every time must be a positive finite number of seconds")
        if any(b < a for a, b in zip(row, row[1:])):
            raise ValueError(f"{name} falls somewhere: a forward over more tokens (or a longer prompt) never costs less")
    for j, column in enumerate(zip(*profile.grid)):
        if any(b < a for a, b in zip(column, column[1:])):
            raise ValueError(f"the grid's column {j} falls: a forward after a longer context never costs less")
    scale = profile.drafter_scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"drafter_scale holds {scale!r}: a positive finite number (1 for one request at a time)")
    return profile


#: The embedded SmolLM2-135M on a 2-core CPU (fp32), measured on our dev machine with
#: ``python experiments/traces.py profile --remeasure`` (2026-11-29): a sensible default before
#: a profile of the user's own target exists.
CPU_SMOLLM2 = CostProfile(
    sizes=(1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64),
    seconds=(0.0346, 0.0400, 0.0431, 0.0557, 0.0591, 0.0668, 0.0741, 0.0773, 0.0773, 0.0779, 0.0864, 0.1048, 0.1241),
    model="SmolLM2-135M-Instruct (reference)",
    device="cpu (2 cores)",
    contexts=(128, 512, 1024, 2048),
    grid=(
        (0.0316, 0.0343, 0.0360, 0.0492, 0.0531, 0.0594, 0.0661, 0.0705, 0.0705, 0.0711, 0.0762, 0.0921, 0.1106),
        (0.0346, 0.0400, 0.0431, 0.0557, 0.0591, 0.0668, 0.0741, 0.0773, 0.0773, 0.0779, 0.0864, 0.1048, 0.1241),
        (0.0388, 0.0476, 0.0499, 0.0631, 0.0673, 0.0740, 0.0849, 0.0867, 0.0867, 0.0912, 0.0987, 0.1187, 0.1416),
        (0.0467, 0.0606, 0.0634, 0.0760, 0.0808, 0.0901, 0.0987, 0.1029, 0.1029, 0.1084, 0.1247, 0.1439, 0.1735),
    ),
    prefill=(0.1262, 0.4385, 0.8490, 2.0200),
    prefill_rows=(0.1985, 0.6727, 1.2447, 3.2432),
    measured_at="2026-11-29",
    host="our 2-core dev machine (x86-64, no GPU), nothing else running",
)
