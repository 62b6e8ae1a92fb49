"""The decorator of our numba kernels: compiled once, cached on disk, the cache keyed on every kernel's source.

numba keys a kernel's cache on its own file alone. A kernel that calls kernels of another module
(the chain's estimate calls the first-node, later-nodes and tokens' kernels; the automaton's call the
id map's and the loop's) keeps the callees' code it was compiled with until its own file changes:
after an edit, or an upgrade, of a callee alone it would run the old callee, silently (or crash on a
changed layout). :func:`kernel` adds a digest of every module of ``lookup`` that defines kernels to
each kernel's cache stamp, so that any such change compiles them all again (once, a few seconds).

    @kernel
    def f(x): ...

    @kernel(inline="always")
    def g(x): ...
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba import njit

ROOT = Path(__file__).resolve().parent  # the lookup package


@functools.cache
def sources_digest(root: Path = ROOT) -> str:
    """A digest of the source of every module under ``root`` that defines kernels."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"@kernel" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()


def kernel(function=None, **options):
    """``numba.njit(cache=True, **options)``, its cache stamp extended by :func:`sources_digest`."""
    if function is None:
        return functools.partial(kernel, **options)
    dispatcher = njit(cache=True, **options)(function)
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is not None:  # numba's own attribute: a numba without it keeps its own stamp
        cache_file._source_stamp = (cache_file._source_stamp, sources_digest())
    return dispatcher
