"""Example submission that is too slow: every propose busy-waits 200 ms, four times the 50 ms limit.
The sandbox records it as disqualified -- "slow: propose took 200 ms (limit 50 ms)"."""

import time

from lookup import Draft, Drafter


class TooSlow(Drafter):
    def propose(self, budget):
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:  # burns CPU: a descheduled process would not count as slow
            pass
        return Draft([self.context[-1]] if self.context and budget else [])
