"""The body of a preflight job: the real config's mask check (GRPO: its RL check, ``--rl-check``: the ceiling,
the sizing and the starting model's groups), then a few smoke steps with the tiny model. Prints one ``TUNEPACK_PREFLIGHT {json}`` line with the outcome (and the script's
``TUNEPACK_ERROR`` line when a check fails), its "sandbox" entry saying what this machine offers the
eval sandbox (Landlock ABI, seccomp, namespaces) and which mode the config's eval would use.

Usage: python -m mcp_server.pipeline.preflight_job RUN_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from ..errors import TunepackError
from ..evals.kit.probe import sandbox_facts, sandbox_line
from ..jobs.markers import emit, parse
from ..train.tiny_model import ensure_tiny_model
from .records import PreflightPlan


def run_script(args: list[str]) -> tuple[int, dict[str, list[dict]]]:
    """Run a script, echo its output into the job log, and return (exit code, its markers)."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.stdout.flush()
    return done.returncode, parse(done.stdout)


def sandbox_report(eval_sandbox: str) -> dict:
    """What this machine offers the eval sandbox, and whether the config's eval.sandbox would start here."""
    facts = sandbox_facts()
    uses = (facts["auto"] or "no isolating mode") if eval_sandbox == "auto" else eval_sandbox
    starts = {"namespaces": facts["namespaces"] and facts["cgroups_v1"], "unsafe-host": True, "docker": None,
              "confined": bool(facts["landlock_abi"]) and facts["seccomp"] and facts["uid_switch"]}.get(uses, False)
    verdict = {True: f"{uses} starts here", False: f"{uses} cannot start here", None: "not checked here"}[starts]
    print(f"[tunepack] sandbox: {sandbox_line(facts)}; eval.sandbox {eval_sandbox}: {verdict}", flush=True)
    return {**facts, "eval_sandbox": eval_sandbox, "uses": uses, "starts": starts}


def main(run_dir: str) -> int:
    plan = PreflightPlan.read(run_dir)
    result: dict = {"ok": False, "mask_check": None, "rl_check": None, "smoke": None,
                    "sandbox": sandbox_report(plan.config.eval.sandbox)}
    key = "rl_check" if "--rl-check" in plan.check_args else "mask_check"  # GRPO: ceiling, sizing, signal
    try:
        if plan.config.model.is_tiny:
            ensure_tiny_model(plan.config)
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        result[key] = {"status": "fail", **exc.to_dict()}
        emit("PREFLIGHT", result)
        return 3
    code, found = run_script([plan.check_script, *plan.check_args])
    errors = found.get("ERROR", [])
    if code != 0:
        result[key] = {"status": "fail", **(errors[-1] if errors else {"problem": f"exit code {code}"})}
        emit("PREFLIGHT", result)
        return 3
    result[key] = {"status": "pass", **(found.get("RLCHECK" if key == "rl_check" else "MASK") or [{}])[-1]}
    if plan.smoke is None:
        result["ok"] = True
        emit("PREFLIGHT", result)
        return 0
    smoke = plan.smoke
    ensure_tiny_model(smoke.config)
    code, found = run_script([smoke.script, "--output-dir", smoke.output_dir])
    done, errors = found.get("DONE", []), found.get("ERROR", [])
    shutil.rmtree(smoke.output_dir, ignore_errors=True)
    if code != 0 or not done:
        result["smoke"] = {"status": "fail", **(errors[-1] if errors else {"problem": f"exit code {code}; see the log"})}
        emit("PREFLIGHT", result)
        return 4
    result["smoke"] = {"status": "pass", **done[-1]}
    result["ok"] = True
    emit("PREFLIGHT", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
