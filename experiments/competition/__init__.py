"""The lookup competition: the sandbox and its child, scoring, entries, the board and its views."""
