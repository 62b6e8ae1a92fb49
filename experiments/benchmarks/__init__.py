"""Benchmark data: the embedded task suites, user data files, and recorded traces with their cost profile."""
