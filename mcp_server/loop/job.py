"""A loop cycle as a local job (``loop_cycle``): ``python -m mcp_server.loop.job SPEC``. It takes no job slot of its
own (its training job takes one), prints the cycle as a TUNEPACK_LOOP line and exits 0 when the cycle was decided,
3 with a TUNEPACK_ERROR line when it could not run (too little new data, its bound reached, …)."""

from __future__ import annotations

import sys

from ..errors import TunepackError
from ..jobs.markers import emit


def main(argv: list[str]) -> int:
    from . import load_spec, run_cycle

    try:
        cycle = run_cycle(load_spec(argv[0]))
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        return 3
    emit("LOOP", cycle.model_dump(mode="json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
