"""Where a config makes its run execute code the agent can influence outside the eval kit's sandbox: the model's
(or the teacher's) own modelling code, an OpenEnv environment module started as a local server, and an
``unsafe-host`` sandbox that runs generated code, rows' tests and
reward files unisolated. Custodian mode refuses such a run on its own machine (approval/custodian.py).

Generated code, rows' tests and solutions, reward files and the coding environment run in the sandbox (another
uid or namespaces; no token, no home, no network) unless a sandbox is set to ``unsafe-host``; data is read as
data (safetensors weights, Jinja chat templates in Transformers' sandboxed environment)."""

from __future__ import annotations

from .eval_section import EvalSection
from .schema import TrainConfig


def agent_code_paths(cfg: TrainConfig) -> list[str]:
    found = []
    if cfg.model.trust_remote_code:
        found.append(f"model.trust_remote_code runs the Python code shipped with {cfg.model.name}")
    if cfg.teacher is not None and cfg.teacher.trust_remote_code:
        found.append(f"teacher.trust_remote_code runs the Python code shipped with {cfg.teacher.name}")
    if cfg.training.method == "grpo" and cfg.grpo.sandbox == "unsafe-host":
        found.append("grpo.sandbox: unsafe-host runs the completions, the rows' tests and solutions and the reward "
                     "files without isolation")
    env = cfg.environment
    if env is not None and env.name == "openenv" and env.env:
        found.append(f"environment.env ({env.env}) starts that OpenEnv environment's server under this account, "
                     "outside the sandbox (a server at environment.base_url runs wherever it was started)")
    found += eval_code_paths(cfg.eval)
    return found


def eval_code_paths(ev: EvalSection | None, model_code: bool = False) -> list[str]:
    found = []
    if ev is not None and ev.sandbox == "unsafe-host" and ev.tasks:
        found.append("eval.sandbox: unsafe-host runs the model's answers without isolation")
    if model_code:
        found.append("the registered model needs trust_remote_code (the Python code shipped with it)")
    return found


CUSTODIAN_FIX = ("run it on HF Jobs (backend 'hf': HF's machine, with the custodian's approval), or under the agent's "
                 "own account with its own tunepack (no token there); or drop it from the config (a sandbox of "
                 "'auto' isolates generated code)")
