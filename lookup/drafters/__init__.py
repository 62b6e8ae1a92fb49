"""The built-in drafters, one strategy per module; importing this package registers them."""

from lookup.drafters import adaptive, frequency, plain, recycling, suffix_automaton, unfold, voting  # noqa: F401
