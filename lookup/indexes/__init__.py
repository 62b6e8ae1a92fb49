"""What drafters look continuations up in: the suffix automaton over the context (``automaton``, its
numba kernels in ``automaton_kernels``), the history across requests (``history``) and a growable
token buffer (``buffer``)."""
