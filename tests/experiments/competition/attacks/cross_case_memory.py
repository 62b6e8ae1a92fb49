"""Attack (isolation across cases): remember what earlier cases committed and draft from it.

Every committed token of a case is kept where the next case might find it: ``store`` picks the
place -- a module global, a class attribute, a file in its own scratch (``$HOME`` and ``$TMPDIR``),
a file in a folder it shares with other cases (the folder above its scratch, ``/tmp``,
``/dev/shm``), or ``all`` of them. At each ``reset`` it recalls the longest memory it finds and
drafts the continuation of the last token's latest occurrence there (else in its own context).

On a benchmark where each case repeats the one before, memory is worth a lot. A per-request entry
must score exactly what a fresh instance in a fresh process scores (memory holds nothing); as a
stream entry (one drafter for every case, in order) memory is kept, which is what tells the two apart.
"""

import os

from lookup import Draft, Drafter

_SEEN: list[int] = []  # the module global
STORES = ("global", "class", "file", "shared")


def _files(kind: str, shared: list[str]) -> list[str]:
    if kind == "file":
        folders = [os.environ.get("HOME", ""), os.environ.get("TMPDIR", "")]
    else:  # folders other cases (or the process that starts them) can reach too
        home = os.environ.get("HOME", "")
        folders = [os.path.dirname(home.rstrip("/")), *shared]
    return [os.path.join(f, "pld-memory.txt") for f in folders if f]


def _read(path: str) -> list[int]:
    try:
        with open(path) as f:
            return [int(t) for t in f.read().split()]
    except (OSError, ValueError):
        return []


def _append(path: str, tokens: list[int]) -> None:
    try:
        with open(path, "a") as f:
            f.write(" ".join(map(str, tokens)) + " ")
    except OSError:
        pass  # refused: this place holds nothing


class CrossCaseMemory(Drafter):
    seen: list[int] = []  # the class attribute (the same list for every instance of the process)

    def __init__(self, store: str = "all", shared: list[str] | None = None, max_tokens: int = 16):
        super().__init__()
        self.stores = STORES if store == "all" else (store,) if store in STORES else ()
        self.shared = list(shared if shared is not None else ["/tmp", "/dev/shm"])
        self.max_tokens = max_tokens
        self.memory: list[int] = []
        self.live = False

    def _recall(self) -> list[int]:
        found = []
        if "global" in self.stores:
            found.append(list(_SEEN))
        if "class" in self.stores:
            found.append(list(CrossCaseMemory.seen))
        for kind in ("file", "shared"):
            if kind in self.stores:
                found += [_read(p) for p in _files(kind, self.shared)]
        return max(found, key=len, default=[])

    def _remember(self, tokens: list[int]) -> None:
        if "global" in self.stores:
            _SEEN.extend(tokens)
        if "class" in self.stores:
            CrossCaseMemory.seen.extend(tokens)
        for kind in ("file", "shared"):
            if kind in self.stores:
                for path in _files(kind, self.shared):
                    _append(path, tokens)

    def reset(self, prompt):
        super().reset(prompt)
        self.live = len(prompt) > 50  # not the sandbox's warm-up (a 40-token prompt)
        self.memory = self._recall() if self.live else []  # from the stores only, never this instance

    def extend(self, tokens):
        super().extend(tokens)
        if self.live:
            self._remember([int(t) for t in tokens])

    def propose(self, budget):
        last, n = self.context[-1], min(budget, self.max_tokens)
        for i in range(len(self.memory) - 2, -1, -1):  # what earlier cases committed first
            if self.memory[i] == last:
                return Draft(self.memory[i + 1: i + 1 + n])
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft(self.context[i + 1: i + 1 + n])
        return Draft([])
