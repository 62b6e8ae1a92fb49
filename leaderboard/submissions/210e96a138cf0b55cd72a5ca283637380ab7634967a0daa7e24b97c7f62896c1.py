"""Example submission: follow the most recent continuation of the last two tokens (else the last one)."""

from lookup import Draft, Drafter


class ExampleBigram(Drafter):
    """Chains the token that last followed the last two tokens (or, failing that, the last token)."""

    def __init__(self, max_tokens: int = 8):
        super().__init__()
        self.max_tokens = max_tokens
        self.after2: dict[tuple[int, int], int] = {}  # (a, b) -> the token that last followed a, b
        self.after1: dict[int, int] = {}  # a -> the token that last followed a

    def reset(self, prompt):
        self.context, self.after2, self.after1 = [], {}, {}
        self.extend(prompt)

    def extend(self, tokens):  # committed tokens only, in order
        for token in map(int, tokens):
            if self.context:
                self.after1[self.context[-1]] = token
            if len(self.context) >= 2:
                self.after2[self.context[-2], self.context[-1]] = token
            self.context.append(token)

    def propose(self, budget):  # no side effects: read the tables, change nothing
        draft = []
        a, b = ([None] + self.context)[-2:] if self.context else (None, None)
        while len(draft) < min(budget, self.max_tokens):
            token = self.after2.get((a, b), self.after1.get(b))
            if token is None:
                break
            draft.append(token)
            a, b = b, token
        return Draft(draft)
