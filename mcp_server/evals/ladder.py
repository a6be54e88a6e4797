"""The ladder's results table: every rung of an adapter's lineage (base → SFT → distilled → GRPO → environment
GRPO → verified-rollout SFT) on the same benchmarks, one row a rung, from each version's recorded eval.

    table = ladder_table("qwen3-verified-sft")              # the newest version and its whole lineage
    write_section(Path("README.md"), table.markdown)         # the marked section, replaced in place

A cell is the rung's headline score on a task (pass@1, BFCL accuracy, next-action tool_name) with its n, read from
that version's latest eval; ``withheld`` where contamination withheld it, ``⚠`` where a contaminated score was shown
on request, ``—`` where the rung was not evaluated on the task (the table's ``missing`` says which eval_start calls
fill it). The base row is the base model's score from the same evals. Cells of one column are comparable only
when their n and their eval's limit agree; the notes say where they do not.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import InputError
from ..registry import LocalRegistry
from ..registry.lineage import rungs
from ..staging import write_text_atomically

ORDER = ("next-action", "bfcl:", "humaneval", "mbpp", "mbpp-agent")  # the tutorial's tool use, then code
START, END = "<!-- tunepack:ladder -->", "<!-- /tunepack:ladder -->"


class Rung(BaseModel):
    label: str = Field(description="base, or the rung's method (sft, distill, grpo, grpo (coding), ...).")
    name: str | None = None
    version: int | None = None
    evaluated: bool = Field(description="the version has recorded eval results")
    scores: dict[str, str] = Field(default_factory=dict, description="task -> cell text")


class LadderTable(BaseModel):
    adapter: str = Field(description="the adapter whose lineage the table follows, NAME@vN")
    tasks: list[str]
    rungs: list[Rung]
    markdown: str
    notes: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="eval_start calls that would fill the empty cells")


def _task_key(task: str) -> tuple[int, str]:
    rank = next((i for i, prefix in enumerate(ORDER) if task == prefix or task.startswith(prefix)), len(ORDER))
    return rank, task


def _cell(row: dict, label: str) -> str:
    status = (row.get("status") or {}).get(label)
    value = (row.get("scores") or {}).get(label)
    if status == "withheld":
        return "withheld"
    if value is None:
        return "—"
    return f"{value:.3f} (n {row['n']})" + (" ⚠" if status == "contaminated" else "")


def _label(manifest: dict) -> str:
    method = manifest.get("method", "sft")
    environment = (manifest.get("config") or {}).get("environment")
    if (manifest.get("traces") or {}).get("verified"):  # trained on a GRPO run's verified rollouts
        return f"{method} (verified rollouts)"
    return f"{method} ({environment['name']})" if environment else method


def ladder_table(name: str, version: int | None = None, tasks: list[str] | None = None,
                 registry: LocalRegistry | None = None) -> LadderTable:
    """The table for the adapter NAME (version: default the newest) and every rung of its lineage here."""
    registry = registry or LocalRegistry()
    entry = registry.get(name, version)
    chain = rungs(entry, registry)
    results = [(e, m, registry.eval_results(e)) for e, m in chain]
    found = {row["task"]: row for _, _, r in results if r for row in r["tasks"]}
    columns = sorted(tasks or found, key=_task_key)
    rows = [_base_row(results, columns)]
    missing: list[str] = []
    limits: dict[str, set] = {}
    for e, manifest, result in results:
        by_task = {row["task"]: row for row in (result or {}).get("tasks") or []}
        rows.append(Rung(label=_label(manifest), name=e.name, version=e.version, evaluated=result is not None,
                         scores={t: _cell(by_task[t], "adapter") if t in by_task else "—" for t in columns}))
        absent = [t for t in columns if t not in by_task]
        if absent:
            missing.append(f"eval_start(name='{e.name}', version={e.version}, eval={{'tasks': {absent}}})")
        for t in columns:
            if t in by_task:
                limits.setdefault(t, set()).add((by_task[t]["n"], (result or {}).get("limit")))
    notes = [f"{t}: the rungs were scored on different problem counts or limits ({sorted(v, key=str)}); compare "
             "with care" for t, v in limits.items() if len(v) > 1]
    table = LadderTable(adapter=f"{entry.name}@v{entry.version}", tasks=columns, rungs=rows, markdown="", notes=notes,
                        missing=missing)
    table.markdown = ladder_markdown(table, chain[0][1])
    return table


def _base_row(results: list, columns: list[str]) -> Rung:
    """The base model's scores: from the earliest rung's eval that scored it on each task."""
    scores = {}
    for task in columns:
        rows = [row for _, _, r in results if r for row in r["tasks"] if row["task"] == task
                and (row.get("scores") or {}).get("base") is not None]
        scores[task] = _cell(rows[0], "base") if rows else "—"
    return Rung(label="base", evaluated=any(r for _, _, r in results), scores=scores)


def ladder_markdown(table: LadderTable, first_manifest: dict) -> str:
    base = (first_manifest.get("config") or {}).get("model", {}).get("name", "base")
    head = "| Rung | Adapter |" + "".join(f" {t} |" for t in table.tasks)
    lines = [head, "|---|---|" + "---|" * len(table.tasks)]
    for rung in table.rungs:
        adapter = f"`{rung.name}` v{rung.version}" if rung.name else f"`{base}`"
        lines.append(f"| {rung.label} | {adapter} |" + "".join(f" {rung.scores.get(t, '—')} |" for t in table.tasks))
    lines += ["", "Each cell: the headline score (pass@1; BFCL accuracy; next-action tool_name) with its n, from the "
              "version's latest eval; withheld = its training data overlaps the problems; ⚠ = a contaminated score "
              "shown on request; — = not evaluated."]
    lines += [f"Note: {n}" for n in table.notes]
    return "\n".join(lines) + "\n"


def write_section(path: str | Path, markdown: str, title: str = "The post-training ladder",
                  markers: tuple[str, str] = (START, END)) -> Path:
    """Put the table into a markdown file between the ladder markers (or ``markers``: replacing an earlier
    section; appended at the end otherwise), written atomically."""
    start, end = markers
    target = Path(path).expanduser()
    if target.suffix.lower() not in (".md", ".markdown"):
        raise InputError(f"{path} is not a markdown file.", "give the README.md (or another .md file) to write into.")
    text = target.read_text(encoding="utf-8") if target.is_file() else ""
    section = f"{start}\n## {title}\n\n{markdown.rstrip()}\n{end}\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = pattern.sub(lambda _: section, text, count=1) if pattern.search(text) else (
        (text.rstrip() + "\n\n" if text.strip() else "") + section)
    mode = target.stat().st_mode & 0o777 if target.is_file() else 0o644  # a README is shared: keep or 0644
    return write_text_atomically(target, text, mode=mode)
