"""The README's results section as a tool (its CLI twin: ``tunepack results readme``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..report import ResultsSection
from .common import guarded


@guarded
def results_readme(
        sweep_id: Annotated[str | None, Field(description="A sweep: its table, curves and best adapter.")] = None,
        adapters: Annotated[list[str] | None, Field(description="NAME@vN to report (default: the sweep's "
                                                                "best).")] = None,
        readme_path: Annotated[str, Field(description="The markdown file (default: ./README.md).")] = "README.md",
        curves: Annotated[bool, Field(description="Also the curves, as PNG files beside it.")] = True,
        loop: Annotated[str | None, Field(description="A continual-learning loop: its cycle table.")] = None
        ) -> ResultsSection:
    """Write the results section of a README in place (again = replaced): sweep table, each adapter's eval
    tables vs base (n, 95 % CI), held-out sessions, curves as PNG."""
    from ..report import write_results

    return write_results(readme_path, sweep_id=sweep_id, adapters=adapters, curves=curves, loop=loop)


TOOLS = [results_readme]
