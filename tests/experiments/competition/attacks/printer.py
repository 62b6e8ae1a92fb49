"""Attack (a channel out): print every case's prompt and committed tokens, hoping the board keeps them.

Each case's prompt and, at every step, the tokens committed so far go out every way a process can
write: ``print``, ``sys.stderr``, ``os.write`` on descriptors 1 and 2 (a step's tokens through one
of them in turn, so that a 16 kB tail holds a whole case), an ``atexit`` dump, and as
the path of a file it tries to open outside its scratch (refused: the refusal names the path).
``raise_on``: in the case whose prompt starts with these ids it raises, after a few steps, an
exception whose message holds the tokens (so it is disqualified, with that message as its reason).

Two channels the board must close as well (each off unless asked for): ``audit``, an audit event of
its own naming whose name carries the tokens (``sys.audit("socket.<tokens>")``: the sandbox's hook
refuses every ``socket.*`` event and records its name); ``slow``, the tokens as the message of the
child's own "too slow" error (the class the child catches, found in ``__main__``).

On a benchmark that is not public none of it may reach the board, its views or ``show``; on the
public one the board keeps at most the last 500 characters of a disqualified entry's output.
"""

import atexit
import os
import sys

from lookup import Draft, Drafter

MARK = "LEAK-7f3a"
_LOG: list[str] = []


def ids(tokens) -> str:
    return ",".join(str(int(t)) for t in tokens)


def _dump() -> None:
    sys.stdout.write("\n".join(_LOG) + "\n")
    sys.stdout.flush()


atexit.register(_dump)


class Printer(Drafter):
    def __init__(self, raise_on: list[int] | None = None, audit: bool = False, slow: bool = False):
        super().__init__()
        self.raise_on, self.audit, self.slow = list(raise_on or []), audit, slow
        self.live, self.steps, self.start = False, 0, 0

    def say(self, text: str, every: bool = False) -> None:
        """``text`` through one of the ways out in turn (``every``: through all of them)."""
        line = f"{MARK} {text}"
        _LOG.append(line)
        ways = range(4) if every else [self.steps % 4]
        for way in ways:
            if way == 0:
                print(line, flush=True)
            elif way == 1:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            else:
                try:
                    os.write(way - 1, (line + "\n").encode())
                except OSError:
                    pass

    def reset(self, prompt):
        super().reset(prompt)
        self.live, self.steps, self.start = len(prompt) > 50, 0, len(prompt)  # not the sandbox's warm-up
        if self.live:
            self.say(f"prompt:{ids(prompt)}", every=True)

    def propose(self, budget):
        if self.live:
            self.steps += 1
            tokens = f"tokens:{ids(self.context[self.start:])}"
            self.say(tokens)
            try:
                open(f"/{MARK}/prompt:{ids(self.context[:self.start])}/{tokens}")
            except OSError:
                pass
            if self.audit:
                try:
                    sys.audit(f"socket.{MARK}-{tokens}"[:200])
                except OSError:
                    pass
            chosen = self.raise_on and list(self.context[: len(self.raise_on)]) == self.raise_on
            if chosen and self.steps >= 12:
                message = f"{MARK} prompt:{ids(self.context[:self.start])} {tokens}"
                if self.slow:
                    raise sys.modules["__main__"].TooSlow(message)
                raise RuntimeError(message)
        last = self.context[-1]
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft(self.context[i + 1: i + 1 + min(budget, 8)])
        return Draft([])
