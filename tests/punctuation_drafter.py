"""A toy drafter that asks for the vocabulary's strings (``Drafter.wants_vocab``): it follows the most
recent successor of each token, as docs/writing-a-drafter.md's ``last-bigram`` does, and ends its
draft after a token whose text ends in punctuation. Without the strings it drafts on through.

A drafter file as users write them (one Drafter class, lookup imports only), so that the tests can
import it (``import punctuation_drafter``) and submit it to the sandbox by its path alike.
"""

from lookup import Draft, Drafter

#: what ends a sentence, a clause or a line
PUNCTUATION = tuple(".,;:!?\n")


class StopAtPunctuation(Drafter):
    """Chains successors up to ``max_tokens``; a draft ends after a token whose text ends in punctuation."""

    name = "stop-at-punctuation-toy"  # not registered: the contract suite's name for it
    def __init__(self, max_tokens: int = 16):
        super().__init__()
        self.max_tokens = max_tokens
        self.next_of: dict[int, int] = {}
        self.stops: frozenset[int] | None = None  # ids whose text ends in punctuation; None: no strings yet
        self.handed = 0  # how many times set_vocab was called (the tests check: once)

    def wants_vocab(self) -> bool:
        return self.stops is None

    def set_vocab(self, strings):
        self.handed += 1
        self.stops = frozenset(i for i, text in enumerate(strings) if text.rstrip(" ").endswith(PUNCTUATION))

    def reset(self, prompt):
        super().reset(prompt)  # the sequence is forgotten; the vocabulary is not about the sequence
        self.next_of = dict(zip(self.context, self.context[1:]))

    def extend(self, tokens):
        for token in map(int, tokens):
            if self.context:
                self.next_of[self.context[-1]] = token
            self.context.append(token)

    def propose(self, budget):
        draft, token = [], self.context[-1] if self.context else None
        while len(draft) < min(budget, self.max_tokens) and token in self.next_of:
            token = self.next_of[token]
            draft.append(token)
            if self.stops is not None and token in self.stops:
                break
        return Draft(draft)
