"""The competition's tests score entries on the CPU track alone unless they test the tracks: each
GPU track is one more sandboxed replay per entry (test_tracks.py covers them)."""

from __future__ import annotations

import pytest

from experiments.competition import entries


@pytest.fixture(autouse=True)
def cpu_track_only(monkeypatch):
    monkeypatch.setattr(entries, "BUILD_TRACKS", ())
