"""Start evaluations as jobs and read their results — what the MCP tools and the CLI call.

    started = start_eval("tiny-qwen3-agent-sft", ev=EvalSection(tasks=["humaneval"], limit=5))
    summary = eval_results(job_id=started.job.id)      # or eval_results(name=..., version=...)

Local backend: the job runs ``python -m mcp_server.evals.job RUN_DIR`` (render → Inspect → sandbox
→ results recorded with the registry version + model card). HF Jobs: the rendered script itself is
the job (the adapter must be on the Hub: publish it first); ``eval_results(job_id=...)`` then reads
the results from the job log and records them locally.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..approval import Consent, Spend, spend
from ..approval.custodian import refuse_agent_code
from ..config.agent_code import CUSTODIAN_FIX, eval_code_paths
from ..config.eval_section import EvalSection
from ..errors import EvalError, RegistryError
from ..home import home_dir, trackio_dir
from ..jobs import JobBackend, JobInfo, JobSpec, estimate, failure_error, get_backend, markers
from ..registry import LocalRegistry, read_manifest
from . import job as eval_job


class StartedEval(BaseModel):
    spend: Spend = Field(description="the gate's decision, the quote, the job (None while approval is required)")
    registry_name: str
    registry_version: int
    eval_id: str | None = None
    run_dir: str | None = None
    script_path: str | None = None
    expected_s: float | None = Field(None, description="Upper bound of the eval's time (every answer at max_tokens).")
    next_step: str

    @property
    def job(self) -> JobInfo | None:
        return self.spend.job


def start_eval(name: str, version: int | None = None, *, ev: EvalSection, backend: JobBackend | None = None,
               flavor: str | None = None, timeout_s: int | None = None, project: str | None = None,
               consent: Consent | None = None) -> StartedEval:
    """Quote, pass the spending gate (``consent``: how the human agreed; none by default), then prepare the eval
    run and submit it as a job. The approval binds to the registry version, the eval section and the placement.
    ``project``: the Trackio project the scores log into (group ``eval``) and the budget charged; default: the
    project the adapter was trained in."""
    backend = backend or get_backend("local")
    entry = LocalRegistry().get(name, version)
    project = project or run_project(entry)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", project):
        raise EvalError(f"'{project}' is not a Trackio project name.", "use letters, digits, '-' and '_' only.")
    if backend.name != "local" and not entry.hub_repo:
        raise EvalError(f"{entry.name} v{entry.version} is only in the local registry; a remote job cannot read it.",
                        "publish it first (registry_publish), or evaluate with the local backend.")
    if not ev.tasks:
        raise EvalError("No eval tasks are given.", "set eval.tasks, e.g. [humaneval, mbpp] (or a .jsonl of your own).")
    eval_job.models_for(entry, remote=backend.name != "local")  # a base the job cannot load: refused before a quote
    if backend.name == "local":
        refuse_agent_code("this local eval", eval_code_paths(ev), CUSTODIAN_FIX)
        check_mbpp_source(ev)
    expected, line = expected_time(entry, ev, backend.name, flavor, timeout_s)
    arguments = {"adapter": f"{entry.name}@v{entry.version}", "eval": ev.model_dump(mode="json"),
                 "backend": backend.name, "flavor": flavor, "timeout_s": timeout_s, "project": project}
    prepared: list[dict] = []

    def submit() -> JobInfo:
        prepared.append(_submit(entry, ev, backend, flavor=flavor, timeout_s=timeout_s, project=project))
        return prepared[0].pop("job")

    outcome = spend("eval_start", arguments, estimate(backend.name, flavor, timeout_s), project, submit,
                    consent or Consent())
    job = outcome.job
    nxt = (f"{line}; follow it with jobs_wait('{job.id}'), then eval_results(job_id='{job.id}')" if job
           else outcome.decision.message)
    return StartedEval(spend=outcome, registry_name=entry.name, registry_version=entry.version, next_step=nxt,
                       expected_s=expected, **(prepared[0] if prepared else {}))


def heldout_turns(manifest: dict) -> tuple[int | None, int | None]:
    """(model turns, sessions) of the held-out split next-action scores, read from the run's rows when they are
    local JSON Lines; (None, None) when they cannot be read here."""
    from .kit.nextaction import heldout_summary

    held = eval_job.heldout_source(manifest)
    if held is None:
        return None, None
    try:
        rows = [json.loads(line) for f in eval_job.training_data(held) if f.endswith((".jsonl", ".json"))
                for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
        summary = heldout_summary(rows, held["heldout"]) if rows else None
    except Exception:  # noqa: BLE001 - an estimate only: the job reads them itself
        summary = None
    return (summary["turns"], summary["sessions"]) if summary else (None, len(held["heldout"]["groups"]))


def expected_time(entry, ev: EvalSection, backend: str, flavor: str | None,
                  timeout_s: int | None) -> tuple[float, str]:
    """(upper bound in seconds, a line saying it per task); refused when it passes ``timeout_s``."""
    from .estimate import against_timeout, eval_times, times_line

    manifest = read_manifest(entry.path)
    base = ((manifest.get("config") or {}).get("model") or {}).get("name") or entry.base_model or ""
    tiny = base.startswith("tiny:")
    turns, sessions = heldout_turns(manifest) if "next-action" in ev.tasks else (None, None)
    models = len(eval_job.models_for(entry, remote=backend != "local", references=ev.references))
    where = flavor if backend != "local" else "local"
    times = eval_times(ev, flavor=where, tiny=tiny, nextaction_turns=turns, heldout_sessions=sessions, models=models)
    total, warning = against_timeout(times, timeout_s, where, tiny)
    if warning:
        problem, fix = warning
        raise EvalError(problem[0].upper() + problem[1:] + ".", fix + " (eval_start's timeout_s).")
    return total, times_line(times, total)


def _submit(entry, ev: EvalSection, backend: JobBackend, *, flavor: str | None, timeout_s: int | None,
            project: str) -> dict:
    eval_id = f"{entry.name}-v{entry.version}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = home_dir("evals", eval_id)
    remote = backend.name != "local"
    script = eval_job.prepare(entry, ev, run_dir, tracking={"project": project, "run": eval_id, "group": "eval"}, remote=remote)
    labels = {"stage": "eval", "registry_name": entry.name, "registry_version": str(entry.version), "eval_id": eval_id}
    if remote:
        spec = JobSpec(script=str(script), args=["--output-dir", "/tmp/eval-output"], name=eval_id, labels=labels,
                       flavor=flavor, timeout_s=timeout_s, secrets=["HF_TOKEN"])
    else:
        spec = JobSpec(module="mcp_server.evals.job", args=[str(run_dir)], name=eval_id, labels=labels,
                       timeout_s=timeout_s, env={"TRACKIO_DIR": str(trackio_dir())})
    return {"eval_id": eval_id, "run_dir": str(run_dir), "script_path": str(script), "job": backend.submit(spec)}


def _mbpp_copies(limit: int = 3) -> list[str]:
    """mbpp.jsonl files near the working folder (it and its parent, three levels down), nearest first."""
    found: list[Path] = []
    for root in (Path.cwd(), Path.cwd().parent):
        for depth in range(4):
            found += sorted(root.glob("/".join(["*"] * depth + ["mbpp.jsonl"])))
            if len(found) >= limit:
                break
    return [str(p.resolve()) for p in dict.fromkeys(found)][:limit]


def check_mbpp_source(ev: EvalSection) -> None:
    """MBPP from the Hub on a machine that cannot reach it is refused before the job starts, naming local copies."""
    if ev.mbpp_source != "hub" or not any(t in ("mbpp", "mbpp-agent") for t in ev.tasks):
        return
    from huggingface_hub import HfApi, constants

    from .kit.problems import MBPP_HUB_ID

    why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else None
    if why is None:
        try:
            HfApi().dataset_info(MBPP_HUB_ID, timeout=5)
            return
        except Exception as exc:  # noqa: BLE001 - any failure means the job would fail the same way
            why = f"{type(exc).__name__}: {str(exc)[:120]}"
    copies = _mbpp_copies()
    raise EvalError(f"MBPP loads from the Hub ({MBPP_HUB_ID}) by default, which this machine cannot reach ({why}).",
                    "set eval.mbpp_source to a local mbpp.jsonl of the original release (task_id, text, code, "
                    "test_list; the test split is task_ids 11-510)" + (
                        f": found here: {', '.join(copies)}" if copies else "; none was found near "
                        f"{Path.cwd()}") + ".")


def run_project(entry) -> str:
    """The Trackio project the adapter's training run logged to (its manifest), else ``tunepack-evals``."""
    try:
        manifest = read_manifest(entry.path)
    except Exception:  # noqa: BLE001 - an entry without a readable manifest still evaluates
        return DEFAULT_PROJECT
    return ((manifest.get("trackio") or {}).get("project")
            or ((manifest.get("config") or {}).get("tracking") or {}).get("project") or DEFAULT_PROJECT)


DEFAULT_PROJECT = "tunepack-evals"


def eval_results(*, job_id: str | None = None, name: str | None = None, version: int | None = None,
                 backend: JobBackend | None = None) -> dict:
    """The summary of a finished eval job, or the latest results recorded with a registry version."""
    if job_id:
        backend = backend or get_backend("hf" if not job_id.startswith("local-") else "local")
        info = backend.status(job_id)
        log = backend.logs(job_id)
        if not info.done:
            raise EvalError(f"Eval job {job_id} is still {info.stage}.", f"wait for it: jobs_wait('{job_id}').")
        found = markers.parse(log)
        if info.stage != "COMPLETED":
            failure = failure_error(info, log, found)
            run = _run_for(info)
            partial = Path(run["output_dir"]) / "results.partial.json" if run else None
            if run is None or partial is None or not partial.is_file():
                raise failure
            summary = eval_job.record(run, json.loads(partial.read_text()))  # what finished before it stopped
            return {**summary, "error": str(failure)}
        done = found.get("EVALUATED", [])
        if done:
            return done[-1]
        raw = found.get("EVAL", [])
        if not raw:
            raise EvalError(f"Job {job_id} finished without eval results (no TUNEPACK_EVAL line).",
                            "read its log with jobs_logs; it was probably not an eval job.")
        run = _run_for(info)
        return eval_job.record(run, raw[-1]) if run else eval_job.summarize(raw[-1])
    if not name:
        raise EvalError("Give a job_id, or the registry name (and version) of an evaluated adapter.",
                        "call registry_list to see adapter names.")
    registry = LocalRegistry()
    try:
        entry = registry.get(name, version)
    except RegistryError:
        versions = registry.list(name)
        if version is not None or not versions:
            raise
        entry = versions[-1]  # every version withdrawn: the newest one's scores are what was asked for
    results = registry.eval_results(entry)
    if results is None:
        raise EvalError(f"{entry.name} v{entry.version} has no eval results yet.",
                        f"start one with eval_start(name='{entry.name}', version={entry.version}).")
    return eval_job.summarize(results, entry, str(Path(entry.path) / "eval_results.json"))


def _run_for(info: JobInfo) -> dict | None:
    eval_id = info.labels.get("eval_id")
    path = home_dir("evals", eval_id) / "eval_run.json" if eval_id else None
    return json.loads(path.read_text()) if path and path.is_file() else None
