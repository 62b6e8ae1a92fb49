"""The hypothesis profile follows the CI variable: fixed examples in CI, exploration elsewhere."""

from __future__ import annotations

import os

from hypothesis import settings


def test_ci_profile_is_reproducible():
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None


def test_the_loaded_profile_follows_the_ci_variable():
    loaded = settings()  # the current default: the profile conftest loaded
    if os.environ.get("CI"):
        assert loaded.derandomize and loaded.database is None
    else:
        assert not loaded.derandomize and loaded.database is not None
