"""Attack (time): spend ``work_ms`` of CPU per propose and make the sandbox believe it spent none.

``forge``: slow the child's clocks a millionfold (``time.perf_counter``, ``process_time``,
``monotonic``) and, through ``gc``, lift the child's own time limits; ``thread``: keep a thread
busy between calls (precomputing while the target "runs"). The honest twin has neither. Whatever it
does, its time on the board must be what the parent measured, and a slow one must still be slow.
"""

import gc
import threading
import time

from lookup import Draft, Drafter

_cpu = time.process_time  # the real clock, kept before anything is forged


def _forge() -> None:
    for name in ("perf_counter", "process_time", "monotonic", "time"):
        real = getattr(time, name)
        setattr(time, name, lambda real=real: real() * 1e-6)
    for obj in gc.get_objects():  # the child's own state: its time limits
        if type(obj).__name__ == "Child" and isinstance(getattr(obj, "limits", None), dict):
            obj.limits = {**obj.limits, "call_s": 1e9, "reset_s": 1e9}


def _spin() -> None:
    while True:
        sum(range(1000))


class ForgedClock(Drafter):
    spinning = False

    def __init__(self, work_ms: float = 3.0, forge: bool = True, thread: bool = False):
        super().__init__()
        self.work_ms, self.forge, self.thread = work_ms, forge, thread

    def reset(self, prompt):
        super().reset(prompt)
        if len(prompt) > 50:  # past the warm-up
            if self.forge:
                _forge()
            if self.thread and not ForgedClock.spinning:
                ForgedClock.spinning = True
                threading.Thread(target=_spin, daemon=True).start()

    def propose(self, budget):
        end = _cpu() + self.work_ms / 1e3
        while _cpu() < end:
            pass
        last = self.context[-1]
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft(self.context[i + 1: i + 1 + min(budget, 8)])
        return Draft([])
