"""Named toolsets: which tools a server exposes (``tunepack serve --toolsets core,research``, or
``TUNEPACK_TOOLSETS``), because every tool's name, description and input schema sit in the agent's context on
every turn. ``core`` runs the whole contract — skills, data, validate, preflight, run, follow jobs, Trackio
summary, evaluate, sweep, publish; the others add what a role or a deeper look needs.
"""

from __future__ import annotations

from ..errors import ConfigError

TOOLSETS: dict[str, tuple[str, ...]] = {
    "core": ("skills_list", "skills_read", "skills_add_pitfall", "data_inspect", "data_mask_preview",
             "pipeline_validate", "pipeline_preflight", "pipeline_run", "jobs_wait", "jobs_status", "jobs_logs",
             "jobs_cancel", "jobs_list", "budget_status", "tracking_summary", "tracking_plot", "registry_list", "registry_publish",
             "eval_start", "eval_results", "viewer_traces", "sweep_plan", "sweep_submit", "sweep_status",
             "sweep_select", "sweep_report", "results_readme", "grpo_prompts"),
    "jobs": ("jobs_submit", "jobs_hardware", "jobs_cost", "pipeline_render", "sweep_cancel"),
    "tracking": ("tracking_start", "tracking_log", "tracking_finish", "tracking_projects", "tracking_runs",
                 "tracking_compare"),
    "viewer": ("viewer_splits", "viewer_rows", "viewer_search", "viewer_filter", "viewer_statistics", "viewer_size"),
    "data": ("traces_convert", "traces_push", "registry_push"),
    "ledger": ("ledger_list", "ledger_propose", "ledger_claim", "ledger_record", "ledger_report"),
    "research": ("research_models", "research_datasets", "research_papers", "research_paper"),
    "ladder": ("eval_ladder", "dpo_pairs"),
    "loop": ("loop_cycle", "loop_status", "loop_schedule", "loop_sync"),
}
DEFAULT = ("core",)
ALL = tuple(TOOLSETS)


def parse(value: str | None) -> tuple[str, ...]:
    """Toolset names from ``core,research`` (``all`` = every tool; empty = the default)."""
    names = tuple(n.strip() for n in (value or "").split(",") if n.strip()) or DEFAULT
    if "all" in names:
        return ALL
    unknown = [n for n in names if n not in TOOLSETS]
    if unknown:
        raise ConfigError(f"Unknown toolset(s): {', '.join(unknown)}.",
                          f"use any of {', '.join(TOOLSETS)} or all, comma-separated (default: core).")
    return names


def tools_of(names: tuple[str, ...]) -> set[str]:
    return {tool for name in names for tool in TOOLSETS[name]}


def toolset_of(tool: str) -> str | None:
    return next((name for name, tools in TOOLSETS.items() if tool in tools), None)
