"""Running experiments: methods, cases, the one result row and its store, live comparison, replay, recording."""
