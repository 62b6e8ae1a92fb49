"""The competition's tests score entries on the CPU track alone unless they test the tracks: each
GPU track is one more sandboxed replay per entry (test_tracks.py covers them)."""

from __future__ import annotations

import pytest

from experiments.competition import entries


@pytest.fixture(autouse=True)
def cpu_track_only(monkeypatch):
    monkeypatch.setattr(entries, "BUILD_TRACKS", ())


@pytest.fixture(autouse=True)
def own_key_file(tmp_path, monkeypatch):
    """Each test submits with a key of its own (owners.py), never the account's real key file."""
    monkeypatch.setenv("PLD_LAB_KEY_FILE", str(tmp_path / "submitter.key"))
