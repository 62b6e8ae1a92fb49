"""export.py: result rows as CSV and Parquet hold every field and the derived values the tables show;
a missing Parquet library is one line, found before any work."""

from __future__ import annotations

import csv
import json
import sys

import pytest
from test_plots import REPLAY, fake_rows  # tests/experiments/reporting is on sys.path (pytest's default import mode)

from experiments.reporting import export
from pldcore.errors import PLDError


def rows():
    live = fake_rows(prompts=1, methods=("hf-greedy", "unfold"))
    return live + [REPLAY(r) for r in fake_rows(prompts=1, methods=("voting",))]


def test_a_record_holds_every_field_then_the_derived_values():
    got = export.row_records(rows())
    assert list(got[0]) == [*export.FIELDS, *export.DERIVED]
    assert export.FIELDS[:4] == ("case", "category", "turn", "method")
    for record, row in zip(got, rows()):
        assert record["tau"] == pytest.approx(row.tau) and record["est_speedup"] == row.est_speedup
        assert record["group"] == row.group and record["replay"] == row.replay
        assert json.loads(record["params"]) == row.params and json.loads(record["accepted_lengths"]) == row.accepted_lengths


def test_csv_round_trips_with_a_replays_estimate_beside_its_empty_speedup(tmp_path):
    path = export.write_csv(rows(), tmp_path / "sub" / "rows.csv")
    with path.open(newline="") as f:
        read = list(csv.DictReader(f))
    assert len(read) == len(rows()) and list(read[0]) == list(export.COLUMNS)
    replayed = [r for r in read if r["method"] == "voting"]
    originals = [r for r in rows() if r.method == "voting"]
    assert all(r["speedup"] == "" and r["replay"] == "True" for r in replayed)  # nothing timed
    assert [float(r["est_speedup"]) for r in replayed] == pytest.approx([r.est_speedup for r in originals])
    live = next(r for r in read if r["method"] == "unfold")
    assert float(live["speedup"]) > 0 and live["replay"] == "False"


def test_parquet_holds_the_same_columns_and_values(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = export.write_parquet(rows(), tmp_path / "rows.parquet")
    table = pq.read_table(path).to_pylist()
    assert table == export.row_records(rows())


def test_parquet_without_a_library_is_one_line_before_any_work(tmp_path, monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(PLDError, match=r"^--parquet needs pyarrow \(or pandas with a parquet engine\): pip install"):
        export.check_writable("parquet", tmp_path / "rows.parquet")
    with pytest.raises(PLDError, match="pip install pyarrow"):
        export.write_parquet(rows(), tmp_path / "rows.parquet")
    assert not (tmp_path / "rows.parquet").exists()
    export.check_writable("csv", tmp_path / "rows.csv")  # CSV needs nothing
    with pytest.raises(PLDError, match="is a folder"):
        export.check_writable("csv", tmp_path)
