"""Tracks: the settings a drafter is scored in. A track is a cost profile (what every run is priced
under and every drafter that plans plans under, through its setting: ``Drafter.uses_setting``), a draft
budget, a decoding regime (greedy, or sampling: replayed from the benchmark's traces sampled in it) and
the batch the profile prices (a server running B requests at once, ``pldcore.hardware``).

    track = track_named("h100-8b")     # or "cpu" (the benchmark's own profile), "flat", "cpu-t1", "h100-8b-b128"
    sets = load_trace_sets(track.traces(folder))   # the benchmark's traces in the track's regime
    setting = track.setting_for(sets)

The board scores every entry on its tracks (``experiments/competition/scoring.py``);
``compare.py --replay --profile NAME`` and ``traces.py explain --profile NAME`` replay on one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from decoding.generate import DRAFT_BUDGET
from experiments.benchmarks.traces import regime_folder, traces_setting
from pldcore.cost import CostProfile
from pldcore.errors import PLDError
from pldcore.hardware import BATCH_DEPLOYMENTS, is_profile_file, profile_named, read_profile
from pldcore.setting import GREEDY, Regime, Setting

@dataclass(frozen=True)
class Track:
    """A setting entries are scored in, with its own rank and oracle: the cost profile every run is
    priced under and every cost-aware drafter plans under, the most draft nodes per step, the decoding
    regime of the traces it replays, and the batch its profile prices."""

    name: str
    profile: CostProfile | None  # None: the benchmark's own (its reference CPU profile)
    # every board track keeps the default: the oracle's longest run less the token before it (ORACLE_CAP),
    # so that the entries and the oracle they are measured against play by one budget
    draft_budget: int = DRAFT_BUDGET
    regime: Regime = GREEDY
    batch: int = 1

    def traces(self, folder: Path) -> Path:
        """Where this track's traces of the benchmark in ``folder`` live: the folder for greedy, the
        subfolder of its regime for a sampled track (:func:`~experiments.benchmarks.traces.regime_folder`)."""
        return regime_folder(folder, self.regime)

    def setting_for(self, sets) -> Setting:
        """The setting of ``sets`` (:func:`~experiments.benchmarks.traces.traces_setting`) on this track;
        traces of another regime are refused (a track's figures are its regime's)."""
        setting = traces_setting(sets, self.profile, self.batch)
        if setting.regime != self.regime:
            raise PLDError(f"track {self.name} replays traces decoded {self.regime.describe()}; these were decoded "
                           f"{setting.regime.describe()}")
        return setting


#: the benchmark's own profile: what the board ranks by
CPU_TRACK = Track("cpu", None)
#: the GPU tracks (pldcore.hardware): the idealised large GPU, and an 8B model on an H100 by roofline
GPU_TRACKS = tuple(Track(name, profile_named(name)) for name in ("flat", "h100-8b"))
TRACKS = (CPU_TRACK, *GPU_TRACKS)
#: sampling at temperature 1.0 (Spec-Bench's sampled setting; top-p 1.0), one request at a time: on the
#: benchmark's own CPU profile and on the H100 roofline
SAMPLED = Regime(1.0)
SAMPLED_TRACKS = (Track(f"cpu-{SAMPLED.name}", None, regime=SAMPLED),
                  Track(f"h100-8b-{SAMPLED.name}", profile_named("h100-8b"), regime=SAMPLED))
#: a server: the 8B model on an H100 at a batch of 32 and of 128 requests, greedy
BATCH_TRACKS = tuple(Track(name, profile_named(name), batch=BATCH_DEPLOYMENTS[name].batch)
                     for name in BATCH_DEPLOYMENTS)
#: every track a drafter can be replayed on by name
NAMED_TRACKS = (*TRACKS, *SAMPLED_TRACKS, *BATCH_TRACKS)


def track_named(name: str) -> Track:
    """The track called ``name``: a board track, or any other named profile of ``pldcore.hardware``
    (with the draft budget); a PLDError with the close names otherwise."""
    for track in NAMED_TRACKS:
        if track.name == name.strip().lower():
            return track
    # an unknown name: the registry's one line, with the close names and all of them
    return Track(name.strip().lower(), profile_named(name))


def profile_arg(value: str | None) -> tuple[CostProfile | None, int]:
    """``--profile`` of compare.py and traces.py: (profile, draft budget) of a named track or profile
    (:func:`track_named`), or of a profile file; (None, the draft budget) without one."""
    if not value:
        return None, DRAFT_BUDGET
    if is_profile_file(value):
        return read_profile(value, "--profile"), DRAFT_BUDGET
    track = track_named(value)
    return track.profile, track.draft_budget


def track_regime(value: str | None) -> Regime:
    """The regime a ``--profile`` names: a sampled track's (``cpu-t1``, ``h100-8b-t1``), else greedy
    (a profile alone says nothing of the regime: ``--temperature`` does)."""
    if not value or is_profile_file(value):
        return GREEDY
    return track_named(value).regime
