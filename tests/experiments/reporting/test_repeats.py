"""repeats.py: a figure over rounds as its median and range, quartiles, and the verdict rule; tables.py's cell of one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from experiments.reporting.repeats import Spread, quartiles, verdict
from experiments.reporting.tables import spread_cell

ROOT = Path(__file__).resolve().parents[3]


def test_a_verdict_only_where_the_ranges_do_not_overlap():
    assert verdict([10, 11, 12], [8, 9, 9.5]) == "faster"
    assert verdict([8, 9, 9.5], [10, 11, 12]) == "slower"
    assert verdict([10, 11, 12], [9, 10.5, 11]) == "within noise"
    assert verdict([10], [8, 9]) is None  # one round: no spread to judge by


def test_median_and_range_and_quartiles():
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4) and Spread.of([]) is None
    q = quartiles([0.0, 1.0, 2.0, 3.0, 4.0])
    assert (q.median, q.lo, q.hi, q.n) == (2.0, 1.0, 3.0, 5) and quartiles([]) is None


def test_a_spread_is_one_cell_in_the_tables_number_format():
    assert spread_cell(Spread(22.5, 20.0, 1234.5, 3)) == "22.5 (20-1,234)"
    assert spread_cell(Spread(0.75, 0.625, 0.875, 4), scale=100) == "75 (62.5-87.5)"
    assert spread_cell(None) == "-"


def test_it_is_standard_library_only():
    # experiments/bench_vllm.py imports it where vLLM's engine processes must not load numba
    code = "import sys, experiments.reporting.repeats; print(sorted(m for m in sys.modules if m.split('.')[0] in {'numba', 'lookup', 'numpy', 'torch'}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
