"""The sections of the methods beyond SFT: distillation (teacher, distill), GRPO (grpo), GRPO inside an
environment (environment) and preference optimisation (dpo).

Each method's knobs live in its own section of TrainConfig; the cross-section rules (a teacher needs
training.method distill, grpo needs prompt rows, ...) stay with TrainConfig's validators in schema.py.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .section import Section

REWARDS = ("tests", "tests_all", "format", "length", "tool_call")  # grpo's built-ins (methods/grpo/rewards.py, the kit)
REWARD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class TeacherSection(Section):
    """The model a distillation run learns from (training.method: distill)."""

    name: str = Field(description="Hub id, a local model folder, or a local PEFT adapter folder (its base model plus "
                      "the adapter, merged in memory). Its tokenizer must give the student's ids on the run's rows.",
                      min_length=1)
    revision: str | None = Field(None, description="Hub revision (branch, tag or commit) of the teacher.")
    quantization: Literal["auto", "4bit", "none"] = Field(
        "auto", description="4bit = load the teacher in nf4 (frozen, so no quality cost to training beyond its "
        "own rounding); none = the weights' dtype; auto = 4bit on CUDA when the memory quote says teacher and "
        "student do not fit the GPU otherwise.")
    trust_remote_code: bool = Field(False, description="Allow the teacher's custom modelling code from the hub.")


class DistillSection(Section):
    """Generalized knowledge distillation (GKD): where the training tokens come from, and which divergence."""

    lmbda: float = Field(0.0, ge=0, le=1, description="Share of batches the student writes itself (on-policy: the "
                         "student generates the turn, the teacher scores it). 0 = off-policy (the recorded turns), "
                         "1 = on-policy only.")
    beta: float = Field(0.0, ge=0, le=1, description="Divergence: 0 = forward KL(teacher || student) (mode-covering, "
                        "the usual start), 0.5 = Jensen-Shannon, 1 = reverse KL (mode-seeking).")
    temperature: float = Field(1.0, gt=0, le=10, description="Softmax temperature of both models in the loss and "
                               "of the student's sampling on-policy.")
    max_new_tokens: int = Field(128, ge=1, le=4096, description="Longest turn the student writes on-policy; it "
                                "stops earlier at its end of turn or at the end of its first tool call.")

    @property
    def mode(self) -> str:
        """off-policy, on-policy or mixed (the Trackio group: the modes' losses are not comparable)."""
        return "off-policy" if self.lmbda == 0 else "on-policy" if self.lmbda == 1 else f"mixed-lmbda{self.lmbda:g}"


class EnvironmentSection(Section):
    """GRPO inside an environment: tunepack's own (``environment: coding``) or an OpenEnv environment
    (``environment: {name: openenv, env: module:Class}``). The model works on each task through tools, one session
    per rollout, and the environment owns the reward."""

    name: Literal["coding", "openenv"] = Field(
        "coding", description="coding = a problem in a live Python session: tools run_python (state persists), "
        "write_file, read_file, run_tests (the visible tests); reward = the hidden tests' pass rate, minus 0.2 when no "
        "code ever ran and 0.1 when the rollout called tools past tool_budget. openenv = an OpenEnv environment "
        "(openenv-core): its Action is the one tool (environment.tool), its observations are the tool results, its "
        "reward is the rollout's reward.")
    env: str | None = Field(None, description="openenv: the Environment subclass as 'module:Class' (found on "
                            "env_path); tunepack starts it as a local server (loopback, its own process, no token in "
                            "its environment) for the run's length. Its Action and Observation types are read from "
                            "Environment[Action, Observation, State].")
    env_path: str | None = Field(None, description="openenv: the folder put on the server's import path for env "
                                 "(relative to the config's folder; default: the config's folder).")
    base_url: str | None = Field(None, description="openenv: a running OpenEnv server instead of env (e.g. "
                                 "http://127.0.0.1:8000, a Space's https://<owner>-<space>.hf.space, or a Docker "
                                 "image you started with `docker run -p 8000:8000 IMAGE`); set max_sessions to the "
                                 "server's max_concurrent_envs.")
    max_sessions: int = Field(8, ge=1, le=1024, description="openenv: the server's maximum concurrent sessions "
                              "(max_concurrent_envs; tunepack starts a local server with it). A run holds "
                              "per_device_train_batch_size x gradient_accumulation_steps sessions at once, so a "
                              "larger batch is refused before training.")
    tool: str = Field("act", pattern=r"^[a-z][a-z0-9_]{0,39}$", description="openenv: the name of the one tool the "
                      "model calls; its arguments are the Action's fields, its result the observation.")
    max_turns: int = Field(6, ge=1, le=32, description="Messages the model writes per rollout after tool results "
                           "(TRL's max_tool_calling_iterations); the loop also ends at max_completion_length.")
    tool_budget: int = Field(8, ge=1, le=64, description="Tool calls per rollout; calls beyond it return an error "
                             "and the rollout is penalised (runaway tool calls).")
    timeout_s: float = Field(5.0, gt=0, le=120, description="coding: each program's time limit; openenv: each "
                             "step's reply. A call past it returns an error result and the session continues "
                             "(coding) or the run stops with the reason (openenv).")
    save_rollouts: bool = Field(True, description="Write every rollout (training and held-out) as a Pi session with "
                                "its reward and verdict (rollouts/ in the output folder): the Hub's trace viewer "
                                "shows them and `tunepack traces convert --only-verified` turns them into SFT rows.")

    @model_validator(mode="after")
    def _source(self) -> "EnvironmentSection":
        given = [k for k in ("env", "env_path", "base_url") if getattr(self, k)]
        if self.name == "coding" and given:
            raise ValueError(f"environment.{given[0]} applies to environment: openenv; remove it, or set name: openenv")
        if self.name == "openenv":
            if bool(self.env) == bool(self.base_url):
                raise ValueError("environment: openenv needs exactly one of env ('module:Class' of an OpenEnv "
                                 "Environment tunepack starts as a local server, e.g. env: count_env:CountEnvironment"
                                 ") or base_url (a server already running: a local one, a Space's URL, or a Docker "
                                 "image you started)")
            if self.env and not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", self.env):
                raise ValueError(f"environment.env '{self.env}' is not 'module:Class' (e.g. count_env:CountEnvironment"
                                 ", the module found on environment.env_path)")
            if self.base_url and not re.match(r"^(https?|wss?)://", self.base_url):
                raise ValueError(f"environment.base_url '{self.base_url}' is no URL; give http(s)://HOST:PORT of a "
                                 "running OpenEnv server")
        return self


def concurrent_sessions(cfg) -> int:
    """Environment sessions a GRPO run holds at once: TRL generates a whole step's completions together
    (per_device_train_batch_size x steps_per_generation, which is gradient_accumulation_steps here), one environment
    instance per completion; num_generations is inside that count (a prompt's group is num_generations of them)."""
    return cfg.training.per_device_train_batch_size * cfg.training.gradient_accumulation_steps


class GrpoSection(Section):
    """GRPO: the model writes num_generations completions per prompt; each is scored by the rewards, and the
    advantages are the scores relative to their group's."""

    rewards: dict[str, float] = Field(
        default_factory=lambda: {"format": 1.0},
        description="Reward name -> weight, combined as a weighted sum; each component is logged on its own "
        "(rewards/<name>/mean). tests = the share of the row's asserts the code passes, run in the sandbox and "
        "judged outside the code's process; tests_all = 1 only when all pass; format = one fenced code block, "
        "nothing else; length = 1 - |tokens - length_target| / length_target, floored at 0 (the tutorial's "
        "minimal demo); tool_call = the expected tool call in the model family's own syntax (rows with tools and a "
        "reference call, from `tunepack grpo-prompts --rows`): 0.25 each for a call that parses, the right tool, "
        "arguments valid against its schema, the reference's values (1 for an answer where none is expected); "
        "any name of grpo.reward_files = your own reward.")
    reward_files: dict[str, str] = Field(
        default_factory=dict,
        description="Your own rewards: name -> a .py file defining reward(completion: str, row: dict) -> float "
        "(row: the prompt row, prompt included). Each file is embedded in the script, hashed into the manifest, and "
        "runs in the sandbox of the code rewards (no network, no token, empty environment), one completion per "
        "program; a call that raises or returns no number scores 0 and is counted. Name it in grpo.rewards (trained) "
        "or grpo.monitor (logged only).")
    monitor: list[str] | Literal["auto"] = Field(
        "auto", description="Rewards scored and logged beside the trained ones at weight 0, on the training "
        "completions and the held-out prompts (eval/monitor/<name>): the real measure a gamed reward would hide. "
        "The hacking check compares the trained reward with each of them. auto = tests when the rows carry "
        "tests and no tests reward is trained, else none.")
    sandbox: Literal["auto", "namespaces", "confined", "unsafe-host"] = Field(
        "auto", description="Where the tests reward runs the generated code (the eval kit's sandbox; confined on "
        "HF Jobs, where namespaces are unavailable). unsafe-host only when chosen, and labelled.")
    heldout_path: str | None = Field(None, description="Prompt rows for the held-out curve (e.g. MBPP's "
                                     "validation split from `tunepack grpo-prompts`); default: data.eval_fraction "
                                     "of the rows, by id.")
    length_target: int = Field(64, ge=1, description="The completion length (tokens) the length reward pays for.")
    num_generations: int = Field(8, ge=2, le=64, description="Completions per prompt (a group). Prompts per step = "
                                 "batch x accumulation / num_generations.")
    max_completion_length: int = Field(256, ge=1, le=8192, description="Longest completion (tokens).")
    temperature: float = Field(1.0, gt=0, le=2, description="Sampling temperature of the completions (groups need "
                               "different completions to have a signal).")
    beta: float = Field(0.0, ge=0, description="KL penalty to the starting model; 0 = none (TRL's default: no "
                        "reference model in memory).")
    loss_type: Literal["dapo", "grpo", "dr_grpo", "bnpo"] = Field(
        "dapo", description="TRL's loss normalisation; dapo (TRL's default) averages over all tokens of the batch, "
        "so long completions do not dominate.")
    eval_steps: int | None = Field(None, ge=1, description="Score the held-out prompts every N steps "
                                   "(eval/reward; default: training.logging_steps).")
    eval_prompts: int = Field(64, ge=1, description="At most this many held-out prompts per evaluation.")
    generation: Literal["auto", "vllm", "transformers"] = Field(
        "auto", description="How completions are generated: auto = vLLM colocate on a GPU with vllm installed and "
        "LoRA in bf16, else transformers (a 4-bit model always generates through transformers: QLoRA with vLLM "
        "merges into 4-bit weights, lossy); vllm adds vllm to the script's dependencies.")
    signal_check: bool = Field(True, description="Before training: num_generations samples for up to "
                               "signal_prompts train prompts from the starting model; refuse when under 10 % of the "
                               "groups have mixed rewards (no advantage to learn from), with the fix.")
    signal_prompts: int = Field(16, ge=1, le=256, description="Prompts the signal check samples.")
    ceiling_check: bool = Field(True, description="Before training (and in the preflight): each row's reference "
                                "'solution' through the code rewards (tests, tests_all) in the sandbox; rows it "
                                "cannot pass are impossible here, so they are dropped and the ceiling is logged.")
    stop_on_hacking: bool = Field(True, description="Stop the run (its adapter saved as it is) when its reward "
                                  "looks gamed: the trained reward rising while the held-out one falls, completion "
                                  "length pinned at max_completion_length, or nearly every group flat. A Trackio "
                                  "alert and a TUNEPACK_ALERT line say why either way.")

    @field_validator("rewards")
    @classmethod
    def _some_reward(cls, value: dict[str, float]) -> dict[str, float]:
        if value and all(w == 0 for w in value.values()):
            raise ValueError("every reward weight is 0: nothing would be optimised")
        return value

    @field_validator("reward_files")
    @classmethod
    def _file_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if name in REWARDS or not REWARD_NAME.match(name):
                raise ValueError(f"grpo.reward_files name '{name}': use a new name of lower-case letters, digits and "
                                 f"'_' (not a built-in reward: {', '.join(REWARDS)})")
            if not str(path).endswith(".py"):
                raise ValueError(f"grpo.reward_files {name}: '{path}' is not a .py file defining reward(completion, row)")
        return value

    @model_validator(mode="after")
    def _known_names(self) -> "GrpoSection":
        known = (*REWARDS, *self.reward_files)
        unknown = sorted(set(self.rewards) - set(known))
        if unknown:
            raise ValueError(f"unknown reward {', '.join(unknown)}; built in: {', '.join(REWARDS)}"
                             + (f"; your files: {', '.join(self.reward_files)}" if self.reward_files else "")
                             + " (add your own as grpo.reward_files: {name: path.py})")
        if self.monitor != "auto":
            for name in self.monitor:
                if name not in known:
                    raise ValueError(f"grpo.monitor '{name}' is no reward; use one of {', '.join(known)}")
                if name in self.rewards:
                    raise ValueError(f"grpo.monitor '{name}' is also a trained reward (grpo.rewards); a monitor is "
                                     "the measure the training does not optimise")
        unused = sorted(set(self.reward_files) - set(self.rewards) - set(self.monitor if self.monitor != "auto" else ()))
        if unused:
            raise ValueError(f"grpo.reward_files {', '.join(unused)} is neither trained (grpo.rewards) nor logged "
                             "(grpo.monitor): name it in one of them, or remove it")
        return self


DpoLoss = Literal["sigmoid", "ipo", "hinge", "robust", "apo_zero", "apo_down", "sigmoid_norm"]  # TRL 1.16 has them


class DpoSection(Section):
    """Direct preference optimisation: rows {prompt, chosen, rejected} (conversational), the reference being the
    starting model (the LoRA adapter switched off)."""

    beta: float = Field(0.1, gt=0, le=10, description="How far the policy may move from the reference: the "
                        "implicit reward is beta x (log-ratio to the reference); higher = stay closer.")
    loss_type: DpoLoss = Field(
        "sigmoid", description="TRL's DPO loss: sigmoid (the DPO paper's), ipo, hinge, robust (with "
        "label_smoothing), apo_zero / apo_down (anchored), sigmoid_norm (length-normalised log-ratios).")
    label_smoothing: float = Field(0.0, ge=0, lt=0.5, description="The share of pairs assumed mislabelled (robust "
                                   "and sigmoid losses); 0 = trust every pair.")
    eval_pairs: int = Field(64, ge=1, le=4096, description="At most this many held-out pairs measured before and "
                            "after training (preference accuracy and chosen-minus-rejected margin).")


# ---------------------------------------------------------------------------------------------
# Each method's rules over the whole config (TrainConfig._method runs the ones of its training.method)
# ---------------------------------------------------------------------------------------------

def _no_teacher(cfg) -> None:
    if cfg.teacher is not None:
        raise ValueError(f"a teacher is set but training.method is {cfg.training.method}: set training.method: "
                         "distill (or remove the teacher section)")
    if cfg.distill != DistillSection():
        raise ValueError("the distill section applies only to training.method: distill; set it (or remove the "
                         "section)")


def _no_grpo(cfg) -> None:
    if cfg.environment is not None:
        raise ValueError(f"environment: {cfg.environment.name} trains with GRPO; set training.method: grpo "
                         "(or remove the environment section)")
    if cfg.grpo != GrpoSection():
        raise ValueError("the grpo section applies only to training.method: grpo; set it (or remove the section)")
    if cfg.data.format == "prompts":
        raise ValueError("data.format prompts (prompt-only rows) trains only with training.method: grpo")


def _no_dpo(cfg) -> None:
    if cfg.dpo != DpoSection():
        raise ValueError("the dpo section applies only to training.method: dpo; set it (or remove the section)")
    if cfg.data.format == "preference":
        raise ValueError("data.format preference ({prompt, chosen, rejected} rows) trains only with "
                         "training.method: dpo")


def _distill(cfg) -> None:
    if cfg.teacher is None:
        raise ValueError("training.method is distill but there is no teacher: add teacher: {name: <Hub id or "
                         "local folder>} (a larger model of the student's family, with the same tokenizer)")
    if cfg.training.packing is True:
        raise ValueError("training.packing: true does not apply to distillation: teacher and student score "
                         "padded batches; set training.packing: auto or false")
    if cfg.distributed.processes > 1:
        raise ValueError("distillation runs in one process for now (teacher and student on one device); set "
                         "distributed.processes: 1 and pick a flavor whose GPU holds both (the preflight quotes "
                         "the memory)")
    if cfg.teacher.name == cfg.model.name and cfg.teacher.revision == cfg.model.revision:
        raise ValueError(f"the teacher is the student itself ({cfg.model.name}): distil from a larger model "
                         "of the family, or an SFT adapter trained on it")
    if cfg.model.adapter:
        raise ValueError(f"model.adapter ({cfg.model.adapter}) starts a run from a registered adapter, which "
                         "SFT and GRPO do (distillation trains a new student adapter for now); remove "
                         "model.adapter, or train it further with training.method sft or grpo")


def _grpo(cfg) -> None:
    grpo, training = cfg.grpo, cfg.training
    if cfg.data.format not in ("prompts", "auto"):
        raise ValueError(f"training.method grpo needs prompt-only rows (data.format: prompts), not "
                         f"'{cfg.data.format}'")
    cfg.data.format = "prompts"
    generated = training.per_device_train_batch_size * training.gradient_accumulation_steps
    if generated % grpo.num_generations:
        raise ValueError(f"training.per_device_train_batch_size x gradient_accumulation_steps = {generated} "
                         f"completions per step is not a multiple of grpo.num_generations {grpo.num_generations}"
                         f"; e.g. batch {grpo.num_generations} (one prompt per step) or "
                         f"{2 * grpo.num_generations} (two)")
    if cfg.distributed.processes > 1:
        raise ValueError("GRPO runs in one process for now; set distributed.processes: 1")
    if cfg.environment is not None and cfg.environment.name == "openenv":
        _openenv_sizing(cfg)
    if cfg.environment is not None:
        if "rewards" not in grpo.model_fields_set:
            grpo.rewards = {}  # the environment owns the reward
        if grpo.rewards or grpo.reward_files or grpo.monitor not in ("auto", []):
            raise ValueError(f"environment: {cfg.environment.name} owns the reward (coding: the hidden tests, with its "
                             "penalties; openenv: the server's reward); grpo.rewards, grpo.reward_files and "
                             "grpo.monitor do not apply beside it yet: remove them")
    if not grpo.rewards and cfg.environment is None:
        raise ValueError("no reward: name at least one in grpo.rewards (e.g. {format: 1.0}), or train inside an "
                         "environment (environment: coding)")


def _openenv_sizing(cfg) -> None:
    held, most = concurrent_sessions(cfg), cfg.environment.max_sessions
    if held > most:
        t = cfg.training
        raise ValueError(f"this run holds {held} OpenEnv sessions at once (per_device_train_batch_size "
                         f"{t.per_device_train_batch_size} x gradient_accumulation_steps "
                         f"{t.gradient_accumulation_steps}: one session per completion of a step) but the server "
                         f"allows environment.max_sessions {most}; lower the batch to at most {most} completions per "
                         f"step, or raise max_sessions (the server's max_concurrent_envs; a server you started must "
                         "allow as many)")


def _dpo(cfg) -> None:
    if cfg.data.format not in ("preference", "auto"):
        raise ValueError(f"training.method dpo needs preference rows {{prompt, chosen, rejected}} (data.format: "
                         f"preference), not '{cfg.data.format}'; build them from a run's rollouts with `tunepack dpo "
                         "pairs RUN_DIR -o pairs.jsonl`")
    cfg.data.format = "preference"
    if cfg.training.packing is True:
        raise ValueError("training.packing: true does not apply to DPO: each pair is scored as two padded "
                         "sequences; set training.packing: auto or false")
    if cfg.distributed.processes > 1:
        raise ValueError("DPO runs in one process for now; set distributed.processes: 1")
    if cfg.data.eval_split:
        raise ValueError("data.eval_split: DPO holds out pairs by prompt from data.path; use data.eval_fraction")


METHOD_RULES = {"sft": (_no_teacher, _no_grpo, _no_dpo), "distill": (_distill, _no_grpo, _no_dpo),
                "grpo": (_no_teacher, _grpo, _no_dpo), "dpo": (_no_teacher, _no_grpo, _dpo)}
# what a run's default name says of its method (the registry name adds the method itself)
RUN_SUFFIX = {
    "sft": lambda cfg: "",
    "distill": lambda cfg: f"-kd-l{cfg.distill.lmbda:g}-b{cfg.distill.beta:g}",
    "grpo": lambda cfg: f"-grpo-g{cfg.grpo.num_generations}" + (f"-{cfg.environment.name}" if cfg.environment else ""),
    "dpo": lambda cfg: f"-dpo-b{cfg.dpo.beta:g}",
}
