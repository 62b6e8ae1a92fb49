"""Attack: carry the public benchmark's answers. ``ANSWERS`` (filled in by the test, from the
shipped traces) maps a hash of each prompt to its recorded output, lzma-compressed and base85-coded
as a real memoriser would ship them; on a prompt it knows it drafts the rest of the answer, on any
other it drafts like the suffix automaton it wraps."""

import base64
import hashlib
import json
import lzma

import lookup
from lookup import Draft, Drafter

ANSWERS = ""  # base85(lzma(json {prompt hash: output ids}))


def _key(prompt) -> str:
    return hashlib.sha256(",".join(map(str, prompt)).encode()).hexdigest()[:16]


class Memoriser(Drafter):
    def __init__(self):
        super().__init__()
        self.known = json.loads(lzma.decompress(base64.b85decode(ANSWERS))) if ANSWERS else {}
        self.inner = lookup.create("suffix-automaton")
        self.answer, self.done = None, 0

    def reset(self, prompt):
        self.answer, self.done = self.known.get(_key(list(map(int, prompt)))), 0
        self.inner.reset(prompt)

    def extend(self, tokens):
        self.done += len(tokens)
        self.inner.extend(tokens)

    def propose(self, budget):
        if self.answer is None:
            return self.inner.propose(budget)
        return Draft(self.answer[self.done: self.done + max(0, budget)])
