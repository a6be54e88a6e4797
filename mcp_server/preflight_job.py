"""The body of a preflight job: the real config's mask check, then a few smoke steps with the
tiny model. Prints one ``TUNEPACK_PREFLIGHT {json}`` line with the outcome (and the script's
``TUNEPACK_ERROR`` line when a check fails).

Usage: python -m mcp_server.preflight_job RUN_DIR
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from .config import TrainConfig
from .jobs import parse_markers


def emit(payload: dict) -> None:
    print("TUNEPACK_PREFLIGHT " + json.dumps(payload, default=str), flush=True)


def run_script(args: list[str]) -> tuple[int, str]:
    """Run a script, echo its output into the job log, and return (exit code, output)."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.stdout.flush()
    return done.returncode, done.stdout


def main(run_dir: str) -> int:
    plan = json.loads((Path(run_dir) / "preflight.json").read_text())
    result: dict = {"ok": False, "mask_check": None, "smoke": None}
    from .pipeline import ensure_tiny_model

    config = TrainConfig.model_validate(plan["config"])
    if config.model.is_tiny:
        ensure_tiny_model(config)
    code, out = run_script([plan["check_script"], "--check-only"])
    errors = parse_markers(out, "ERROR")
    if code != 0:
        result["mask_check"] = {"status": "fail", **(errors[-1] if errors else {"problem": f"exit code {code}"})}
        emit(result)
        return 3
    result["mask_check"] = {"status": "pass", **(parse_markers(out, "MASK") or [{}])[-1]}
    if plan["smoke"] is None:
        result["ok"] = True
        emit(result)
        return 0
    smoke = plan["smoke"]
    ensure_tiny_model(TrainConfig.model_validate(smoke["config"]))
    code, out = run_script([smoke["script"], "--output-dir", smoke["output_dir"]])
    done = parse_markers(out, "DONE")
    errors = parse_markers(out, "ERROR")
    shutil.rmtree(smoke["output_dir"], ignore_errors=True)
    if code != 0 or not done:
        result["smoke"] = {"status": "fail", **(errors[-1] if errors else {"problem": f"exit code {code}; see the log"})}
        emit(result)
        return 4
    result["smoke"] = {"status": "pass", **done[-1]}
    result["ok"] = True
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
