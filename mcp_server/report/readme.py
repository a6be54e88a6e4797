"""Write the results section of a markdown file (a user's README) from what tunepack recorded: a sweep's table,
each adapter's eval tables (n, 95 % intervals), the held-out sessions, curves as PNG beside the file."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import InputError, TunepackError
from ..evals.job import heldout_source
from ..evals.ladder import write_section
from ..evals.results import results_markdown
from ..guard_paths import refuse_credential
from ..registry import AdapterVersion, LocalRegistry, read_manifest
from ..sweeps.report import curves as sweep_curves
from ..sweeps.report import ranked, runs_table
from ..sweeps.spec import describe
from ..sweeps.state import read_state, sweep_dir
from ..tracking import TrackioStore
from ..tracking.plot import curves_png

START, END = "<!-- tunepack:results -->", "<!-- /tunepack:results -->"
IMAGES = "tunepack-results"  # the folder beside the README that holds the curves


class ResultsSection(BaseModel):
    readme_path: str
    replaced: bool = Field(description="An earlier section was replaced (else appended).")
    adapters: list[str] = Field(description="NAME@vN reported.")
    images: list[str] = Field(default_factory=list, description="PNG files written.")
    missing: list[str] = Field(default_factory=list, description="What it could not report, and the call that "
                                                                  "fills it.")
    markdown: str
    next_step: str = ""


def parse_adapter(ref: str) -> tuple[str, int | None]:
    """``name``, ``name@v3`` or ``name@3``."""
    match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:@v?(\d+))?", ref.strip())
    if not match:
        raise InputError(f"'{ref}' is not an adapter reference.", "write NAME or NAME@vN, as registry_list shows them.")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def _target(path: str | Path) -> Path:
    target = Path(path).expanduser()
    if target.suffix.lower() not in (".md", ".markdown"):
        raise InputError(f"{path} is not a markdown file.", "give the README.md (or another .md file) to write into.")
    refuse_credential(target, "README")
    if not target.parent.is_dir():
        raise InputError(f"The folder of {path} does not exist.", "give a README.md path in an existing folder.")
    return target


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80] or "results"


def _sweep_part(sweep_id: str, folder: Path, images: list[str], curve: bool) -> tuple[list[str], str | None]:
    """The sweep's lines and the NAME@vN of its best run's adapter (None when no run finished with one)."""
    state = read_state(sweep_dir(sweep_id))
    order = ranked(state)
    metric = state.metric
    lines = [f"### Sweep `{state.id}`", "",
             f"{len(state.runs)} runs on {state.backend}{'/' + state.flavor if state.flavor else ''}, selected on "
             f"`{metric['name']}` ({metric['direction']}); Trackio project `{state.project}`.", "",
             runs_table(state, order), ""]
    best = state.run(order[0]) if order else None
    within = (state.selection or {}).get("within_noise")
    if best is not None:
        lines.append(f"Best: **{best.id}** ({describe(best.changes)}), {metric['name']} = "
                     f"{best.metric_value:.4g}." + (f" Within noise: {within}" if within else ""))
        lines.append("")
    png = sweep_curves(state, order) if curve else None
    if png:
        name = f"{IMAGES}/{_slug(state.id)}-curves.png"
        (folder / IMAGES).mkdir(exist_ok=True)
        (folder / name).write_bytes(png)
        images.append(str(folder / name))
        lines += [f"![Training curves of sweep {state.id}]({name})", ""]
    result = (best.result or {}) if best else {}
    ref = f"{result['registry_name']}@v{result['registry_version']}" if result.get("registry_name") else None
    return lines, ref


def _heldout_lines(manifest: dict, results: dict | None) -> list[str]:
    held = manifest.get("heldout") or {}
    groups = held.get("groups") or []
    if not groups:
        return ["No sessions were held out of training (data.eval_fraction or data.eval_sessions unset): "
                "a next-action score would read training sessions.", ""]
    data = (manifest.get("config") or {}).get("data") or {}
    how = ("named by data.eval_sessions" if data.get("eval_sessions")
           else f"drawn with data.eval_seed {data.get('eval_seed', 0)} from data.eval_fraction {data.get('eval_fraction')}")
    ids = [str(g.get("id")) for g in groups]
    shown = ", ".join(f"`{i}`" for i in ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")
    line = f"Held-out split: {len(ids)} sessions ({held.get('rows', '?')} rows) kept out of training, {how}: {shown}."
    row = next((r for r in (results or {}).get("tasks", []) if r.get("task") == "next-action"), None)
    turns = (row or {}).get("heldout") or {}
    if turns.get("turns"):
        line += f" Next action was scored on {turns['turns']} of their assistant turns."
    return [line, ""]


def _curve_of(entry: AdapterVersion, manifest: dict, folder: Path, images: list[str]) -> list[str]:
    tracking = manifest.get("trackio") or {}
    if not tracking.get("project") or not tracking.get("run"):
        return []
    store = TrackioStore(tracking.get("dir"))
    try:
        points = store.history(tracking["project"], tracking["run"])
    except TunepackError:
        return []
    names = [m for m in ("loss", "eval_loss") if any(m in p.values for p in points)]
    if not names:
        return []
    png = curves_png(store, tracking["project"], [tracking["run"]], names)
    name = f"{IMAGES}/{_slug(entry.name)}-v{entry.version}-curves.png"
    (folder / IMAGES).mkdir(exist_ok=True)
    (folder / name).write_bytes(png)
    images.append(str(folder / name))
    return [f"![Training curves of {entry.name} v{entry.version}]({name})", ""]


def _adapter_part(ref: str, folder: Path, images: list[str], missing: list[str],
                  curve: bool) -> tuple[list[str], str]:
    name, version = parse_adapter(ref)
    entry = LocalRegistry().get(name, version)
    manifest = read_manifest(entry.path)
    base = ((manifest.get("config") or {}).get("model") or {}).get("name") or entry.base_model or "the base model"
    where = f"[{entry.hub_repo}](https://huggingface.co/{entry.hub_repo})" if entry.hub_repo else f"`{entry.path}`"
    lines = [f"### `{entry.name}` v{entry.version} against `{base}`", "", f"Adapter: {where}."
             + (f" **Withdrawn**: it {entry.withdrawn}." if entry.withdrawn else ""), ""]
    results = LocalRegistry().eval_results(entry)
    if results is None:
        lines += ["Not evaluated yet.", ""]
        missing.append(f"{entry.name} v{entry.version} has no eval results: eval_start(name='{entry.name}', "
                       f"version={entry.version}), then write the section again")
    else:
        if results.get("partial"):
            missing.append(f"{entry.name} v{entry.version}: the eval stopped before "
                           f"{', '.join(results.get('missing') or ['some tasks'])}; eval_start those tasks again")
        lines += [results_markdown(results).rstrip(), ""]
    held = heldout_source(manifest) or manifest  # a later rung is scored on the sessions its lineage held out
    lines += _heldout_lines(held, results)
    if held is not manifest:
        lines[-2] += f" (held out by `{held.get('run_name') or 'an earlier rung'}`, an earlier rung of this adapter)"
    if curve:
        lines += _curve_of(entry, manifest, folder, images)
    return lines, f"{entry.name}@v{entry.version}"


def write_results(readme_path: str | Path = "README.md", *, sweep_id: str | None = None,
                  adapters: list[str] | None = None, curves: bool = True,
                  title: str = "Fine-tuning results", loop: str | None = None) -> ResultsSection:
    """Write (or replace) the results section of ``readme_path``; see the module docstring. ``loop``: a
    continual-learning loop's cycle table (and its adapter in use, unless adapters are named)."""
    if not sweep_id and not adapters and not loop:
        raise InputError("Name a sweep, a loop or at least one adapter to report.",
                         "give sweep_id (its best adapter is reported), loop (its cycle table) or "
                         "adapters=['NAME@vN', ...] (registry_list shows them).")
    target = _target(readme_path)
    folder = target.parent
    images: list[str] = []
    missing: list[str] = []
    lines: list[str] = []
    refs = list(adapters or [])
    if loop:
        from .loop_table import loop_part

        loop_lines, in_use = loop_part(loop)
        lines += loop_lines
        if in_use and not adapters and not sweep_id:
            refs = [in_use]
    if sweep_id:
        sweep_lines, best = _sweep_part(sweep_id, folder, images, curves)
        lines += sweep_lines
        if best and not adapters:
            refs = [best]
        elif not best and not adapters:
            missing.append(f"sweep {sweep_id} has no finished run with an adapter yet: sweep_status('{sweep_id}')")
    named = []
    for ref in refs:
        part, resolved = _adapter_part(ref, folder, images, missing, curves and not sweep_id)
        lines += part
        named.append(resolved)
    markdown = "\n".join(lines).rstrip() + "\n"
    before = target.read_text(encoding="utf-8") if target.is_file() else ""
    write_section(target, markdown, title, markers=(START, END))
    step = ("; ".join(missing) if missing else
            f"the section is in {target}; show the user the tables (and commit the README with its "
            f"{IMAGES}/ images)")
    return ResultsSection(readme_path=str(target), replaced=START in before, adapters=named, images=images,
                          missing=missing, markdown=markdown, next_step=step)
