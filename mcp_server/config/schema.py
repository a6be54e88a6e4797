"""The training config: one pydantic model per section, unknown keys forbidden.

Every field carries a description: it is what an agent reads in the JSON schema, and what the
error messages quote. Cross-field rules ("impossible combinations") live in model validators and
raise ValueError with the key, the value and what is allowed; ``load.py`` turns them into one
ConfigError.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .data_section import HUB_ID, DataFormat, DataSection, TracesSection  # noqa: F401  (DataFormat: re-exported)
from .eval_section import NEXT_ACTION, EvalSection
from .methods import (
    METHOD_RULES,
    RUN_SUFFIX,
    DistillSection,
    DpoSection,
    EnvironmentSection,
    GrpoSection,
    TeacherSection,
)
from .section import Section, untitled  # noqa: F401  (untitled: re-exported for the traces models)

ADAPTER_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*?(@v[1-9][0-9]*)?$")
TINY_PREFIX = "tiny:"
TINY_ARCHS = ("qwen3", "llama3", "gemma4")


class ModelSection(Section):
    name: str = Field(
        description="Hub id (e.g. Qwen/Qwen3-0.6B, google/gemma-4-E2B-it), a local model folder, or "
        "tiny:qwen3 / tiny:llama3 / tiny:gemma4 for a random-initialised CPU replica of that family (its real "
        "architecture class, special tokens and stock chat template; a tokenizer trained on the data).",
        min_length=1,
    )
    revision: str | None = Field(None, description="Hub revision (branch, tag or commit).")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="Weights dtype: auto = bfloat16 on CUDA, float32 on CPU."
    )
    trust_remote_code: bool = Field(False, description="Allow custom modelling code from the hub.")
    attention: Literal["auto", "sdpa", "eager", "flash_attention_2", "kernels-community/flash-attn3"] = Field(
        "auto", description="Attention implementation: auto = a varlen flash-attention kernel when installed and the "
        "GPU runs it, else sdpa.")

    adapter: str | None = Field(
        None, description="Start from a registered adapter, NAME or NAME@vN (`tunepack registry list`): its LoRA "
        "weights train further (its rank and targets are kept) on its own base model, which model.name must name. "
        "training.method grpo (the tutorial's order: SFT or distillation first, then GRPO) or sft (the ladder's "
        "last rung: verified rollouts of a GRPO run trained into its adapter); an HF job needs it published "
        "(`tunepack registry publish`).")

    @field_validator("adapter")
    @classmethod
    def _adapter_ref(cls, value: str | None) -> str | None:
        if value is not None and not ADAPTER_REF.match(value):
            raise ValueError(f"'{value}' is not a registry reference; use NAME or NAME@vN (e.g. tiny-qwen3-sft@v2)")
        return value

    @field_validator("name")
    @classmethod
    def _known_tiny(cls, value: str) -> str:
        if value.startswith(TINY_PREFIX) and value[len(TINY_PREFIX):] not in TINY_ARCHS:
            raise ValueError(
                f"'{value}' is not an embedded model; allowed: "
                + ", ".join(TINY_PREFIX + a for a in TINY_ARCHS)
            )
        return value

    @property
    def is_tiny(self) -> bool:
        return self.name.startswith(TINY_PREFIX)


class LoraSection(Section):
    r: int = Field(16, ge=1, le=1024, description="LoRA rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha (scaling = alpha / r).")
    dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout.")
    target_modules: str | list[str] = Field(
        "all-linear", description="'all-linear' or a list of module names (e.g. [q_proj, v_proj])."
    )

    @field_validator("target_modules")
    @classmethod
    def _non_empty(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and not value:
            raise ValueError("an empty list trains nothing; use 'all-linear' or name the modules")
        return value


class TrainingSection(Section):
    learning_rate: float = Field(2e-4, gt=0, le=1, description="Peak learning rate.")
    num_train_epochs: float = Field(1.0, gt=0, description="Epochs (ignored when max_steps > 0).")
    max_steps: int = Field(-1, description="Total optimizer steps; -1 = use num_train_epochs.")
    per_device_train_batch_size: int = Field(4, ge=1, description="Batch size per device.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Micro-batches per step.")
    max_length: int = Field(1024, ge=16, description="Longest tokenized row (tokens).")
    packing: bool | Literal["auto"] = Field(
        "auto", description="Pack rows into max_length sequences (best-fit decreasing, padding-free, each row's "
        "attention isolated). auto = on wherever the script proves the isolation on real rows at start, else "
        "length-grouped padded batches; false = padded batches.")
    seed: int = Field(42, description="Random seed.")
    logging_steps: int = Field(10, ge=1, description="Log metrics every N steps.")
    eval_steps: int | None = Field(None, ge=1, description="Evaluate every N steps (default: logging_steps).")
    warmup_ratio: float = Field(0.03, ge=0, lt=1, description="Share of steps spent warming up.")
    lr_scheduler_type: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "cosine"
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    gradient_checkpointing: bool | Literal["auto"] = Field(
        "auto", description="Activation checkpointing: trade about a third more compute for memory. auto = only "
        "when GPU memory needs it (never on CPU).")
    save_steps: int | None = Field(None, ge=1, description="Checkpoint every N steps (default: only at the end).")
    method: Literal["sft", "distill", "grpo", "dpo"] = Field(
        "sft", description="sft = learn the recorded tokens; distill = learn a teacher's next-token distribution on "
        "the same tokens SFT trains (needs the teacher section; knobs in distill); grpo = group relative policy "
        "optimisation on prompt-only rows (data.format prompts) with verifiable rewards (knobs in grpo); dpo = direct "
        "preference optimisation on {prompt, chosen, rejected} rows (data.format preference; knobs in dpo).")

    @field_validator("max_steps")
    @classmethod
    def _steps(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError(f"{value} trains nothing; use a positive step count or -1 (use epochs)")
        return value


class TrackingSection(Section):
    project: str = Field("tunepack", min_length=1, description="Trackio project.")
    run_name: str | None = Field(
        None, description="Trackio run name (default: model, rank and learning rate plus a timestamp)."
    )
    group: str | None = Field(None, min_length=1, max_length=120,
                              description="Trackio group of the run: runs shown and compared together (a loop sets "
                                          "NAME-cycle-N; default: distillation its mode, else none).")
    space_id: str | None = Field(None, description="Optional Trackio Space (namespace/name) to sync to.")
    private: bool = Field(True, description="Create the Space private.")
    server_url: str | None = Field(
        None, description="A self-hosted Trackio server (http(s)://host:port) the job logs to instead of a Space; its "
        "write token travels as the job secret TRACKIO_WRITE_TOKEN, never in the URL.")

    @field_validator("server_url")
    @classmethod
    def _server(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not re.fullmatch(r"https?://[^\s?#]+", value):
            raise ValueError(f"'{value[:80]}' is not a Trackio server URL (http(s)://host[:port], no query: export "
                             "the write token as TRACKIO_WRITE_TOKEN instead of putting it in the URL)")
        return value.rstrip("/")

    @field_validator("project")
    @classmethod
    def _safe_project(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", value):
            raise ValueError(f"'{value}' may only hold letters, digits, '-' and '_'")
        return value

    @field_validator("space_id")
    @classmethod
    def _space(cls, value: str | None) -> str | None:
        if value is not None and not HUB_ID.match(value):
            raise ValueError(f"'{value}' is not a Space id of the form namespace/name")
        return value


class OutputSection(Section):
    name: str | None = Field(
        None, description="Registry name of the adapter (default: tracking.run_name or the model name)."
    )
    adapter_dir: str | None = Field(
        None, description="Where the script saves the adapter (default: a folder in the job's workdir)."
    )
    hub_repo_id: str | None = Field(None, description="Hub model repo to push the adapter to (later: push).")
    private: bool = Field(True, description="Create the Hub repo private.")
    register_when: Literal["always", "beats_base"] = Field(
        "always", description="beats_base: after the config's eval, a version whose adapter does not beat the base "
        "on every scored task is withdrawn (kept as evidence, skipped as the newest). Needs eval.tasks.")

    @field_validator("hub_repo_id")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        if value is not None and not HUB_ID.match(value):
            raise ValueError(f"'{value}' is not a repo id of the form namespace/name")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError(f"'{value}' may only hold letters, digits, '.', '-' and '_'")
        return value


class JobSection(Section):
    backend: Literal["local", "hf"] = Field("local", description="Where the job runs (a tool call may override).")
    flavor: str | None = Field(None, description="Hardware flavor for the hf backend (e.g. a10g-small).")
    timeout_s: int | None = Field(None, ge=1, description="Kill the job after this many seconds.")
    cache: Literal["auto", "none"] = Field(
        "auto", description="hf backend: auto = the base model and the data repo mounted read-only at their pinned "
        "commits and one private bucket ({user}/tunepack-cache) mounted as the cache for packages, datasets and "
        "kernels; none = every job downloads and installs everything itself.")


class DistributedSection(Section):
    """Several training processes, one per GPU (the script launches itself; rank 0 alone logs and writes)."""

    processes: int = Field(1, ge=1, le=64, description="Training processes (one per GPU); 1 = a single process. "
                           "On HF Jobs the flavor needs this many GPUs (e.g. l4x4, a100x4).")
    strategy: Literal["ddp", "fsdp", "fsdp1", "zero1", "zero2", "zero3"] = Field(
        "ddp", description="ddp = data parallel (torchrun; on CPU with gloo); fsdp (FSDP2) / fsdp1 / zero1-3 "
        "(DeepSpeed ZeRO) = accelerate launch with TRL's accelerate config (CUDA only).")
    launcher: Literal["auto", "torchrun", "accelerate"] = Field(
        "auto", description="auto = torchrun for ddp, accelerate launch for fsdp/zero.")

    @model_validator(mode="after")
    def _launcher(self) -> "DistributedSection":
        if self.launcher == "torchrun" and self.strategy != "ddp":
            raise ValueError(f"distributed.launcher 'torchrun' runs ddp only; strategy '{self.strategy}' needs "
                             "accelerate launch (launcher: auto or accelerate)")
        return self


ChatTemplate = Annotated[
    str,
    Field(
        description="'model' = the tokenizer's own template, swapped for a training variant with generation "
        "markers when it has none (TRL's when it keeps tool calls, else tunepack's; e.g. Gemma 4 and Llama 3.1/3.2 "
        "get tunepack's); 'trl:<name>' = a TRL training template (e.g. trl:qwen3); 'tunepack:<name>' = one of "
        "tunepack's (templates/chat: gemma4, gemma4_v2..v5, llama3_1, llama3_2); or a path to a .jinja file.",
        min_length=1,
    ),
]


class TrainConfig(Section):
    """A whole QLoRA run (SFT, or distillation from a teacher): what to train, on what, how, and where the results
    go."""

    model: ModelSection
    data: DataSection
    chat_template: ChatTemplate = "model"
    lora: LoraSection = Field(default_factory=LoraSection)
    quantization: Literal["auto", "4bit", "none"] = Field(
        "auto",
        description="4bit = QLoRA (nf4 + double quant + bf16 compute); none = plain LoRA; "
        "auto = 4bit when CUDA is present at run time, else none.",
    )
    training: TrainingSection = Field(default_factory=TrainingSection)
    tracking: TrackingSection = Field(default_factory=TrackingSection)
    output: OutputSection = Field(default_factory=OutputSection)
    job: JobSection = Field(default_factory=JobSection)
    distributed: DistributedSection = Field(default_factory=DistributedSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    teacher: TeacherSection | None = Field(None, description="The teacher of a distillation run "
                                           "(training.method: distill).")
    distill: DistillSection = Field(default_factory=DistillSection)
    grpo: GrpoSection = Field(default_factory=GrpoSection)
    dpo: DpoSection = Field(default_factory=DpoSection)
    environment: EnvironmentSection | None = Field(
        None, description="GRPO inside an environment: `coding` (or a mapping: name, max_turns, tool_budget, "
        "timeout_s, save_rollouts). Rows: MBPP prompts from `tunepack grpo-prompts` (one visible test, the rest "
        "hidden) or {id, prompt, tests, hidden_tests}.")

    @field_validator("environment", mode="before")
    @classmethod
    def _environment_name(cls, value):
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _method(self) -> "TrainConfig":
        """The method's own rules (config/methods.py: which sections and combinations each method takes)."""
        for rule in METHOD_RULES[self.training.method]:
            rule(self)
        return self

    @model_validator(mode="after")
    def _combinations(self) -> "TrainConfig":
        tmpl = self.chat_template
        if tmpl.startswith("trl:") and not re.fullmatch(r"trl:[a-z0-9_]+", tmpl):
            raise ValueError(f"chat_template '{tmpl}' is not of the form trl:<name> (e.g. trl:qwen3)")
        if tmpl.startswith("tunepack:"):
            from ..resources import chat_templates

            if tmpl[9:] not in chat_templates():
                raise ValueError(f"chat_template '{tmpl}': tunepack ships no such template; allowed: "
                                 + ", ".join(f"tunepack:{n}" for n in chat_templates()))
        elif tmpl != "model" and not tmpl.startswith("trl:") and not tmpl.endswith((".jinja", ".j2")):
            raise ValueError(
                f"chat_template '{tmpl}': allowed are 'model', 'trl:<name>', 'tunepack:<name>' or a path to a "
                ".jinja/.j2 file"
            )
        if self.data.format == "traces" and self.data.held_out and "tasks" not in self.eval.model_fields_set:
            self.eval.tasks = [NEXT_ACTION]  # a traces run with held-out sessions is scored on them by default
        if self.data.eval_sessions and self.training.method != "sft" and self.training.method != "distill":
            where = ("data.eval_fraction (pairs are held out by prompt)" if self.training.method == "dpo"
                     else "data.eval_fraction or grpo.heldout_path")
            raise ValueError("data.eval_sessions names agent sessions to hold out, and "
                             f"training.method {self.training.method} holds out prompts: use {where}")
        if self.output.register_when == "beats_base" and not self.eval.tasks:
            raise ValueError("output.register_when beats_base keeps the adapter only when the config's eval shows it beats "
                             "the base, and eval.tasks is empty: name the tasks (e.g. [next-action] with "
                             "data.eval_fraction, or [humaneval])")
        if self.training.eval_steps and not (self.data.eval_split or self.data.held_out):
            raise ValueError(
                "training.eval_steps is set but there is no eval data: "
                "set data.eval_split or data.eval_fraction, or remove training.eval_steps"
            )
        return self

    @property
    def run_name(self) -> str:
        if self.tracking.run_name:
            return self.tracking.run_name
        base = self.model.name.rstrip("/").split("/")[-1].replace(":", "-")
        return f"{base}-r{self.lora.r}-lr{self.training.learning_rate:g}" + RUN_SUFFIX[self.training.method](self)

    @property
    def registry_name(self) -> str:
        """Versions of one adapter line accumulate under this name in the registry."""
        if self.output.name:
            return self.output.name
        base = self.model.name.rstrip("/").split("/")[-1].replace(":", "-")
        method = self.training.method + (f"-{self.environment.name}" if self.environment else "")
        return (re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "adapter") + f"-{method}"
