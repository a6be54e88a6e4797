"""The eval section of a config: which benchmarks score base and base + adapter after training (HumanEval, MBPP,
a user's JSONL, next-action on held-out sessions, BFCL categories) and how (sandbox, limits, generation). Its own
module because the eval room reads it without the training config around it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .section import Section

CODE_TASKS = ("humaneval", "mbpp")
NEXT_ACTION = "next-action"
MBPP_AGENT = "mbpp-agent"  # MBPP's test split solved inside the coding environment (tools, hidden tests)
BFCL_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
                   "irrelevance", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
                   "live_irrelevance", "live_relevance")
BFCL_ALL = [f"bfcl:{c}" for c in BFCL_CATEGORIES]


class EvalSection(Section):
    """Benchmarks run after training on the base model and on base + adapter."""

    tasks: list[str] = Field(
        default_factory=list,
        description="humaneval, mbpp, a .jsonl (id, prompt, tests), next-action (held-out sessions' tool calls), "
        "bfcl:<category> / bfcl, or mbpp-agent (MBPP solved with the coding environment's tools).",
    )
    limit: int | None = Field(None, ge=1, description="Only the first N problems of each task (next-action: "
                              "sessions).")
    ids: list[str] = Field(default_factory=list, description="Only these problem ids (HumanEval/0, mbpp/89, …).")
    samples: int = Field(1, ge=1, le=100, description="Answers per problem; pass@1 is their mean pass rate.")
    temperature: float = Field(0.0, ge=0, le=2, description="0 = greedy decoding.")
    max_tokens: int = Field(512, ge=16, le=8192, description="Most new tokens per answer.")
    sandbox: Literal["auto", "namespaces", "confined", "docker", "unsafe-host"] = Field(
        "auto",
        description="Where generated code runs: auto (namespaces where they work, else confined), namespaces "
        "(namespaces + cgroups, as root), confined (HF Jobs: a uid per worker, Landlock, seccomp), docker, or "
        "unsafe-host (no isolation; labelled).",
    )
    timeout_s: float = Field(10.0, gt=0, le=300, description="Wall-clock limit per program.")
    memory_mb: int = Field(512, ge=64, le=16384, description="Memory limit per program.")
    mbpp_source: str = Field("hub", description="'hub' = google-research-datasets/mbpp, or a path to mbpp.jsonl.")
    backend: Literal["auto", "hf", "vllm"] = Field(
        "auto", description="auto = vLLM when CUDA and vllm are present, else transformers (hf)."
    )
    allow_contaminated: bool = Field(
        False, description="Show scores even when the training data overlaps the problems (labelled); off: "
        "withheld.",
    )
    references: bool = Field(True, description="Also score the teacher or start adapter (a ladder: false).")
    bfcl_source: str | None = Field(None, description="BFCL data folder or wheel.")
    ngram: int = Field(13, ge=5, le=50, description="N-gram length of the contamination check.")
    min_overlap: float = Field(0.5, gt=0, le=1, description="Share of a problem's n-grams in the training data "
                               "that flags it as contaminated.")

    @field_validator("tasks", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("tasks")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        value = [t for task in value for t in (BFCL_ALL if task == "bfcl" else [task])]
        for task in value:
            if task.startswith("bfcl:") and task[5:] not in BFCL_CATEGORIES:
                raise ValueError(f"eval.tasks entry '{task}': BFCL has no such single-turn category; use one of "
                                 f"{', '.join(BFCL_ALL)} (or bfcl for all)")
            if task not in (*CODE_TASKS, NEXT_ACTION, MBPP_AGENT) and not task.endswith(".jsonl") \
                    and not task.startswith("bfcl:"):
                raise ValueError(f"eval.tasks entry '{task}': use humaneval, mbpp, a path to a .jsonl file, "
                                 "next-action, bfcl:<category> or mbpp-agent")
        if len(set(value)) != len(value):
            raise ValueError("eval.tasks lists a task twice")
        return value
