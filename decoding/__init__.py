"""Targets, acceptance rules, the speculative loop, model loading and cost profiles."""

from decoding.generate import GenerationResult, Stats, StepRecord, generate
from decoding.loading import cache_dir, default_device, load_model
from decoding.model_target import ModelTarget
from decoding.target import Scores, Target

__all__ = [
    "GenerationResult",
    "ModelTarget",
    "Scores",
    "Stats",
    "StepRecord",
    "Target",
    "cache_dir",
    "default_device",
    "generate",
    "load_model",
]
