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
from typing import Iterator

from experiments.benchmarks.paths import ROOT
from experiments.benchmarks.untrusted import clean, read_json
from experiments.competition.loader import board_of, entry_of, key_of, load_entries
from experiments.competition.owners import check_owner, take
from experiments.competition.ranking import better
from experiments.competition.records import Entry
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
        # every field typed here, once (loader.board_of): a field of the wrong type reads as missing
        return board_of(read_json(self.path, MAX_BOARD_BYTES, "board"), clean(self.path))

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict]:
        """Load, let the caller change, save atomically -- under a lock, so two submits never lose one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / LOCK_FILE):
            data = self.load()
            yield data
            atomic_write(self.path, json.dumps(data, indent=1, default=str) + "\n")

    def record(self, entry: dict, info: dict | None = None) -> None:
        """Add ``entry`` (a record, as the file holds it), replacing the entry of the same name on
        the same benchmark."""
        with self.editing() as data:
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            data["entries"] = [e for e in data["entries"] if key_of(e) != key_of(entry)]
            data["entries"].append(entry)

    def record_best(self, entry: dict, info: dict | None = None, owner: str | None = None) -> tuple[dict, bool]:
        """Record a submission's ``entry`` as :meth:`record` does, unless the board holds an entry
        of its name on its benchmark that ranks above it (:func:`ranking.better`: a disqualified or
        lower score never replaces a scored one): that one stays. Either way the entry that stands
        lists this submission in its ``attempts`` (:func:`attempt_of`; oldest first, the last
        :data:`MAX_ATTEMPTS`; an entry recorded before attempts were listed counts as its own
        first). ``owner``: the submitter's proof (:mod:`.owners`): checked again under the lock (one
        line when the name is someone else's: nothing recorded), and the name taken when it is free.
        Returns (the entry that stands, as the board file now holds it; whether it is ``entry``)."""
        new = entry_of(entry)
        with self.editing() as data:
            if owner is not None:
                name = key_of(entry)[1] or ""
                if check_owner(data, name, owner, (e for e in data["entries"] if key_of(e)[1] == name)):
                    take(data, name, owner)
            if info is not None:
                data["benchmarks"][entry["benchmark"]] = info
            same = [e for e in data["entries"] if key_of(e) == key_of(entry)]
            earlier = entry_of(same[-1], clean(self.path)) if same else None
            listed = [a.record for a in earlier.attempts] if earlier is not None else []
            if earlier is not None and not listed:
                listed = [attempt_of(earlier)]
            attempts = [*listed, attempt_of(new)][-MAX_ATTEMPTS:]
            if earlier is not None and not better(new, earlier):
                same[-1]["attempts"] = attempts
                return same[-1], False
            data["entries"] = [e for e in data["entries"] if not any(e is x for x in same)]
            data["entries"].append({**entry, "attempts": attempts})
            return data["entries"][-1], True

    def copy_to(self, folder: str | Path) -> "Board":
        """A copy of this board in ``folder`` (its file, as read and checked, and its store's files):
        what an audit scores on, leaving this one as it was."""
        copy = Board(folder)
        atomic_write(copy.path, json.dumps(self.load(), indent=1, default=str) + "\n")
        store = self.folder / "submissions"
        if store.is_dir() and not store.is_symlink():
            for path in store.glob("*.py"):
                if path.is_file() and not path.is_symlink():
                    atomic_write(copy.folder / "submissions" / path.name, path.read_bytes())
        return copy

    def entries(self, benchmark: str | None = None) -> list[Entry]:
        """The board's entries (of ``benchmark``, when given), typed and validated (:mod:`.loader`)."""
        return load_entries(self.load()["entries"], clean(self.path), benchmark)

    def resolve(self, prefix: str) -> str:
        """The full benchmark hash that ``prefix`` starts (unique), as ``show --benchmark`` accepts."""
        known = sorted({bench for e in self.load()["entries"] if (bench := key_of(e)[0]) is not None})
        found = [h for h in known if h.startswith(prefix)]
        if len(found) != 1:
            listed = ", ".join(clean(h, 64) for h in known) or "none"  # hashes read from the file
            raise PLDError(f"benchmark {prefix!r} {'is ambiguous' if found else 'is not on the board'}; recorded: {listed}")
        return found[0]


def attempt_of(entry: Entry) -> dict:
    """What an entry's ``attempts`` keep of one submission: when, its score or why it failed (as
    the entry says it, already cleaned and, on a benchmark that is not public, withheld), its
    parameters, and its file (by the hash it is stored under) or source name."""
    scores = entry.public
    attempt = {"time": entry.time, "status": scores.status or None, "params": dict(entry.params)}
    if scores.ok:
        attempt["score"] = scores.score
    else:
        attempt["reason"] = scores.reason
    source = entry.source
    attempt["source"] = {k: v for k in ("kind", "sha256", "display", "name") if (v := getattr(source, k)) is not None}
    return attempt
