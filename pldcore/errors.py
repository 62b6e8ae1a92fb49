"""The one exception type for user mistakes: CLIs print it as one line and exit with code 2."""


class PLDError(Exception):
    """A user mistake (bad input, unknown name, missing package) rather than a bug."""
