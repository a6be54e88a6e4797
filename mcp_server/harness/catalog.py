"""The one definition of what every coding-agent harness gets from this repository: the MCP server,
which tools need a human click, the research roles and the chat commands.

``render.py`` turns this into opencode.json, .codex/, .mcp.json, .claude/ and the Claude Code plugin;
``mcp_server/server/prompts.py`` serves the same commands as MCP prompts. Edit here, then run
``tunepack harness sync``; ``tunepack harness check`` (and the tests) fail when a file drifts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .toolsets import TOOLSETS

SERVER = "tunepack"
# A second server for the study roles: the tools they need beyond the core set, kept out of the main agent's
# context (every tool's schema costs context on every turn; see harness/toolsets.py).
STUDY_SERVER = "tunepack-study"
STUDY_TOOLSETS = ("jobs", "tracking", "viewer", "data", "ledger", "research", "ladder", "loop")  # every toolset beyond core
LAUNCHER = "bin/tunepack-mcp"
# From any directory of the clone: the launcher finds the repository and its .venv itself.
LAUNCH_SH = f'exec "$(git rev-parse --show-toplevel 2>/dev/null || pwd)/{LAUNCHER}"'
LAUNCH_STUDY_SH = f'TUNEPACK_TOOLSETS={",".join(STUDY_TOOLSETS)} {LAUNCH_SH}'
SETUP = "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[train,eval]'"
INSTRUCTIONS = "agents.md"

# Tools that start jobs (which may cost money) or publish (traces_push uploads the user's own sessions off the
# machine): every harness asks the human before each call.
SPENDING = ("pipeline_run", "jobs_submit", "eval_start", "registry_publish", "sweep_submit", "traces_push",
            "loop_schedule")
# The same for tunepack's own shell commands: every command that takes --yes (it can start a paid job, upload to
# the Hub or raise the budget), `approve` (it approves a quote) and `serve` (the agent would be the client of a
# server it started, answering its approval prompts itself). Each harness asks before running `tunepack <command> …`:
# a seatbelt against honest mistakes, not a wall (another spelling, or a script that imports tunepack, is not matched).
PAID_COMMANDS = ("run", "jobs submit", "eval run", "sweep submit", "loop schedule", "registry publish", "traces push", "export",
                 "rl-check", "budget set", "approve", "serve")
# Tools that only read (or write tunepack's own notes): allowed without a click in Claude Code.
READ_ONLY = (
    "skills_list", "skills_read", "data_inspect", "data_mask_preview", "pipeline_validate", "pipeline_render",
    "jobs_status", "jobs_logs", "jobs_list", "jobs_wait", "jobs_hardware", "jobs_cost", "budget_status",
    "tracking_projects", "tracking_runs", "tracking_summary", "tracking_compare", "tracking_plot",
    "registry_list", "eval_results", "viewer_splits", "viewer_rows", "viewer_search", "viewer_filter",
    "viewer_statistics", "viewer_size", "viewer_traces", "research_models", "research_datasets",
    "research_papers", "research_paper", "ledger_list", "ledger_report",
    "sweep_plan", "sweep_status", "sweep_report",
)


@dataclass(frozen=True)
class Role:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None  # tunepack MCP tools the role may call; None = all (with the spending asks)
    edit: bool = False  # may write files
    shell: bool = False  # may run shell commands
    web: bool = True  # may read web pages


@dataclass(frozen=True)
class Arg:
    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    argument_hint: str
    body: str  # $ARGUMENTS = everything typed after the command; $1, $2 = the first words
    args: tuple[Arg, ...] = field(default=(Arg("request", "What to do, in your words (model, data, options)."),))


_LEDGER_CLI = "`tunepack ledger list|propose|claim|record|export -p PROJECT`"

ROLES: tuple[Role, ...] = (
    Role(
        name="researcher",
        description="Read-only scout for a tunepack study: finds papers, datasets and models on the Hugging Face "
                    "Hub and returns ideas as testable hypotheses. Never edits files or launches jobs.",
        # no viewer_* / data_inspect: they read local paths too; Hub datasets are looked at over the web instead
        tools=("research_models", "research_datasets", "research_papers", "research_paper", "skills_list",
               "skills_read", "ledger_list"),
        prompt="""You are the researcher of a tunepack study. You are read-only: you never edit files, never run
shell commands and never start jobs.

1. Read the skill `tunepack-experiments` (skills_read) and the ledger (ledger_list) so you do not
   suggest what was already tried or marked do-not-repeat.
2. Search the Hub: research_papers / research_paper for methods and their reported settings,
   research_models for base models and adapters others trained, research_datasets for data
   (CLI: `tunepack research papers|paper|models|datasets`). Check a promising dataset's shape before
   recommending it with the Hub's Datasets Viewer over the web (read-only JSON, public datasets):
   https://datasets-server.huggingface.co/splits?dataset=ID, then /first-rows?dataset=ID&config=C&split=S
   and /statistics?dataset=ID&config=C&split=S. None of your tunepack tools reads files on this
   machine; name a dataset you could not check (private, gated, no viewer): the orchestrator will.
3. Return at most five hypotheses, best first, each as: the one variable to change and its value,
   why (paper id, model or dataset id, or a measured number), the expected effect on the study's
   metric, and the risk. Cite ids; never invent numbers. Say what you could not check.""",
    ),
    Role(
        name="planner",
        description="Read-only planner for a tunepack study: proposes at most two experiments at a time in the "
                    "ledger, each changing one variable of a parent run, with hypothesis and expected effect; "
                    "never repeats a recorded failure.",
        tools=("ledger_list", "ledger_propose", "ledger_report", "tracking_projects", "tracking_runs",
               "tracking_summary", "tracking_compare", "registry_list", "eval_results", "skills_list", "skills_read",
               "pipeline_validate"),
        prompt=f"""You are the planner of a tunepack study. You never edit files, run shell commands or start jobs;
your only output is proposals in the ledger.

1. Read ledger_list for the project: counts, best, the do-not-repeat list and the plateau verdict.
   If `plateau.should_stop` is true, propose nothing and say so.
2. Propose at most TWO experiments per round with ledger_propose. Each one: a parent (the best
   kept experiment, or none for the baseline), exactly ONE changed variable (a config key such as
   training.learning_rate) with its value, a hypothesis, and the expected effect on the metric.
   Never propose a change listed as do-not-repeat or already tried on the same parent; the ledger
   refuses repeats — take a refusal as information, not an obstacle.
3. Prefer changes with evidence (the researcher's hypotheses, Trackio curves via tracking_summary,
   eval results). Answer with the experiment ids you proposed and why.
CLI equivalent: {_LEDGER_CLI}.""",
    ),
    Role(
        name="worker",
        description="The only role that launches jobs in a tunepack study: claims one experiment from the ledger, "
                    "preflights, trains and evaluates it, and reports run id, metric and decision.",
        tools=None, edit=True, shell=True,
        prompt=f"""You are a worker of a tunepack study: the only role that launches jobs. One experiment per worker.

1. Claim exactly one experiment: ledger_claim(project, worker=<your name>) (or the id you were
   given). If nothing is left, stop and say so.
2. Write its config: the parent's config with the ONE variable changed (nothing else), in a new
   file under the study folder. pipeline_validate, then pipeline_preflight and wait for its job
   (jobs_wait) before anything is spent. A failed preflight is a crash: record it.
3. Run it: pipeline_run (paid flavors need the human's yes), jobs_wait until it ends. Attach the
   job id early: ledger_record(status='running', job_id=...). Evaluate with eval_start →
   jobs_wait → eval_results when the study's metric is an eval score.
4. Decide and record with ledger_record: keep if the metric beats the project's best, discard if
   not, crash if it failed (with the error in the note). Keep needs the metric value.
5. Report in one line: experiment id, job id, Trackio run, metric = value, decision.
When something fails for a reason no skill warned about, record the pitfall (skills_add_pitfall or
`tunepack pitfall add`). CLI equivalent: {_LEDGER_CLI}, `tunepack run CONFIG`.""",
    ),
    Role(
        name="reviewer",
        description="Reviewer and reporter of a tunepack study: reads Trackio and job metadata, classifies each "
                    "finished experiment keep/discard/crash, flags duplicates, multi-variable changes, missing "
                    "evidence and a plateau, and writes the report.",
        tools=("ledger_list", "ledger_record", "ledger_report", "tracking_projects", "tracking_runs",
               "tracking_summary", "tracking_compare", "tracking_plot", "jobs_status", "jobs_logs", "jobs_list",
               "eval_results", "registry_list", "skills_list", "skills_read", "skills_add_pitfall"),
        edit=True,
        prompt=f"""You are the reviewer and reporter of a tunepack study. You never start jobs; you write only
the report (and pitfalls).

1. For each finished experiment in ledger_list, check the evidence: the job (jobs_status,
   jobs_logs), the Trackio run (tracking_summary: NaN, divergence, plateau flags) and the eval
   (eval_results). Re-classify with ledger_record when the worker's decision is wrong: keep only
   with a metric better than the best, discard otherwise, crash when the job failed.
2. Flag: duplicates (same change on the same parent), experiments that changed more than one
   variable, results without evidence (no job id, no metric, no eval), and a plateau
   (`plateau.should_stop`). A flagged experiment's note says why.
3. Write the report with ledger_report (markdown, with `path` to save it): the results table,
   the best experiment, what to stop doing, and the next question worth testing.
4. Record a pitfall in the skill it belongs to when a failure was not foreseen by any skill.
CLI equivalent: {_LEDGER_CLI}.""",
    ),
)

_SKILLS = "Skills live in `skills/` (also reachable as .claude/skills and .agents/skills); read them with skills_read."

COMMANDS: tuple[Command, ...] = (
    Command(
        name="tunepack-train",
        description="SFT a small model on the given data or agent traces with tunepack (validate, preflight, "
                    "train, track, register).",
        argument_hint="MODEL DATA [options]",
        body=f"""Fine-tune with tunepack: $ARGUMENTS

Read the skill `tunepack-pipeline` first, then `tunepack-sft`; if the data are coding-agent
sessions (Pi, Claude Code, Codex, OpenCode), read `tunepack-traces` and convert them first
(traces_convert). {_SKILLS}

Then follow the pipeline contract: data_inspect → write the config (examples/demo.yaml is a
template) → pipeline_validate → pipeline_preflight and wait for its job → pipeline_run (paid
flavors need my yes) → jobs_wait → tracking_summary. Report a short results table: registry
version, first → last loss, Trackio project/run, job id, cost.""",
    ),
    Command(
        name="tunepack-evaluate",
        description="Evaluate a tunepack adapter against its base model (HumanEval, MBPP or your own JSONL) and "
                    "put the scores in its model card.",
        argument_hint="ADAPTER [tasks, limit]",
        body=f"""Evaluate with tunepack: $ARGUMENTS

Read the skill `tunepack-evaluation` first. {_SKILLS}
Find the adapter (registry_list), start the evaluation of base vs base + adapter (eval_start),
follow it with jobs_wait and read eval_results. Report both scores with n, pass@1 and the
contamination share; say if a score was withheld for contamination.""",
    ),
    Command(
        name="tunepack-report",
        description="Report tunepack results: runs, evaluations and the experiment ledger as one results table.",
        argument_hint="[project or adapter]",
        body=f"""Write the results report for: $ARGUMENTS

Read the skills `tunepack-trackio`, `tunepack-evaluation` and `tunepack-experiments`. {_SKILLS}
Collect: registry_list (adapters), eval_results (scores of base and base + adapter),
tracking_summary (first → last loss, flags), and — for a study — ledger_report (markdown).
Answer with one results table (run, change, metric, decision, job id, registry version) and
two lines: the best result with its evidence, and what was not done.""",
    ),
    Command(
        name="tunepack-contract",
        description="The whole contract in one command: SFT MODEL on DATASET, sweep on several jobs, track every "
                    "run, push every adapter, evaluate, and add the scores to the README.",
        argument_hint="MODEL DATASET [notes]",
        args=(Arg("model", "Base model: Hub id, local folder, or tiny:qwen3 for a CPU run."),
              Arg("dataset", "Training data: files/folder, a Hub dataset id, or agent-session folders."),
              Arg("notes", "Anything else: budget, flavor, metric, number of runs.", required=False)),
        body=f"""SFT the model $1 on the dataset $2, sweep on several jobs, track every run, push every adapter,
evaluate, and add the scores to the README. Full request: $ARGUMENTS

Read the skill `tunepack-pipeline` ("The whole contract") first, then `tunepack-sft`, `tunepack-sweeps` and
`tunepack-evaluation`. {_SKILLS}

1. Orient: data_inspect on the data (a folder of agent sessions is read as the rows it becomes), or
   viewer_traces for a Hub dataset; write the config (data.eval_fraction or data.eval_sessions holds
   sessions out for next action) and a sweep spec; pipeline_validate, then pipeline_preflight and
   jobs_wait on its job. Read its held-out sessions and each eval task's expected time. Nothing is spent
   before it passes.
2. Sweep: sweep_plan (show me the table: runs, time, worst-case cost), sweep_submit (paid flavors need my
   yes), sweep_status until done. Every run logs to the config's Trackio project and registers its adapter.
3. Pick: sweep_select; when it says within_noise, say so rather than naming a winner.
4. Evaluate the best adapter against the base (eval_start → jobs_wait → eval_results).
5. results_readme with the sweep id writes the scores into README.md (again = replaced).
6. Publish with registry_publish (private unless I say otherwise) after I approve. Report what you did
   not do.""",
    ),
    Command(
        name="tunepack-loop",
        description="Continual learning: run the loop's next cycle on the sessions new since the last one, and "
                    "promote the new adapter only when it is better.",
        argument_hint="LOOP_SPEC (loop.yaml) or a request to set one up",
        body=f"""Continual learning with tunepack: $ARGUMENTS

Read the skill `tunepack-loop` first (and `tunepack-traces` for the session sources). {_SKILLS}
Without a loop spec, write one beside the training config (name, config, sources, frozen_sessions,
retention) and tell me what it holds out. Then loop_cycle with its path and jobs_wait on the job. Report the
cycle: sessions trained and held out, the paired gain with its z, the retention change, and the decision
with its reason (loop_status shows every cycle). A refused cycle is an answer too: say how many new
sessions it found and how many it needs.""",
    ),
    Command(
        name="tunepack-research",
        description="Run a tunepack research study with roles: researcher → planner → workers → reviewer, "
                    "recorded in the experiment ledger, until the plateau rule says stop.",
        argument_hint="GOAL (model, data, metric)",
        body=f"""Run a tunepack research study for: $ARGUMENTS

Read the skill `tunepack-experiments` first. {_SKILLS}
You orchestrate; the roles do the work. Ask the researcher subagent for hypotheses, the planner
for at most two single-variable experiments (ledger_propose), start one worker subagent per
proposed experiment (several may run at once: each claims its own with ledger_claim), then the
reviewer to classify the results and flag duplicates, multi-variable changes and missing
evidence. Repeat until ledger_list says plateau.should_stop, then have the reviewer write the
report (ledger_report) and answer with its results table.""",
    ),
    Command(
        name="tunepack-sweep",
        description="Sweep a tunepack config on several jobs: plan, approve once, canary first, follow, early-stop "
                    "diverging runs, pick the best adapter, record keep/discard, report.",
        argument_hint="CONFIG SETTING=VALUES [budget, flavor, metric]",
        body=f"""Run a tunepack sweep for: $ARGUMENTS

Read the skill `tunepack-sweeps` first (and `tunepack-experiments` for the ledger). {_SKILLS}

1. Write a sweep spec (examples/sweep.yaml is a template): the base config, ONE variable in the grid
   unless I asked for a joint grid, max_concurrent, the selection metric and budget_usd.
2. sweep_plan: show me the runs with their config diffs, the total worst-case cost and the runs the
   ledger refuses. Nothing starts before this.
3. sweep_submit (a paid sweep needs my yes for its total); the canary runs first, the rest after it
   logged its first steps cleanly.
4. Follow with sweep_status; tell me about early stops (alerts) and failures; if the controller
   crashed, resume it (sweep_submit with resume).
5. When it is done: sweep_select (keep/discard/crash in the ledger) and sweep_report. Answer with the
   table, the best run and its adapter (registry name + version), and the ledger's stop verdict.
   Publish only with my yes (registry_publish).""",
    ),
    Command(
        name="tunepack-grpo",
        description="Train a tunepack model with GRPO on verifiable rewards: prompt rows with their tests, the "
                    "reward's ceiling, a held-out reward curve, reward hacking watched, then evaluate.",
        argument_hint="MODEL [ADAPTER] PROMPTS_OR_MBPP [rewards, steps, flavor]",
        body=f"""Train with GRPO for: $ARGUMENTS

Read the skill `tunepack-grpo` first (and `tunepack-pipeline` for the contract). {_SKILLS}

1. Prompt rows: for MBPP, `tunepack grpo-prompts --mbpp FILE --split train` and `--split validation`
   (the held-out curve); report the ceiling, the dropped problems and any leaked tests. Never select on
   MBPP's test split.
2. Write the config: training.method grpo, grpo.rewards with weights (tests first; a weight of 0 logs
   a reward without training on it), grpo.heldout_path, num_generations, and the sizing (prompts per
   step = batch x accumulation / generations): say it plainly.
3. pipeline_validate, then pipeline_preflight (cost quote; a paid flavor needs my yes), then
   pipeline_run. Follow it; if a TUNEPACK_ALERT says reward hacking, stop and tell me why.
4. Answer with the held-out reward first -> last with its standard errors, each reward component,
   and the adapter (registry name + version); evaluate it with eval_start on the standard tasks.""",
    ),
    Command(
        name="tunepack-ladder",
        description="Climb the whole post-training ladder from one prompt: SFT on agent traces, distillation (when a "
                    "teacher is named), GRPO with verifiable rewards, GRPO in the coding environment, SFT on the "
                    "verified rollouts; each rung preflighted and approved, one results table in the README.",
        argument_hint="MODEL DATA [teacher=T mbpp=FILE flavor budget]",
        args=(Arg("model", "Base model: Hub id, local folder, or tiny:qwen3 for a CPU twin."),
              Arg("data", "Agent traces for the first rung: session folders, a converted .jsonl or a Hub dataset."),
              Arg("notes", "teacher=HUB_ID for distillation, mbpp=FILE (MBPP's jsonl), flavor, budget.",
                  required=False)),
        body=f"""Climb the post-training ladder with the model $1 on the data $2. Full request: $ARGUMENTS

Read the skills `tunepack-pipeline`, `tunepack-sft`, `tunepack-traces`, `tunepack-distill`, `tunepack-grpo`
(its "The whole ladder" section) and `tunepack-evaluation` first. {_SKILLS}

Every rung is one config and the same contract: pipeline_validate → pipeline_preflight (wait for its job; for
GRPO read the RL preflight: ceiling, leaked tests, the starting model's groups) → pipeline_run (a paid flavor
needs my yes) → jobs_wait → tracking_summary → eval_start on the same tasks for every rung (next-action,
bfcl:simple_python, humaneval, mbpp, mbpp-agent; the same limit) → jobs_wait. Each rung starts from the
previous rung's registered adapter (model.adapter: NAME@vN, written into the next config); skip a rung only
when I say so, and say why in the report.

1. SFT on the traces (data.format traces, data.eval_fraction 0.1: the held-out sessions next-action scores).
2. Distillation, only when I named a teacher (training.method distill, same data; it trains a new student
   adapter: the next rung starts from it).
3. GRPO with verifiable rewards on MBPP's train split (`tunepack grpo-prompts --mbpp FILE --split train`, and
   `--split validation` for grpo.heldout_path), rewards tests 1.0, from the previous adapter.
4. GRPO in the coding environment (environment: coding), same prompts, from the GRPO adapter; read
   eval/env_reward, not the flat training curve.
5. SFT on the verified rollouts: data.path = the environment run's adapter folder `rollouts/train`,
   data.format traces with traces.only_verified, model.adapter = the environment run's adapter.

Then eval_ladder (CLI `tunepack eval ladder NAME --readme README.md`) on the last rung with readme_path
README.md: the table of every rung, base first, goes into the README's ladder section (replaced in place).
Answer with that table, each rung's registry version, job id and cost, what withheld or ⚠ cells mean, and
what was skipped or not evaluated (the table's `missing`).""",
    ),
)


def server_of(tool: str) -> str:
    """The harness server that exposes ``tool``: the main one (core toolset) or the study one."""
    return SERVER if tool in TOOLSETS["core"] else STUDY_SERVER


def role(name: str) -> Role:
    return next(r for r in ROLES if r.name == name)


def command(name: str) -> Command:
    return next(c for c in COMMANDS if c.name == name)
