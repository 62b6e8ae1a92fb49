"""The setting of a live target: where a drafter built for it will run, resolved once at the edge.

    setting = target_setting(target)                      # its cached, reference or measured profile
    setting = target_setting(target, profile="h100-8b")   # a named profile (docs/hardware.md) or a file

Used by every entry point that decodes with a real model (``decoding.generate`` given a spec,
transformers' ``generate()`` through :mod:`decoding.integrations.hf`, the board's live check). The
cost profile is, in order: the one given (a :class:`~pldcore.cost.CostProfile`, a named profile or
a file); the cached measurement of this model on this device (:func:`decoding.cost.profile_path`);
the shipped reference profile of this model and device (the embedded model on CPU); a measurement
taken now and cached (``measure=True``); or, without one, the embedded model's reference CPU
profile, said so. Where it came from is said in one line (once per model, device and source).
"""

from __future__ import annotations

import sys
from typing import Callable

from decoding.cost import cost_profile, profile_path, reference_profile
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.hardware import profile_from
from pldcore.setting import GREEDY, Regime, Setting

_SAID: set[tuple[str, str, str]] = set()


def say_once(line: str, key: tuple[str, str, str]) -> None:
    """``line`` on stderr, once per process for ``key``."""
    if key not in _SAID:
        _SAID.add(key)
        print(f"pld-lab: {line}", file=sys.stderr)


def target_profile(target, profile: str | CostProfile | None = None, *, measure: bool = True) -> tuple[CostProfile, str]:
    """(the cost profile drafts for ``target`` are planned under, where it came from): see the module
    docstring. ``target`` is a :class:`~decoding.model_target.ModelTarget` (a name, a device, a model)."""
    if profile is not None:
        return profile_from(profile), (f"named {profile}" if isinstance(profile, str) else "given")
    own = getattr(target, "profile", None)
    if isinstance(own, CostProfile):  # a recorded trace carries the profile of the machine that recorded it
        return own, "the trace's own"
    device = getattr(target, "device", None)
    try:
        path = profile_path(target)
    except AttributeError:  # not a model on a device (a trace): nothing cached or measurable
        return CPU_SMOLLM2, "the embedded model's reference CPU profile (the target has no device to measure)"
    if path.exists():
        cached = CostProfile.load(path)
        if cached.contexts:
            return cached, f"measured on {device}, cached in {path}"
    reference = reference_profile(target)
    if reference is not None:
        return reference, f"the shipped reference profile of {target.name} on {device}"
    if measure:
        print(f"pld-lab: measuring the cost profile of {target.name} on {device} once (cached for next time)",
              file=sys.stderr)
        return cost_profile(target), f"measured on {device}"
    return CPU_SMOLLM2, (f"the embedded model's reference CPU profile: none measured for {target.name} on {device} "
                         "(python experiments/traces.py profile measures one)")


def target_setting(target, profile: str | CostProfile | None = None, regime: Regime = GREEDY, batch: int = 1, *,
                   measure: bool = True, say: Callable[[str, tuple[str, str, str]], None] = say_once) -> Setting:
    """The setting of drafts for ``target``: its model, its profile (:func:`target_profile`), ``regime``
    and ``batch``, with the shipped acceptance fit of that model and regime; says in one line where the
    profile came from."""
    chosen, source = target_profile(target, profile, measure=measure)
    setting = Setting.of(getattr(target, "name", "?"), chosen, regime, batch, profile_source=source)
    say(f"drafts for {setting.model} on {getattr(target, 'device', '?')} are planned under {source}",
        (setting.model, str(getattr(target, "device", "?")), source))
    return setting
