"""Views of result rows: summaries, tables, plots and W&B."""
