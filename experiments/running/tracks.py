"""Tracks: the regimes a drafter is scored in. A track is a cost profile (what every run is priced
under and every drafter that plans plans under, through its setting: ``Drafter.uses_setting``) and a
draft budget.

    track = track_named("h100-8b")     # or "cpu" (the benchmark's own profile), "flat"
    setting = track.setting_for(sets)

The board scores every entry on every track (``experiments/competition/scoring.py``);
``compare.py --replay --profile NAME`` and ``traces.py explain --profile NAME`` replay on one.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.benchmarks.traces import traces_setting
from experiments.running.oracle import ORACLE_CAP
from experiments.running.replay import DRAFT_BUDGET
from pldcore.cost import CostProfile
from pldcore.hardware import is_profile_file, profile_named, read_profile
from pldcore.setting import Setting

#: a GPU track's draft budget: forwards over up to 64 tokens cost about one, so drafts of up to 63
#: nodes, as long as the oracle's longest run (ORACLE_CAP)
GPU_DRAFT_BUDGET = ORACLE_CAP - 1


@dataclass(frozen=True)
class Track:
    """A regime entries are scored in, with its own rank and oracle: the cost profile every run is
    priced under and every cost-aware drafter plans under, and the most draft nodes per step."""

    name: str
    profile: CostProfile | None  # None: the benchmark's own (its reference CPU profile)
    draft_budget: int

    def setting_for(self, sets) -> Setting:
        """The setting of ``sets`` (:func:`~experiments.benchmarks.traces.traces_setting`) on this track."""
        return traces_setting(sets, self.profile)


#: the benchmark's own profile: what the board ranks by
CPU_TRACK = Track("cpu", None, DRAFT_BUDGET)
#: the GPU tracks (pldcore.hardware): the idealised large GPU, and an 8B model on an H100 by roofline
GPU_TRACKS = tuple(Track(name, profile_named(name), GPU_DRAFT_BUDGET) for name in ("flat", "h100-8b"))
TRACKS = (CPU_TRACK, *GPU_TRACKS)


def track_named(name: str) -> Track:
    """The track called ``name``: a board track, or any other named profile of ``pldcore.hardware``
    (with the GPU draft budget); a PLDError with the close names otherwise."""
    for track in TRACKS:
        if track.name == name.lower():
            return track
    # an unknown name: the registry's one line, with the close names and all of them
    return Track(name.strip().lower(), profile_named(name), GPU_DRAFT_BUDGET)


def profile_arg(value: str | None) -> tuple[CostProfile | None, int]:
    """``--profile`` of compare.py and traces.py: (profile, draft budget) of a named track or profile
    (:func:`track_named`), or of a profile file (the CPU budget); (None, the CPU budget) without one."""
    if not value:
        return None, DRAFT_BUDGET
    if is_profile_file(value):
        return read_profile(value, "--profile"), DRAFT_BUDGET
    track = track_named(value)
    return track.profile, track.draft_budget
