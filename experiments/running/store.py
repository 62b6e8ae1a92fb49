"""Append-only JSONL results: the source of truth that tables, plots and W&B are views of.

Each row is flushed and fsynced as soon as it exists, so Ctrl-C or a crash loses at most the
row being computed. A rerun reuses a row only when the code that made it is unchanged
(:func:`code_key`): a row of an edited drafter is measured again, never served stale.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import subprocess
import sys
import time
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Iterator

from experiments.benchmarks.paths import ROOT
from experiments.running.rows import CaseResult
from lookup.base import Drafter
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

PACKAGES = ("torch", "transformers", "numpy", "numba", "pld-lab")
#: the code whose source decides what a row holds: the drafters, the loop that runs them, and
#: the code that runs methods and builds rows from their runs
CODE_PACKAGES = ("pldcore", "lookup", "decoding", "experiments/running")


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The checkout's commit (with ``+dirty`` when it has changes), or None outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=ROOT, capture_output=True, text=True,
                               timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if sha.returncode != 0:
        return None
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


@lru_cache(maxsize=None)
def versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The installed versions of the packages whose code decides a row (:data:`PACKAGES`), and of the
    ``extra`` ones a run also depends on (an engine: ``("vllm",)``); one not installed is left out."""
    out = {}
    for name in (*PACKAGES, *extra):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def config_hash(config: dict) -> str:
    """A short stable hash of a JSON-able config: rows with the same hash are comparable."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]


@lru_cache(maxsize=None)
def _package_digest(package: str) -> str:
    h = hashlib.sha256()
    root = ROOT / package
    # the code, and the data that ships beside it and changes what it does (the acceptance fits)
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.json")]):
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _classes(obj: object) -> list[type]:
    """The classes behind ``obj``: a class itself, or a drafter's class and those of the drafters it
    wraps (``adaptive``'s base, say), found in its attributes."""
    if isinstance(obj, type):
        return [obj]
    return [type(d) for d in obj.wrapped()] if isinstance(obj, Drafter) else [type(obj)]


def _source(cls: type) -> Path | None:
    try:
        name = inspect.getsourcefile(cls)
    except TypeError:  # a built-in
        return None
    return Path(name).resolve() if name else None


def code_key(*objects: object, profile: CostProfile | None = None) -> str:
    """A hash of the code and data a row depends on: ``CODE_PACKAGES``, the source files of
    ``objects`` (classes, or drafters: theirs and those of the drafters they wrap) outside those
    packages (a plug-in, a drafter file), the library versions and the cost profile. Any change to
    them changes the key, so rows made before the change are not reused.
    """
    h = hashlib.sha256()
    for package in CODE_PACKAGES:
        h.update(_package_digest(package).encode())
    sources = {_source(cls) for obj in objects for cls in _classes(obj)} - {None}
    for source in sorted(sources):
        # hashed unless it is part of the packages above (a plug-in, even one installed in the
        # checkout's own venv, is hashed by its own file)
        if not any(source.is_relative_to(ROOT / p) for p in CODE_PACKAGES):
            h.update(source.read_bytes())
    h.update(json.dumps(versions(), sort_keys=True).encode())
    h.update(f"python {sys.version_info[:2]}".encode())
    if profile is not None:
        h.update(profile.to_json().encode())
    return h.hexdigest()[:16]


class ResultStore:
    """One JSONL file of :class:`CaseResult` rows."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def rows(self, strict: bool = True) -> Iterator[CaseResult]:
        """Every row. A line that is not JSON (one cut short by a crash) is skipped; a JSON line
        that is not a row of this version raises ``PLDError`` (``strict``) or is skipped."""
        if not self.path.exists():
            return
        with self.path.open() as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a crash: skip it, keep the rest
                    continue
                try:
                    yield CaseResult.from_json(data, where=f"{self.path}:{lineno}")
                except PLDError:
                    if strict:
                        raise

    def append(self, row: CaseResult) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as f:
            # a crash can leave the last line without its newline: end it, or the next row
            # would be glued to it and lost with it
            if f.tell() > 0 and not self._ends_with_newline():
                f.write(b"\n")
            f.write(json.dumps(row.to_json(), default=str).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"


def reusable(store: ResultStore, fresh: bool, codes: dict[str, str]) -> dict[tuple[str, str], CaseResult]:
    """{(case, method): row} of the rows in ``store`` that a rerun may keep: those whose method is
    in ``codes`` and whose code key is the method's current one. Rows of another version of the
    row type are stale by definition and skipped. With ``fresh`` none is kept, and the file is
    moved aside (``<name>.<time>.jsonl``, nothing is deleted) so the new run starts a file of its own."""
    if fresh:
        if store.path.exists():
            stamp, n = time.strftime("%Y%m%d-%H%M%S"), 0
            while (aside := store.path.with_suffix(f".{stamp}{f'-{n}' if n else ''}.jsonl")).exists():
                n += 1
            store.path.rename(aside)
        return {}
    return {(r.case, r.method): r for r in store.rows(strict=False) if codes.get(r.method) == r.code}
