"""The hypothesis profile follows the CI variable: fixed examples in CI, exploration elsewhere;
neither fails an example on its timing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent


def test_ci_profile_is_reproducible():
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None


def test_the_loaded_profile_follows_the_ci_variable():
    loaded = settings()  # the current default: the profile conftest loaded
    if os.environ.get("CI"):
        assert loaded.derandomize and loaded.database is None
    else:
        assert not loaded.derandomize and loaded.database is not None


def test_no_profile_has_a_deadline():
    # the first example of a test may compile numba kernels: seconds, not the default 200 ms
    assert settings.get_profile("ci").deadline is None and settings.get_profile("dev").deadline is None
    assert settings().deadline is None


SLOW_FIRST_EXAMPLE = '''
import time
from hypothesis import given, strategies as st

calls = []

@given(st.integers())
def test_first_example_pays_a_compile(x):
    if not calls:
        time.sleep(0.5)  # what numba's first compile costs an example, and more on a fresh cache
    calls.append(x)
'''


def test_a_slow_first_example_passes_in_a_contributors_run(tmp_path):
    """A fresh process with this conftest, as a contributor's local run starts (no CI variable): an
    example that pays a one-off 0.5 s, more than hypothesis's default deadline, is no failure."""
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_slow.py").write_text(SLOW_FIRST_EXAMPLE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-seed=1",
                           "test_slow.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
