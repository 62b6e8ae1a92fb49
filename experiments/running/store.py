"""Append-only JSONL results: the source of truth that tables, plots and W&B are views of.

Each row is flushed and fsynced as soon as it exists, so Ctrl-C or a crash loses at most the
row being computed; a rerun skips the rows it finds.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Iterable, Iterator

PACKAGES = ("torch", "transformers", "numpy", "numba", "pld-lab")


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The checkout's commit (with ``+dirty`` when it has changes), or None outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if sha.returncode != 0:
        return None
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def config_hash(config: dict) -> str:
    """A short stable hash of a JSON-able config: rows with the same hash are comparable."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]


class ResultStore:
    """One JSONL file of rows; ``key`` fields identify a row for resuming."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def rows(self) -> Iterator[dict]:
        if not self.path.exists():
            return
        with self.path.open() as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:  # a line cut by a crash: skip it, keep the rest
                    continue

    def append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def extend(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.append(row)
