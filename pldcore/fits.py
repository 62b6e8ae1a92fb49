"""Fits of the acceptance models as data: one JSON file per (target model, benchmark).

    fits = Fits.load(path)                 # or fits_for(model, regime): the shipped fit of that model
    coefficients, intercept = fits.first["context"]

A fit file records what it was fitted on (the model, the benchmark's hash, the command) and with
(the priors and settings of the drafter replayed to collect its rows), so that a fit made stale
by a change of either is caught (``tests/lookup/acceptance/test_fits.py``). It is written by
``python experiments/traces.py fit-acceptance --write``, coefficients rounded to
:data:`DECIMALS` places so that the file regenerates byte for byte.

A fit is made on one target model's traces in one decoding regime (``regime``: ``"greedy"``, the
only one recorded so far, or a sampling regime's name, :attr:`pldcore.setting.Regime.name`). A
target model without a fit of its own gets the embedded model's (:data:`DEFAULT_MODEL`): the
features are the index's counts, not the model's, so that fit transfers (``docs/acceptance.md``).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pldcore.errors import PLDError
from pldcore.untrusted import clean, parse_json, read_bytes

FORMAT = 1
#: the shipped fits, ``<model>.<benchmark hash>.json`` each
FOLDER = Path(__file__).resolve().parent / "fits"
#: the model whose fit a model without one gets: the embedded one
DEFAULT_MODEL = "SmolLM2-135M-Instruct"
DECIMALS = 3
#: the models fitted (a fit file has one table of fits per model): the first node, the later nodes
MODELS = ("first", "later")
#: how many features each model reads (``lookup.acceptance.first_token.FEATURES``, ``later_nodes.FEATURES``;
#: a test keeps them equal): a fit of another length would fail in a matrix product mid-replay
FEATURES = {"first": 8, "later": 10}
#: the largest fit file read: a shipped one is ~6 kB
MAX_FITS_BYTES = 1 << 20
#: the regime of a fit file that names none (every file before regimes were recorded was fitted greedy)
GREEDY_REGIME = "greedy"


@dataclass(frozen=True)
class Fits:
    """The fitted (coefficients [F], intercept) of each acceptance model, per fit name: ``first`` and
    ``later`` map a fit name (``"context"``, ``"history"``, ``"context, with a history"``) to one."""

    model: str  # the target model whose traces these were fitted on
    benchmark: str  # the hash of the benchmark (lookup-free: experiments.benchmarks.traces.benchmark_hash)
    settings: dict  # the priors and drafter settings of the replay that collected the rows
    first: dict[str, tuple[np.ndarray, float]]
    later: dict[str, tuple[np.ndarray, float]]
    rows: dict = field(default_factory=dict)  # rows fitted on, per model and fit
    path: Path | None = None  # where it was read from (None: built in memory)
    regime: str = GREEDY_REGIME  # the decoding regime of the traces fitted on

    def to_dict(self) -> dict:
        """The file's content as a JSON-able dict (coefficients rounded to :data:`DECIMALS` places):
        what :meth:`from_dict` reads back, and what ``adaptive:fits=...`` takes in place of a path."""
        def table(fits: dict) -> dict:
            return {name: {"coefficients": [round(float(c), DECIMALS) + 0.0 for c in coefficients],
                           "intercept": round(float(intercept), DECIMALS) + 0.0}
                    for name, (coefficients, intercept) in fits.items()}
        # a greedy fit does not say so: files written before regimes were recorded read the same
        regime = {} if self.regime == GREEDY_REGIME else {"regime": self.regime}
        return {"format": FORMAT, "model": self.model, "benchmark": self.benchmark, **regime,
                "written_by": "python experiments/traces.py fit-acceptance --write",
                "settings": self.settings, "rows": self.rows,
                "first": table(self.first), "later": table(self.later)}

    def to_json(self) -> str:
        """The file's text: stable key order, rounded coefficients, one line per fit."""
        # lists of numbers on one line each: a fit reads as a row, and a diff shows which changed
        return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]",
                      json.dumps(self.to_dict(), indent=1)) + "\n"

    @classmethod
    def from_dict(cls, data: dict, path: Path | None = None) -> "Fits":
        """The fits a fit file's content (:meth:`to_dict`) holds; anything else is a :class:`PLDError`."""
        where = path or "fits"
        try:
            if data.get("format") != FORMAT:
                raise PLDError(f"{where}: fit format {clean(repr(data.get('format')), 40)}, this version reads {FORMAT}")
            tables = {model: {str(name): _fit(fit, model) for name, fit in data[model].items()} for model in MODELS}
            return cls(str(data["model"]), str(data["benchmark"]), dict(data["settings"]), tables["first"],
                       tables["later"], dict(data.get("rows", {})), path, str(data.get("regime", GREEDY_REGIME)))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PLDError(f"{where}: not a fit file of the acceptance models ({type(exc).__name__}: "
                           f"{clean(exc, 200)})") from None

    @classmethod
    def from_json(cls, text: str | bytes, path: Path | None = None) -> "Fits":
        """The fits in a fit file's text: JSON nested at most 64 deep, checked as :meth:`from_dict` checks."""
        try:
            data = parse_json(text, "its text", "JSON value")
        except PLDError as exc:
            raise PLDError(f"{path or 'fits'}: not a fit file of the acceptance models ({exc})") from None
        return cls.from_dict(data, path)

    @classmethod
    def load(cls, path: str | Path) -> "Fits":
        """The fits in ``path``; a missing or malformed file is a :class:`PLDError`."""
        return _load(Path(path).resolve())

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path

    def describe(self) -> str:
        regime = "" if self.regime == GREEDY_REGIME else f", {self.regime}"
        return f"{self.model} on benchmark {self.benchmark}{regime}" + (f" ({self.path.name})" if self.path else "")


@functools.lru_cache(maxsize=16)
def _load(path: Path) -> Fits:
    # drafters are built once per case: the file is read once per process (and must not change under it)
    if not os.path.lexists(path):
        raise PLDError(f"cannot read the fits {path}: no such file")
    # a regular file of at most MAX_FITS_BYTES: a link to /dev/zero is refused, not read to the end
    return Fits.from_json(read_bytes(path, MAX_FITS_BYTES, "fit file"), path)


def _fit(fit: dict, model: str) -> tuple[np.ndarray, float]:
    """One fit of ``model`` ("first" or "later"): its coefficients, one finite number per feature
    the model reads (:data:`FEATURES`), and a finite intercept; else a ValueError saying which."""
    coefficients, intercept = fit["coefficients"], fit["intercept"]
    if not isinstance(coefficients, list) or len(coefficients) != FEATURES[model]:
        count = len(coefficients) if isinstance(coefficients, list) else type(coefficients).__name__
        raise ValueError(f"a {model} fit has {FEATURES[model]} coefficients, one per feature; this one has {count}")
    values = [*coefficients, intercept]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in values):
        raise ValueError(f"a {model} fit's coefficients and intercept must be finite numbers")
    return np.array(coefficients, dtype=np.float64), float(intercept)


def file_name(model: str, benchmark: str) -> str:
    """``<model>.<benchmark>.json``, the model's name made safe for a file name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
    return f"{safe}.{benchmark}.json"


def shipped() -> list[Path]:
    """The fit files that ship with pld-lab, sorted."""
    return sorted(FOLDER.glob("*.json"))


def fits_for(model: str, regime: str = GREEDY_REGIME) -> Fits:
    """The shipped fit of the target model ``model`` (its exact name, as
    :func:`pldcore.setting.model_key` gives it) in ``regime``: that model's fit in that regime, else its
    greedy fit, else the embedded model's (:data:`DEFAULT_MODEL`) in that regime, else its greedy one."""
    fits = [Fits.load(path) for path in shipped()]
    for wanted_model, wanted_regime in ((model, regime), (model, GREEDY_REGIME), (DEFAULT_MODEL, regime)):
        found = next((f for f in fits if f.model == wanted_model and f.regime == wanted_regime), None)
        if found is not None:
            return found
    return default_fits()


def default_fits() -> Fits:
    """The embedded model's shipped fit."""
    for path in shipped():
        fits = Fits.load(path)
        if fits.model == DEFAULT_MODEL and fits.regime == GREEDY_REGIME:
            return fits
    raise PLDError(f"no shipped fit of {DEFAULT_MODEL} in {FOLDER}: reinstall pld-lab, or write one with "
                   "python experiments/traces.py fit-acceptance --write")
