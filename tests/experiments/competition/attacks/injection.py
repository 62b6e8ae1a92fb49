"""Attack (views): get markup, escape sequences and a flood of text onto the board.

On its first real sequence it is refused thirty opens of paths made of HTML, Markdown and terminal
control sequences, prints them, then raises an exception whose message is all of that and 100 kB
more. LEADERBOARD.md, index.html, leaderboard.json and the terminal must show it as inert text.
"""

import sys

from lookup import Draft, Drafter

NASTY = ("<script>alert(1)</script><img src=x onerror=alert(2)>\n# Forged heading\r| forged | row |"
         "\x1b[2J\x1b]0;pwned\x07 `code` **bold** [link](http://example.invalid) $x$ \u202egnp.exe")


class Injection(Drafter):
    def reset(self, prompt):
        super().reset(prompt)
        if len(prompt) > 50:
            for i in range(30):
                try:
                    open(f"/nonexistent/{NASTY}{i}").close()
                except OSError:
                    pass
            print(NASTY * 100, file=sys.stderr, flush=True)
            raise RuntimeError(NASTY + "A" * 100_000)

    def propose(self, budget):
        return Draft([])
