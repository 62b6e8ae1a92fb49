"""The board file: every entry of every benchmark in ``leaderboard/board.json``, the source of truth
of the views. Written atomically, edited under a lock, so two submits never lose one."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from experiments.benchmarks.paths import ROOT
from experiments.benchmarks.untrusted import clean, read_json
from pldcore.errors import PLDError

DEFAULT_BOARD = ROOT / "leaderboard"
BOARD_FILE = "board.json"
LOCK_FILE = ".board.lock"
#: the largest board file read: the committed one is 0.1 MB for ~60 entries of one benchmark, so
#: 64 MiB holds tens of thousands of entries, and a hostile file costs at most that much memory
MAX_BOARD_BYTES = 64 << 20
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
ORACLE = "oracle"
#: the submissions of one name an entry lists (``attempts``: the newest kept)
MAX_ATTEMPTS = 20


def now() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


# -- the board file: JSON, replaced atomically, edited under a lock --------------------------------------
def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, then rename over ``path``: readers see
    the old file or the new one, never half of one, whatever happens in between.

    Nothing is written through a symbolic link: mkstemp creates a new name (``O_EXCL``), the mode is
    set on its descriptor, and a rename replaces a link at ``path`` itself, never the file it points to.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; these files are meant to be read
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _is_board(benchmarks, entries) -> bool:
    """The shape every reader of a board relies on: benchmarks by hash, a list of entries (objects)."""
    return isinstance(benchmarks, dict) and isinstance(entries, list) and all(isinstance(e, dict) for e in entries)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if missing). A symbolic link there is
    refused, never followed: opening it would create or touch a file outside the board's folder."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else clean(exc.strerror or exc)
        raise PLDError(f"cannot lock the board: {clean(path)} ({why}); remove it") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PLDError(f"cannot lock the board: {clean(path)} is not a regular file; remove it")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class Board:
    """``board.json`` in ``folder``: every entry of every benchmark, the source of truth of the views."""

    def __init__(self, folder: str | Path = DEFAULT_BOARD) -> None:
        self.folder = Path(folder)
        self.path = self.folder / BOARD_FILE

    def load(self) -> dict:
        """The board file (an empty board when there is none). A file that is too big, nested too
        deep (``untrusted.MAX_DEPTH``) or not shaped like a board is refused with one line."""
        if not self.path.exists():
            return {"version": 1, "benchmarks": {}, "entries": []}
        data = read_json(self.path, MAX_BOARD_BYTES, "board")
        if not isinstance(data, dict) or not _is_board(data.setdefault("benchmarks", {}), data.get("entries")):
            raise PLDError(f"{clean(self.path)} is not a board file")
        return data

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict]:
        """Load, let the caller change, save atomically -- under a lock, so two submits never lose one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / LOCK_FILE):
            data = self.load()
            yield data
            atomic_write(self.path, json.dumps(data, indent=1, default=str) + "\n")

    def record(self, entry: dict, info: dict | None = None) -> None:
        """Add ``entry``, replacing the entry of the same name on the same benchmark."""
        with self.editing() as data:
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            data["entries"] = [e for e in data["entries"]
                               if not (e.get("benchmark") == entry["benchmark"] and e.get("name") == entry["name"])]
            data["entries"].append(entry)

    def record_best(self, entry: dict, info: dict | None = None) -> tuple[dict, bool]:
        """Record a submission's ``entry`` as :meth:`record` does, unless the board holds an entry
        of its name on its benchmark that ranks above it (:func:`better`: a disqualified or lower
        score never replaces a scored one): that one stays. Either way the entry that stands lists
        this submission in its ``attempts`` (:func:`attempt_of`; oldest first, the last
        :data:`MAX_ATTEMPTS`; an entry recorded before attempts were listed counts as its own
        first). Returns (the entry that stands, as the board file now holds it; whether it is ``entry``)."""
        with self.editing() as data:
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            same = [e for e in data["entries"] if e.get("benchmark") == entry["benchmark"] and e.get("name") == entry["name"]]
            earlier = same[-1] if same else None
            listed = earlier.get("attempts") if earlier is not None else []
            if earlier is not None and not (isinstance(listed, list) and listed):
                listed = [attempt_of(earlier)]
            attempts = [*[a for a in listed if isinstance(a, dict)], attempt_of(entry)][-MAX_ATTEMPTS:]
            if earlier is not None and not better(entry, earlier):
                earlier["attempts"] = attempts
                return earlier, False
            data["entries"] = [e for e in data["entries"] if not any(e is x for x in same)]
            data["entries"].append({**entry, "attempts": attempts})
            return data["entries"][-1], True

    def entries(self, benchmark: str) -> list[dict]:
        return [e for e in self.load()["entries"] if e.get("benchmark") == benchmark]

    def resolve(self, prefix: str) -> str:
        """The full benchmark hash that ``prefix`` starts (unique), as ``show --benchmark`` accepts."""
        known = sorted({e["benchmark"] for e in self.load()["entries"] if isinstance(e.get("benchmark"), str)})
        found = [h for h in known if h.startswith(prefix)]
        if len(found) != 1:
            listed = ", ".join(clean(h, 64) for h in known) or "none"  # hashes read from the file
            raise PLDError(f"benchmark {prefix!r} {'is ambiguous' if found else 'is not on the board'}; recorded: {listed}")
        return found[0]


def _scored(entry: dict) -> bool:
    """Whether ``entry`` is ranked: scored (status ok, a non-zero score), and not the oracle."""
    return entry.get("kind") != "oracle" and entry.get("status") == "ok" and bool(entry.get("score"))


def better(new: dict, old: dict) -> bool:
    """Whether entry ``new`` ranks at least as high as ``old`` by :func:`ranked`'s rule: a scored
    entry above one that is not, a higher score above a lower one (a tie goes to ``new``)."""
    def score(e: dict) -> float | None:  # a board file edited by hand may hold anything there
        value = e.get("score")
        return float(value) if _scored(e) and isinstance(value, (int, float)) and not isinstance(value, bool) else None

    if score(old) is None:
        return True
    return score(new) is not None and score(new) >= score(old)


def attempt_of(entry: dict) -> dict:
    """What an entry's ``attempts`` keep of one submission: when, its score or why it failed (as
    the entry says it, already cleaned and, on a benchmark that is not public, withheld), its
    parameters, and its file (by the hash it is stored under) or source name."""
    source = entry.get("source") if isinstance(entry.get("source"), dict) else {}
    attempt = {"time": entry.get("time"), "status": entry.get("status"), "params": entry.get("params") or {}}
    if entry.get("status") == "ok":
        attempt["score"] = entry.get("score")
    else:
        attempt["reason"] = entry.get("reason")
    attempt["source"] = {k: source[k] for k in ("kind", "sha256", "display", "name") if k in source}
    return attempt


def ranked(entries: Sequence[dict]) -> tuple[dict | None, list[dict], list[dict]]:
    """(oracle, entries that scored -- best first, disqualified entries)."""
    oracle = next((e for e in entries if e.get("kind") == "oracle"), None)
    ok = [e for e in entries if _scored(e)]
    ok.sort(key=lambda e: (-e["score"], e["name"]))
    dq = sorted((e for e in entries if e.get("kind") != "oracle" and e not in ok), key=lambda e: e["name"])
    return oracle, ok, dq
