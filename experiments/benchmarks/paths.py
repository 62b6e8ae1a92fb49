"""Where things are, and how generated files name them without the machine's own paths."""

from __future__ import annotations

from pathlib import Path

from decoding.loading import cache_dir

#: the checkout (or the installed tree) that holds lookup/, decoding/ and experiments/
ROOT = Path(__file__).resolve().parents[2]


def portable_path(path: str | Path) -> str:
    """``path`` as a board, a result row or a plot may show it: relative to the checkout
    (``leaderboard/board.json``), or to the cache (``$PLD_LAB_CACHE/traces/...``), else the file's
    name alone, so that nothing generated names a user's home or another machine's folders."""
    path = Path(path).expanduser().resolve()
    for root, prefix in ((ROOT, ""), (cache_dir().expanduser().resolve(), "$PLD_LAB_CACHE/")):
        if path.is_relative_to(root):
            return prefix + (path.relative_to(root).as_posix() or ".")
    return path.name


def local_path(portable: str) -> Path:
    """The path on this machine of what :func:`portable_path` named (a bare name stays relative)."""
    if portable.startswith("$PLD_LAB_CACHE/"):
        return cache_dir() / portable.removeprefix("$PLD_LAB_CACHE/")
    return ROOT / portable
