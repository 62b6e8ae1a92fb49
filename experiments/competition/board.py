"""The board file: every entry of every benchmark in ``leaderboard/board.json``, the source of truth
of the views. Written atomically, edited under a lock, so two submits never lose one."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from experiments.benchmarks.paths import ROOT
from lookup.errors import PLDError

DEFAULT_BOARD = ROOT / "leaderboard"
BOARD_FILE = "board.json"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
ORACLE = "oracle"


def now() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


# -- the board file: JSON, replaced atomically, edited under a lock --------------------------------------
def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, then rename over ``path``: readers see
    the old file or the new one, never half of one, whatever happens in between."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; these files are meant to be read
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Board:
    """``board.json`` in ``folder``: every entry of every benchmark, the source of truth of the views."""

    def __init__(self, folder: str | Path = DEFAULT_BOARD) -> None:
        self.folder = Path(folder)
        self.path = self.folder / BOARD_FILE

    def load(self) -> dict:
        if not self.path.exists():
            return {"version": 1, "benchmarks": {}, "entries": []}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise PLDError(f"{self.path} is not a readable board ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise PLDError(f"{self.path} is not a board file")
        data.setdefault("benchmarks", {})
        return data

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict]:
        """Load, let the caller change, save atomically -- under a lock, so two submits never lose one."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".board.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = self.load()
                yield data
                atomic_write(self.path, json.dumps(data, indent=1, default=str) + "\n")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def record(self, entry: dict, info: dict | None = None) -> None:
        """Add ``entry``, replacing the entry of the same name on the same benchmark."""
        with self.editing() as data:
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            data["entries"] = [e for e in data["entries"]
                               if not (e.get("benchmark") == entry["benchmark"] and e.get("name") == entry["name"])]
            data["entries"].append(entry)

    def entries(self, benchmark: str) -> list[dict]:
        return [e for e in self.load()["entries"] if e.get("benchmark") == benchmark]

    def resolve(self, prefix: str) -> str:
        """The full benchmark hash that ``prefix`` starts (unique), as ``show --benchmark`` accepts."""
        known = sorted({e.get("benchmark") for e in self.load()["entries"] if e.get("benchmark")})
        found = [h for h in known if h.startswith(prefix)]
        if len(found) != 1:
            listed = ", ".join(known) or "none"
            raise PLDError(f"benchmark {prefix!r} {'is ambiguous' if found else 'is not on the board'}; recorded: {listed}")
        return found[0]


def ranked(entries: Sequence[dict]) -> tuple[dict | None, list[dict], list[dict]]:
    """(oracle, entries that scored -- best first, disqualified entries)."""
    oracle = next((e for e in entries if e.get("kind") == "oracle"), None)
    ok = [e for e in entries if e.get("kind") != "oracle" and e.get("status") == "ok" and e.get("score")]
    ok.sort(key=lambda e: (-e["score"], e["name"]))
    dq = sorted((e for e in entries if e.get("kind") != "oracle" and e not in ok), key=lambda e: e["name"])
    return oracle, ok, dq
