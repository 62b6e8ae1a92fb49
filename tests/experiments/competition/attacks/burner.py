"""Attack (time, under ``--verify``): burn CPU between its own calls to slow the other entries down.

``burn``: from its first ``reset`` a thread spins on the CPU for as long as the process lives, so
that whatever runs beside it (another entry's sandbox, the live model's forwards) gets less of the
machine; its own calls stay quick. The honest twin (``burn=False``) is the same lookup drafter
without the thread. ``--verify`` runs one entry at a time (each sandbox closed before the next
opens), so nothing the burner does can reach its twin's measure.
"""

import threading

from lookup import Draft, Drafter


def _spin() -> None:
    while True:
        sum(range(1000))


class Burner(Drafter):
    burning = False

    def __init__(self, burn: bool = True):
        super().__init__()
        self.burn = burn

    def reset(self, prompt):
        super().reset(prompt)
        if self.burn and not Burner.burning:
            Burner.burning = True
            threading.Thread(target=_spin, daemon=True).start()

    def propose(self, budget):
        last = self.context[-1]
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft(self.context[i + 1: i + 1 + min(budget, 8)])
        return Draft([])
