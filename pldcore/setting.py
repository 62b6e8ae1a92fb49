"""Where a drafter will run: the target model, its cost profile, the decoding regime, the batch it is
priced at, and the acceptance fit that goes with them. One value, resolved once at the edge.

    setting = Setting.of("SmolLM2-135M-Instruct", CPU_SMOLLM2)                       # greedy, batch 1
    setting = Setting.of("gemma-3-270m-q4_k_m", profile_named("h100-8b"), Regime(temperature=1.0))
    drafter = lookup.parse_drafter("adaptive:history=true").build(setting)

Every entry point (each CLI, each board track, ``decoding.generate``, transformers' ``generate()``,
the vLLM proposer) builds one :class:`Setting` from what it knows and hands it down; a drafter that
plans (``Drafter.uses_setting``) takes it in its constructor. Nothing below the edge guesses a
default: there is no "no profile" or "no fit" below it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath, PureWindowsPath

from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.fits import DEFAULT_MODEL, GREEDY_REGIME, Fits, fits_for


_REGIME_NAME = re.compile(r"t(?P<t>[0-9.e+-]+?)(?:-k(?P<k>[0-9]+))?(?:-p(?P<p>[0-9.e+-]+))?")


@dataclass(frozen=True)
class Regime:
    """How the target picks its tokens: greedy (``temperature == 0``), or sampling after temperature,
    top-k (0: off) and top-p (1.0: off), as transformers' warpers apply them."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.temperature, (int, float)) or not math.isfinite(self.temperature) or self.temperature < 0:
            problems.append(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            problems.append(f"top_k must be an int >= 0, got {self.top_k!r}")
        if not isinstance(self.top_p, (int, float)) or not 0.0 < self.top_p <= 1.0:
            problems.append(f"top_p must be in (0, 1], got {self.top_p!r}")
        if problems:
            raise PLDError("; ".join(problems))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def name(self) -> str:
        """``"greedy"`` or ``"t1.0"`` with ``-k<top_k>`` / ``-p<top_p>`` where they are on: what a fit
        file's ``regime`` records."""
        if self.greedy:
            return GREEDY_REGIME
        return (f"t{self.temperature:g}" + (f"-k{self.top_k}" if self.top_k else "")
                + (f"-p{self.top_p:g}" if self.top_p < 1.0 else ""))

    @classmethod
    def from_name(cls, name: str) -> "Regime":
        """The regime :attr:`name` names (``"greedy"``, ``"t1"``, ``"t0.7-k50-p0.9"``); a PLDError otherwise."""
        if name == GREEDY_REGIME:
            return cls()
        match = _REGIME_NAME.fullmatch(str(name))
        if match is None:
            raise PLDError(f"{name!r} names no regime (greedy, or t<temperature>[-k<top_k>][-p<top_p>])")
        try:
            regime = cls(float(match["t"]), int(match["k"] or 0), float(match["p"] or 1.0))
        except (PLDError, ValueError) as exc:
            raise PLDError(f"{name!r} names no regime ({exc})") from None
        if regime.greedy or regime.name != name:
            raise PLDError(f"{name!r} names no regime (write it as {regime.name!r})")
        return regime

    def describe(self) -> str:
        """``"greedy"`` or ``"temperature 1.0, top-k 50, top-p 0.9"`` (what a figure must name)."""
        if self.greedy:
            return "greedy"
        return f"temperature {self.temperature:g}, top-k {self.top_k}, top-p {self.top_p:g}"


GREEDY = Regime()


def model_key(name: str) -> str:
    """A target model's name as fits and settings name it: the last part of a path or hub id
    (``HuggingFaceTB/SmolLM2-135M-Instruct`` -> ``SmolLM2-135M-Instruct``), without a ``.gguf`` suffix."""
    text = str(name).strip().rstrip("/\\")
    last = PureWindowsPath(PurePosixPath(text).name).name or text
    return last[: -len(".gguf")] if last.lower().endswith(".gguf") else last


@dataclass(frozen=True)
class Setting:
    """Where a drafter runs: everything a drafter may plan by, resolved.

    ``fits`` is compared by what it was fitted on, not by its arrays.
    """

    model: str  # the target model (:func:`model_key`): whose acceptance fit applies
    profile: CostProfile  # what every forward costs on the hardware it runs on
    regime: Regime  # greedy or a sampling regime
    batch: int  # the batch the drafts are priced at (1: one request at a time)
    fits: Fits = field(compare=False)  # the acceptance models' fit for this model and regime
    #: where ``profile`` came from, in a few words (``"named h100-8b"``, ``"measured on cuda:0, cached"``)
    profile_source: str = field(default="given", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.profile, CostProfile):
            raise TypeError(f"a setting's profile must be a CostProfile, got {type(self.profile).__name__}")
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise PLDError(f"batch must be an int >= 1, got {self.batch!r}")

    @classmethod
    def of(cls, model: str, profile: CostProfile, regime: Regime = GREEDY, batch: int = 1,
           fits: Fits | str | Path | dict | None = None, profile_source: str = "given") -> "Setting":
        """A setting for ``model`` (any name of it: a path, a hub id) under ``profile``; the acceptance
        fit is ``fits`` (a :class:`Fits`, a fit file or its content) or else the shipped fit of this
        model and regime (:func:`pldcore.fits.fits_for`)."""
        key = model_key(model)
        return cls(key, profile, regime, batch, _read_fits(fits) if fits is not None else fits_for(key, regime.name),
                   profile_source)

    def with_profile(self, profile: CostProfile, source: str = "given") -> "Setting":
        """The same setting on other hardware (a board track)."""
        return replace(self, profile=profile, profile_source=source)

    def to_dict(self) -> dict:
        """JSON-able fields (the fit's content included): what :meth:`from_dict` reads back, as the
        competition's sandbox sends a setting to its child."""
        return {"model": self.model, "profile": json.loads(self.profile.to_json()),
                "regime": {"temperature": self.regime.temperature, "top_k": self.regime.top_k,
                           "top_p": self.regime.top_p},
                "batch": self.batch, "fits": self.fits.to_dict(), "profile_source": self.profile_source}

    @classmethod
    def from_dict(cls, data: dict) -> "Setting":
        return cls(str(data["model"]), CostProfile.from_dict(data["profile"]), Regime(**data["regime"]),
                   int(data["batch"]), Fits.from_dict(data["fits"]), str(data.get("profile_source", "given")))

    def describe(self) -> str:
        """One line: the model, the profile and where it came from, the regime, the batch, the fit."""
        batch = "" if self.batch == 1 else f", batch {self.batch}"
        return (f"{self.model}, {self.regime.describe()}{batch}; profile {self.profile.model} on {self.profile.device} "
                f"({self.profile_source}); fit {self.fits.describe()}")


def _read_fits(fits: Fits | str | Path | dict) -> Fits:
    if isinstance(fits, Fits):
        return fits
    if isinstance(fits, dict):
        return Fits.from_dict(fits)
    if isinstance(fits, (str, Path)):
        return Fits.load(fits)
    raise TypeError(f"fits must be a fit file, its content (a dict) or Fits, got {type(fits).__name__}")


def reference_setting(profile: CostProfile | None = None) -> Setting:
    """The embedded model, greedy, one request at a time, on the 2-core CPU its reference profile was
    measured on: what a drafter built with no setting of its own (``lookup.create``) plans for. With
    ``profile``: the same on that hardware (``reference_setting(profile_named("h100-8b"))``)."""
    if profile is not None:
        return Setting.of(DEFAULT_MODEL, profile)
    return Setting.of(DEFAULT_MODEL, CPU_SMOLLM2, profile_source="the embedded model's reference CPU profile")
