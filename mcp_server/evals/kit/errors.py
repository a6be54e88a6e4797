"""The eval kit's one error: what went wrong and what to do next.

The kit is embedded verbatim in rendered eval scripts, so it cannot import tunepack's own error
module; tunepack maps ``KitError`` to ``EvalError`` (same ``problem`` + ``fix`` shape).
"""


class KitError(Exception):
    """A failure the caller (usually an agent) can act on."""

    def __init__(self, problem: str, fix: str = ""):
        self.problem = problem.rstrip()
        self.fix = fix.rstrip()
        super().__init__(f"{self.problem} Fix: {self.fix}" if self.fix else self.problem)
