"""GRPO's checks before spending, on the host (the GRPO counterpart of teacher.py): the prompt rows (no MBPP test
problem in training or selection, no scored test shown in its prompt), the reward files, the monitors, and the
plan the preflight reports: sizing, rewards and the generation path on the flavor.

    rows = prompt_rows(cfg)                 # the train rows and the held-out rows, checked
    plan = grpo_plan(cfg, cuda=True, use_4bit=False)    # what the run will do, in words and numbers

The script re-checks what only the job can (the reference solutions in its sandbox, the starting model's
groups); these are the refusals that need no model.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from ...config import TrainConfig
from ...errors import ConfigError, DataError
from ...train.data import read_local_rows
from ...train.speed import generation_plan
from .prompts import MBPP_SPLITS, leaks

CODE_REWARDS = ("tests", "tests_all")


def check_prompt_rows(cfg: TrainConfig, rows: list[dict]) -> None:
    """Refuse prompt rows a GRPO run cannot or should not train on (the pre-check before any job)."""
    bad = [i for i, r in enumerate(rows) if not _has_prompt(r)]
    if bad:
        raise DataError(f"{len(bad)} of {len(rows)} rows have no prompt (row indices: {bad[:20]}).",
                        "give every row a non-empty 'prompt': a string ({id, prompt[, tests, solution]}) or a list of "
                        "chat messages ({id, prompt, tools, reference} from `tunepack grpo-prompts --rows`).")
    if cfg.environment is not None and cfg.environment.name == "coding":  # an OpenEnv environment owns its tasks
        check_env_rows(rows)
    if "tool_call" in set(cfg.grpo.rewards) | set(monitors(cfg, rows)):
        untooled = [str(r.get("id", i)) for i, r in enumerate(rows) if not r.get("tools") or "reference" not in r]
        if untooled:
            raise DataError(f"The tool_call reward needs each row's tools and reference, and {len(untooled)} rows lack "
                            f"them (ids: {', '.join(untooled[:10])}).",
                            "write the rows with `tunepack grpo-prompts --rows ROWS.jsonl` (converted agent sessions), "
                            "or drop tool_call from grpo.rewards.")
    prompt_rows(cfg, rows)


def check_env_rows(rows: list[dict]) -> None:
    """An environment's problems need hidden tests (its reward), none of them shown in the prompt."""
    from ...evals.kit.coding_env import split_tests

    without = [str(r.get("id", i)) for i, r in enumerate(rows) if not split_tests(r)[1]]
    if without:
        raise DataError(f"The coding environment scores hidden tests, and {len(without)} rows have none (ids: "
                        f"{', '.join(without[:10])}).",
                        "write MBPP prompts with `tunepack grpo-prompts --mbpp FILE --split train` (one visible "
                        "test, the others hidden) or give rows {id, prompt, tests (visible), hidden_tests}.")
    shown = [str(r.get("id", i)) for i, r in enumerate(rows)
             if isinstance(r.get("prompt"), str) and any(t.strip() in r["prompt"] for t in split_tests(r)[1])]
    if shown:
        raise DataError(f"{len(shown)} rows show a hidden test in their prompt ({', '.join(shown[:5])}): the "
                        "environment's reward would be handed to the model.",
                        "show only the visible tests in the prompt (`tunepack grpo-prompts` does).")


def _has_prompt(row: dict) -> bool:
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return bool(prompt.strip())
    return isinstance(prompt, list) and bool(prompt) and all(isinstance(m, dict) and "role" in m for m in prompt)


def prompt_rows(cfg: TrainConfig, rows: list[dict] | None = None) -> tuple[list[dict], list[dict]]:
    """(train rows, held-out file rows) of a GRPO config's local prompt files, refused when unsafe to train on."""
    rows = rows if rows is not None else [row for path in cfg.data.path for row in read_local_rows(path)]
    held = list(read_local_rows(cfg.grpo.heldout_path)) if cfg.grpo.heldout_path else []
    for what, found in (("data.path", rows), ("grpo.heldout_path", held)):
        test_ids = mbpp_test_ids(found)
        if test_ids:
            raise DataError(
                f"{what} holds {len(test_ids)} problems of MBPP's test split ({', '.join(test_ids[:5])}"
                + (" …" if len(test_ids) > 5 else "") + "), which is kept for the final eval: training on it, or "
                "choosing a run by it, would make that score meaningless.",
                "train on `tunepack grpo-prompts --split train` and draw the held-out curve on `--split validation`; "
                "score the test split with eval.tasks: [mbpp].")
    leaked = leaks([r for r in rows + held if isinstance(r.get("prompt"), str)])
    if leaked:
        raise DataError(f"{len(leaked)} rows show a scored test in their prompt ({', '.join(leaked[:5])}"
                        + (" …" if len(leaked) > 5 else "") + "): the answer to that test is handed to the model.",
                        "drop the shown test from the row's tests (`tunepack grpo-prompts` scores only the tests a "
                        "prompt does not show), or show another one.")
    return rows, held


def mbpp_test_ids(rows: list[dict]) -> list[str]:
    low, high = MBPP_SPLITS["test"]
    found = []
    for row in rows:
        ident = str(row.get("id") or "")
        if ident.startswith("mbpp/") and ident[5:].isdigit() and low <= int(ident[5:]) <= high:
            found.append(ident)
    return found


def reward_sources(cfg: TrainConfig) -> dict[str, str]:
    """name -> source of each reward file, checked: UTF-8 Python that compiles and defines reward(completion, row)."""
    sources = {}
    for name, path in cfg.grpo.reward_files.items():
        try:
            text = Path(path).read_text(encoding="utf-8")
            tree = ast.parse(text, filename=path)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            raise ConfigError(f"grpo.reward_files {name} ({path}) cannot be read as Python: {exc}.",
                              "fix the file; it must define reward(completion, row) -> float.") from None
        defined = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "reward"]
        if not defined or len(defined[0].args.args) < 2:
            raise ConfigError(f"grpo.reward_files {name} ({path}) defines no reward(completion, row) function at its "
                              "top level.", "add def reward(completion: str, row: dict) -> float: ... to the file.")
        sources[name] = text
    return sources


def reward_hashes(sources: dict[str, str], cfg: TrainConfig) -> dict[str, dict]:
    return {name: {"path": cfg.grpo.reward_files[name], "sha256": hashlib.sha256(text.encode()).hexdigest()}
            for name, text in sources.items()}


def monitors(cfg: TrainConfig, rows: list[dict]) -> list[str]:
    """The rewards logged at weight 0: grpo.monitor, or (auto) tests when the rows carry tests and no code reward
    is trained."""
    grpo = cfg.grpo
    if cfg.environment is not None:  # the environment's reward is the hidden tests already
        return []
    if grpo.monitor != "auto":
        return list(grpo.monitor)
    if set(CODE_REWARDS) & set(grpo.rewards):
        return []
    return ["tests"] if rows and all(r.get("tests") for r in rows) else []


def config_monitors(cfg: TrainConfig) -> list[str]:
    """``monitors`` of the config's own local prompt rows (read here)."""
    return monitors(cfg, [row for path in cfg.data.path for row in read_local_rows(path)] if cfg.data.path else [])


def runs_code(cfg: TrainConfig, monitored: list[str]) -> bool:
    """Does the run need the sandbox: code rewards, monitors or reward files."""
    names = set(cfg.grpo.rewards) | set(monitored)
    return bool(names & set(CODE_REWARDS)) or bool(cfg.grpo.reward_files) or cfg.environment is not None


def needs_kit(cfg: TrainConfig, monitored: list[str]) -> bool:
    """Does the script embed the eval kit: its sandbox, or its tool-call parsers (tool_call)."""
    return runs_code(cfg, monitored) or "tool_call" in set(cfg.grpo.rewards) | set(monitored)


def sizing(cfg: TrainConfig) -> dict:
    training, grpo = cfg.training, cfg.grpo
    completions = training.per_device_train_batch_size * training.gradient_accumulation_steps
    prompts = completions // grpo.num_generations
    return {"completions_per_step": completions, "prompts_per_step": prompts, "generations": grpo.num_generations,
            "line": f"{completions} completions per step = {prompts} prompt(s) x {grpo.num_generations} generations "
                    "(prompts per step = batch x accumulation / generations)"}


def grpo_plan(cfg: TrainConfig, *, cuda: bool, use_4bit: bool, flavor: str | None = None,
              start: dict | None = None) -> dict:
    """What a GRPO run will do before it spends: rewards and monitors, sizing, the generation path on the
    flavor, where it starts from, and what the job checks first."""
    monitored = config_monitors(cfg)
    # vllm is in the job only when the script's header lists it (grpo.generation: vllm)
    plan = generation_plan(cfg.grpo.generation, cuda, cfg.grpo.generation == "vllm", use_4bit)
    return {"rewards": dict(cfg.grpo.rewards), "monitor": monitored, "reward_files": sorted(cfg.grpo.reward_files),
            "sizing": sizing(cfg), "flavor": flavor, "generation": plan,
            "start": {k: start[k] for k in ("ref", "method", "lora")} if start else None,
            "in_the_job": [c for c, on in (("ceiling: reference solutions through the code rewards",
                                            cfg.grpo.ceiling_check and runs_code(cfg, monitored)),
                                           ("signal: mixed groups of the starting model", cfg.grpo.signal_check)) if on]}
