"""Experiments: task suites, traces, comparisons, the leaderboard, logging, plots and CLIs."""
