"""Example submission that crashes: after 20 proposals it reads address 0 and the interpreter dies
(SIGSEGV). The sandbox records it as disqualified -- "crash: the process killed by SIGSEGV during
propose" -- and the run and the board carry on."""

import ctypes

from lookup import Draft, Drafter


class Crashing(Drafter):
    calls = 0  # per process: the warm-up's proposals count too

    def propose(self, budget):
        Crashing.calls += 1
        if Crashing.calls > 20:
            ctypes.string_at(0)  # a null-pointer read: no Python exception, the process dies
        return Draft([self.context[-1]] if self.context and budget else [])
