"""The README's results section as a tool (its CLI twin: ``tunepack results readme``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..report import ResultsSection
from .common import guarded


@guarded
def results_readme(
        sweep_id: Annotated[str | None, Field(description="A sweep: table, curves, best adapter.")] = None,
        adapters: Annotated[list[str] | None, Field(description="NAME@vN to report (default: the sweep's "
                                                                "best).")] = None,
        readme_path: Annotated[str, Field(description="Markdown file (default ./README.md).")] = "README.md",
        curves: Annotated[bool, Field(description="Also PNG curves beside it.")] = True,
        loop: Annotated[str | None, Field(description="A loop's cycle table.")] = None
        ) -> ResultsSection:
    """Write a README's results section (again = replaced): sweep or loop table, each adapter's evals vs base
    (n, 95 % CI), held-out split, PNG curves."""
    from ..report import write_results

    return write_results(readme_path, sweep_id=sweep_id, adapters=adapters, curves=curves, loop=loop)


TOOLS = [results_readme]
