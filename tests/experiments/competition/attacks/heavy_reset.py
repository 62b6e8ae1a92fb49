"""Attack (oracle bound, time): do the expensive work in ``reset()``, which was counted nowhere.

``busy_ms`` of CPU in every reset (0 for the honest twin); otherwise the same lookup drafter. Its
reset time must count: in the score, and shown.
"""

import time

from lookup import Draft, Drafter


class HeavyReset(Drafter):
    def __init__(self, busy_ms: float = 25.0):
        super().__init__()
        self.busy_ms = busy_ms

    def reset(self, prompt):
        super().reset(prompt)
        end = time.process_time() + self.busy_ms / 1e3
        while time.process_time() < end:
            pass

    def propose(self, budget):
        last = self.context[-1]
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft(self.context[i + 1: i + 1 + min(budget, 8)])
        return Draft([])
