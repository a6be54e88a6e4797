"""Self-contained evaluation kit: sandbox, problems, Inspect tasks, contamination guard."""
