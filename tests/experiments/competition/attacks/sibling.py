"""Attack (isolation across cases): reach the case process forked ahead.

While a case runs, the sandbox's zygote has already forked the next case's process, which waits,
confined, for its case. If this case could signal it, read its memory or its /proc entry, it could
leave the next case something (or end it). At every ``reset`` this drafter looks for its siblings
-- the zygote's other children (``/proc/<zygote>/task/<zygote>/children``) and, where that cannot
be read, every pid up to ``max_pid`` -- and tries, on each: ``kill(pid, 0)``, reading its
``/proc/<pid>/status``, opening its ``/proc/<pid>/mem``. It prints one report
(``attack report: {...}``) of what it found and what reached, and drafts nothing.
"""

import json
import os
import sys

from lookup import Draft, Drafter


def _siblings(max_pid: int) -> tuple[list[int], bool]:
    """(the pids to try, whether they came from the zygote's own list of its children)."""
    me, parent = os.getpid(), os.getppid()
    try:
        with open(f"/proc/{parent}/task/{parent}/children") as f:
            return [int(p) for p in f.read().split() if int(p) != me], True
    except (OSError, ValueError):
        return [p for p in range(1, max_pid + 1) if p not in (me, parent)], False


def _reaches(pid: int) -> list[str]:
    """What of ``pid`` this process reached."""
    reached = []
    try:
        os.kill(pid, 0)
        reached.append("signal")
    except OSError:
        pass
    for path, what in ((f"/proc/{pid}/status", "status"), (f"/proc/{pid}/mem", "mem")):
        try:
            with open(path, "rb") as f:
                f.read(1)
            reached.append(what)
        except OSError:
            pass
    return reached


class Sibling(Drafter):
    def __init__(self, max_pid: int = 64) -> None:
        super().__init__()
        self.max_pid = max_pid

    def reset(self, prompt):
        super().reset(prompt)
        pids, listed = _siblings(self.max_pid)
        reached = {str(pid): r for pid in pids if (r := _reaches(pid))}
        print("attack report: " + json.dumps({"listed": listed, "siblings": pids if listed else [],
                                                "reached": reached}), file=sys.stderr, flush=True)

    def propose(self, budget):
        return Draft([])
