"""The base every other package stands on: errors, names, cost and hardware profiles, acceptance fits
as data, and the setting a drafter runs in. Imports numpy and nothing of ours above it: no drafter,
no numba, no torch (``tests/pldcore/test_imports.py``).

    from pldcore import PLDError, CostProfile, Setting, Regime
"""

from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.names import unknown_name
from pldcore.setting import GREEDY, Regime, Setting, model_key, reference_setting

__all__ = ["CPU_SMOLLM2", "CostProfile", "GREEDY", "PLDError", "Regime", "Setting", "model_key",
           "reference_setting", "unknown_name"]
