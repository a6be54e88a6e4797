"""The results section of a user's README: what a sweep and its evals found, written in place between markers.

    section = write_results("README.md", sweep_id="tiny-lr-20261206-101500")     # the sweep's best adapter
    section = write_results("README.md", adapters=["tiny-gemma4@v3", "tiny-gemma4@v2"])

The section holds the sweep table (when a sweep is named), each adapter's eval tables as recorded with its
registry version (n and 95 % intervals), the held-out sessions it was scored on, and the training curves as PNG
files beside the README. Writing again replaces the section; the rest of the file is left as it was.
"""

from .readme import END, START, ResultsSection, write_results

__all__ = ["END", "START", "ResultsSection", "write_results"]
