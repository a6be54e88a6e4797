"""One cycle of a continual-learning loop, phase by phase, each phase written to the state before the next starts:

    selected  the sessions new since the last cycle (never a frozen one: checked by key and by content hash),
              minus this cycle's recent slice, plus the last cycle's; refused below min_new_sessions
    training  the pipeline job (local), started from the adapter in use (or the base model every K cycles)
    trained   the candidate registered (NAME@vN)
    scored    paired losses of the current adapter and the candidate on the frozen set + the recent slice, and
              on the retention set
    decided   promote (the candidate becomes ``current``) or keep, with the reason in words and numbers

A cycle re-run after a crash resumes at its phase: a finished training job is read, not started again, and a
decided cycle is never decided twice.

    cycle = run_cycle(load_spec("loop.yaml"))
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from .. import settings
from ..config import TrainConfig
from ..errors import LoopError
from ..jobs import get_backend
from ..registry import LocalRegistry
from ..train.data import read_local_rows
from .decide import decide, mean, paired
from .sessions import Group, collect, write_rows
from .spec import LoopSpec, load_loop_config
from .state import Cycle, LoopState, locked, loop_dir, read_state, write_state


def run_cycle(spec: LoopSpec) -> Cycle:
    """Run (or resume) the loop's next cycle to its decision; LoopError when it cannot run."""
    with locked(spec.name):
        state = read_state(spec.name)
        cycle = state.open_cycle or _select(spec, state)
        if cycle.phase in ("selected", "training"):
            _train(spec, state, cycle)
        if cycle.phase == "trained":
            _score(spec, state, cycle)
        if cycle.phase == "scored":
            _decide(spec, state, cycle)
        return cycle


def _save(state: LoopState, cycle: Cycle, phase: str) -> None:
    cycle.phase = phase  # type: ignore[assignment]
    write_state(state)
    if settings.loop_crash_after() == phase:
        raise SystemExit(f"tunepack loop: stopped after phase {phase} (TUNEPACK_LOOP_CRASH_AFTER)")


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def _select(spec: LoopSpec, state: LoopState) -> Cycle:
    if state.done_cycles >= spec.max_cycles:
        raise LoopError(f"The loop '{spec.name}' ran its {spec.max_cycles} approved cycles.",
                        "raise max_cycles in the loop spec (a new approval of its spend) to run more.")
    number = len(state.cycles) + 1
    folder = loop_dir(spec.name) / f"cycle-{number}"
    groups = collect(spec.sources, folder)
    if not state.frozen:
        ranked = sorted(groups, key=lambda k: _rank(spec.seed, k))
        if len(ranked) < spec.frozen_sessions + spec.min_new_sessions:
            raise LoopError(f"The first cycle needs {spec.frozen_sessions} sessions to freeze for evaluation and "
                            f"{spec.min_new_sessions} new ones to train on; the sources hold {len(ranked)}.",
                            "collect more sessions, or lower frozen_sessions / min_new_sessions in the loop spec.")
        frozen = ranked[:spec.frozen_sessions]
        state.frozen = {k: groups[k].sha256 for k in frozen}
        write_rows(loop_dir(spec.name) / "frozen.jsonl", [groups[k] for k in frozen])
    seen = set(state.consumed) | set(state.frozen)
    frozen_hashes = set(state.frozen.values())
    unseen = [k for k in sorted(groups, key=lambda k: _rank(spec.seed, k))
              if k not in seen and groups[k].sha256 not in frozen_hashes]
    if len(unseen) < spec.min_new_sessions:
        write_state(state)  # the frozen draw stays fixed even when the first cycle is refused
        raise LoopError(f"Only {len(unseen)} new session(s) since the last cycle; the loop trains on at least "
                        f"min_new_sessions = {spec.min_new_sessions}, and a smaller run is not worth it.",
                        "wait for more sessions (or lower min_new_sessions in the loop spec), then run the cycle again.")
    slice_size = max(1, round(len(unseen) * spec.recent_fraction))
    recent, fresh = unseen[:slice_size], unseen[slice_size:]
    carried = [k for k in state.pending_recent if k in groups]
    train = [groups[k] for k in sorted(fresh + carried)]
    _assert_unfrozen(state, train)
    base_turn = spec.from_base_every and number % spec.from_base_every == 0
    cycle = Cycle(number=number, new=[g.key for g in train], recent=recent,
                  from_adapter=None if base_turn else state.current,
                  rows_path=str(write_rows(folder / "train.jsonl", train)))
    write_rows(folder / "recent.jsonl", [groups[k] for k in recent])
    state.consumed = sorted(set(state.consumed) | set(unseen))
    state.cycles.append(cycle)
    _save(state, cycle, "selected")
    return cycle


def _assert_unfrozen(state: LoopState, train: list[Group]) -> None:
    """No frozen session in a cycle's training rows, by key and by content hash."""
    leaked = [g.key for g in train if g.key in state.frozen or g.sha256 in set(state.frozen.values())]
    if leaked:
        raise LoopError(f"The training rows would hold frozen session(s) {leaked[:3]}: the frozen set would no longer "
                        "measure anything.", "report this: a frozen session must never be selected.")


def _config(spec: LoopSpec, cycle: Cycle) -> TrainConfig:
    """The loop's training config for this cycle: its rows, its starting adapter, the loop's registry name."""
    raw = load_loop_config(spec).model_dump(mode="json", exclude_none=True)
    raw["data"] = {**raw["data"], "path": [cycle.rows_path]}
    for key in ("hub_id", "eval_fraction", "eval_split", "traces"):
        raw["data"].pop(key, None)
    raw["model"] = {**raw["model"], "adapter": cycle.from_adapter}
    raw["output"] = {**raw.get("output", {}), "name": spec.name}
    raw["tracking"] = {**raw.get("tracking", {}), "run_name": f"{spec.name}-cycle-{cycle.number}",
                       "group": cycle_group(spec, cycle)}
    return TrainConfig.model_validate(raw)


def _train(spec: LoopSpec, state: LoopState, cycle: Cycle) -> None:
    from ..pipeline.run import result_of, start_pipeline

    backend = get_backend("local")
    if cycle.job_id:  # resumed: a job was started before the crash
        info = backend.status(cycle.job_id)
        if not info.done:
            info = backend.wait(cycle.job_id)
        if info.stage == "COMPLETED":
            _trained(state, cycle, result_of(info, backend.logs(cycle.job_id)))
            return
        cycle.job_id = None  # it failed or was cancelled: train again
    started = start_pipeline(_config(spec, cycle), backend=backend)
    assert started.job is not None, "a local run needs no approval"
    cycle.job_id = started.job.id
    _save(state, cycle, "training")
    info = backend.wait(cycle.job_id)
    _trained(state, cycle, result_of(info, backend.logs(cycle.job_id)))


def _trained(state: LoopState, cycle: Cycle, result) -> None:
    cycle.candidate = f"{result.registry_name}@v{result.registry_version}"
    _save(state, cycle, "trained")


def _adapter_dir(ref: str | None) -> str | None:
    if ref is None:
        return None
    name, version = ref.split("@v")
    return LocalRegistry().get(name, int(version)).path


def _score(spec: LoopSpec, state: LoopState, cycle: Cycle) -> None:
    from .score import row_losses

    cfg = _config(spec, cycle)
    folder = loop_dir(spec.name)
    frozen = read_local_rows(str(folder / "frozen.jsonl"))
    recent = read_local_rows(str(folder / f"cycle-{cycle.number}" / "recent.jsonl"))
    general = read_local_rows(spec.retention.path)
    rows = frozen + recent
    current_dir, candidate_dir = _adapter_dir(state.current), _adapter_dir(cycle.candidate)
    now = row_losses(cfg, current_dir, rows + general)
    new = row_losses(cfg, candidate_dir, rows + general)
    held, keep = len(rows), len(frozen)
    cycle.scores = {
        "current": state.current or "base", "candidate": cycle.candidate,
        "heldout": paired(now[:held], new[:held]),
        "frozen": paired(now[:keep], new[:keep]), "recent": paired(now[keep:held], new[keep:held]),
        "retention": {"current": mean(now[held:]), "candidate": mean(new[held:]), "rows": len(general)},
    }
    _save(state, cycle, "scored")


def _decide(spec: LoopSpec, state: LoopState, cycle: Cycle) -> None:
    retention = cycle.scores["retention"]
    cycle.decision, cycle.reason = decide(cycle.scores["heldout"], retention["current"], retention["candidate"],
                                          z=spec.promote.z, margin=spec.retention.margin)
    if cycle.decision == "promote":
        state.current = cycle.candidate
    state.pending_recent = list(cycle.recent)
    _save(state, cycle, "decided")
    try:
        _track(spec, cycle)
    except Exception as exc:  # noqa: BLE001 - the decision stands; only its Trackio copy is missing
        print(f"tunepack loop: cycle {cycle.number}'s decision was not recorded in Trackio: {exc}", file=sys.stderr)


def cycle_group(spec: LoopSpec, cycle: Cycle) -> str:
    """The Trackio group of one cycle: its training run and its decision run."""
    return f"{spec.name}-cycle-{cycle.number}"


def _track(spec: LoopSpec, cycle: Cycle) -> None:
    """The decision as a Trackio run in the cycle's group, beside its training run: the paired gains, retention
    and 1 = promoted. A re-run after a crash writes the same run again (resume)."""
    from ..tracking.writer import finish, log, start_run

    project = load_loop_config(spec).tracking.project
    run = f"{cycle_group(spec, cycle)}-decision"
    s = cycle.scores
    metrics = {f"loop/{part}_gain": s[part]["gain"] for part in ("heldout", "frozen", "recent") if s[part]["n"]}
    metrics |= {f"loop/{part}_n": s[part]["n"] for part in ("heldout", "frozen", "recent")}
    metrics |= {f"loop/retention_{who}": s["retention"][who] for who in ("current", "candidate")
                if s["retention"][who] is not None}
    metrics["loop/promoted"] = 1.0 if cycle.decision == "promote" else 0.0
    start_run(project, run, config={"loop": spec.name, "cycle": cycle.number, "candidate": cycle.candidate,
                                    "current": s["current"], "decision": cycle.decision, "reason": cycle.reason},
              group=cycle_group(spec, cycle))
    log(project, run, metrics, step=cycle.number)
    finish(project, run)


def cycle_rows(spec: LoopSpec, number: int) -> list[dict]:
    """The rows cycle ``number`` trained on (what the frozen-set check reads back)."""
    path = loop_dir(spec.name) / f"cycle-{number}" / "train.jsonl"
    return read_local_rows(str(path)) if Path(path).is_file() else []


def status(name: str) -> dict:
    state = read_state(name)
    return json.loads(state.model_dump_json())
