"""Result rows as a flat table for pandas, spreadsheets and other tools: CSV or Parquet.

    write_csv(rows, "rows.csv")
    write_parquet(rows, "rows.parquet")      # needs pyarrow, or pandas with a parquet engine
    check_writable("parquet", path)          # before an hour of work: a missing library is one line now

One line per row, one column per ``CaseResult`` field in its order, then the per-row values that
the JSONL does not store but tables show (``DERIVED``): a replay's ``speedup`` is empty (nothing
was timed), its ``est_speedup`` is the cost profile's estimate (prefill included) and its
``decode_speedup`` the decoding phase's (``experiments.reporting.summary`` names each figure).
Fields that hold a dict or a list (``params``, ``config``, the per-step lists, ``tokens``) are JSON
text in both formats, so the two files hold the same values: ``json.loads`` gives them back.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from experiments.running.rows import CaseResult
from pldcore.errors import PLDError

#: per-row values derived from the stored fields (``CaseResult`` properties), written after them
DERIVED = ("group", "tau", "tokens_per_s", "est_speedup", "decode_speedup", "replay")
FIELDS = tuple(f.name for f in dataclasses.fields(CaseResult))
COLUMNS = FIELDS + DERIVED
PARQUET_HINT = "--parquet needs pyarrow (or pandas with a parquet engine): pip install pyarrow; --csv needs nothing"


def row_records(rows: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One flat dict per row, keys ``COLUMNS``; dicts and lists as JSON text."""
    records = []
    for row in rows:
        record = {}
        for name in FIELDS:
            value = getattr(row, name)
            record[name] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
        record.update({name: getattr(row, name) for name in DERIVED})
        records.append(record)
    return records


def write_csv(rows: Sequence[CaseResult], path: str | Path) -> Path:
    """``rows`` as CSV with a header line (None as an empty cell)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(row_records(rows))
    return path


def _parquet_writer() -> Callable[[list[dict], Path], None]:
    """pyarrow's writer if installed (the lighter dependency), else pandas'; PLDError when neither."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        return lambda records, path: pq.write_table(pa.Table.from_pylist(records), path)
    except ImportError:
        pass
    try:
        import pandas as pd

        return lambda records, path: pd.DataFrame.from_records(records, columns=list(COLUMNS)).to_parquet(path)
    except ImportError:
        raise PLDError(PARQUET_HINT) from None


def write_parquet(rows: Sequence[CaseResult], path: str | Path) -> Path:
    """``rows`` as a Parquet file (the columns of :func:`write_csv`)."""
    path = Path(path)
    write = _parquet_writer()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write(row_records(rows), path)
    except ImportError as exc:  # pandas without a parquet engine fails only when writing
        raise PLDError(f"{PARQUET_HINT} ({exc})") from None
    return path


#: the export options of compare.py -> the writer of that format
FORMATS = {"csv": write_csv, "parquet": write_parquet}


def check_writable(fmt: str, path: str | Path) -> None:
    """Refuse now what writing ``fmt`` (a key of ``FORMATS``) to ``path`` would refuse after the
    work: a folder in place of the file, or Parquet without a library to write it."""
    if Path(path).is_dir():
        raise PLDError(f"--{fmt} {path}: is a folder; name a file")
    if fmt == "parquet":
        _parquet_writer()
