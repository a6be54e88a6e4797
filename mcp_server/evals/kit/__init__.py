"""Self-contained evaluation kit: sandbox (namespaces, confined), problems, verdicts, Inspect tasks,
contamination guard."""
