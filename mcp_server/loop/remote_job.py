"""One run of a loop scheduled on HF Jobs: ``python -m mcp_server.loop.remote_job STATE_REPO``, what the schedule
``tunepack loop schedule`` created starts each time it fires (tunepack itself is the state repo's code/, mounted
at the approved commit; its requirements come from ``uv run --with``).

1. read loop_state.json and the approval's spend so far (every run labelled with the approval, from the Jobs API,
   this one at its worst case); when the approved cycles ran or this run could take the spend past the approved
   maximum: a TUNEPACK_ERROR line, the schedule suspended, the refusal recorded in the state, exit 1 — nothing
   trains;
2. restore the loop's home (home/) and its spec (spec/) from the state repo;
3. run the cycle as ``tunepack loop cycle`` does (cycle.py): the sessions from their Hub dataset repos, the
   training a local job on this machine, the paired scores, the decision;
4. a promoted candidate goes to the adapter repo (one commit), and the tag ``current`` moves to it;
5. the home and loop_state.json go back to the state repo in one commit, and once no further cycle fits the
   approval the schedule is suspended.

A run that fails before step 5 leaves the loop's state as it was (its failure is noted in loop_state.json): the next
run does the cycle again. Its cost still counts, since the spend is read from the Jobs API, not from the state.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from .. import hf_auth
from ..errors import LoopError, TunepackError
from ..home import tunepack_home
from ..jobs.markers import emit
from .cycle import run_cycle
from .remote import (
    STATE_FILE,
    Promoted,
    RemoteRun,
    RemoteState,
    approval_spend,
    read_remote_state,
    refusal,
    write_remote_state,
)
from .spec import LoopSpec, load_spec
from .state import read_state

WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
SCRATCH = {"sessions.jsonl", "state.lock", ".lock"}  # rebuilt each cycle, or a lock: not carried between runs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mcp_server.loop.remote_job STATE_REPO", file=sys.stderr)
        return 2
    api = hf_auth.api()
    try:
        return run(api, args[0])
    except TunepackError as exc:
        emit("ERROR", exc.to_dict())
        _note_failure(api, args[0], exc.problem)
        return 1


def run(api, state_repo: str) -> int:
    state = read_remote_state(api, state_repo)
    if state is None:
        raise LoopError(f"The state repo {state_repo} holds no {STATE_FILE}.",
                        "schedule the loop with `tunepack loop schedule`, which writes it.")
    spent, jobs = approval_spend(api, state.approval)
    me = _this_run(jobs)
    stop = refusal(state, spent)
    if stop is not None:
        emit("ERROR", stop.to_dict())
        _suspend(api, state, stop.problem)
        state.spend_usd = approval_spend(api, state.approval, running_as_elapsed=me)[0]
        state.runs.append(RemoteRun(job_id=me, outcome="refused", reason=stop.problem, spend_usd=state.spend_usd))
        write_remote_state(api, state, f"tunepack loop {state.name}: refused ({me})")
        return 1
    spec = load_spec(_restore(api, state))
    try:
        cycle = run_cycle(spec)
    except LoopError as exc:  # too few new sessions: the frozen draw stays fixed, nothing trained
        emit("ERROR", exc.to_dict())
        _finish(api, state, spec, RemoteRun(job_id=me, outcome="no cycle", reason=exc.problem), me)
        return 1
    if cycle.decision == "promote":
        state.current = _promote(api, state, cycle)
    assert cycle.decision is not None
    _finish(api, state, spec, RemoteRun(job_id=me, outcome=cycle.decision, cycle=cycle.number,
                                        reason=cycle.reason or ""), me)
    emit("LOOP", {"cycle": cycle.number, "decision": cycle.decision, "reason": cycle.reason,
                  "candidate": cycle.candidate, "current": state.current.model_dump() if state.current else None,
                  "cycles_run": state.cycles_run, "spend_usd": state.spend_usd, "suspended": state.suspended})
    return 0


def _this_run(jobs: list) -> str | None:
    """This job's id: the one running run of the approval (the schedule allows no concurrent runs)."""
    running = [j.id for j in jobs if j.status and j.status.stage == "RUNNING"]
    return running[0] if len(running) == 1 else None


def _suspend(api, state: RemoteState, why: str) -> None:
    if state.schedule_id:
        try:
            api.suspend_scheduled_job(scheduled_job_id=state.schedule_id, namespace=state.approval.namespace)
        except Exception as exc:  # noqa: BLE001 — recorded: the next run refuses again and retries
            why += f" (suspending the schedule failed: {str(exc).splitlines()[0][:200]})"
    state.suspended = why
    print(f"tunepack loop: schedule {state.schedule_id} suspended: {why}", flush=True)


def _restore(api, state: RemoteState) -> Path:
    """The spec (spec/) and the loop's home (home/) from the state repo; the spec's path."""
    folder = Path(tempfile.mkdtemp(prefix="tunepack-loop-state-"))
    try:
        api.snapshot_download(state.state_repo, repo_type="dataset", revision="main",
                              allow_patterns=["spec/**", "home/**"], local_dir=str(folder))
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Reading the loop's state", repo_id=state.state_repo) from None
    if (folder / "home").is_dir():
        shutil.copytree(folder / "home", tunepack_home(), dirs_exist_ok=True)
    return folder / "spec" / "loop.yaml"


def _promote(api, state: RemoteState, cycle) -> Promoted:
    """The candidate's adapter to the adapter repo, and the tag ``current`` moved to that commit."""
    from huggingface_hub.errors import HfHubHTTPError

    from ..registry import LocalRegistry
    from ..registry.hub import publish

    name, version = cycle.candidate.split("@v")
    pushed = publish(LocalRegistry().get(name, int(version)), state.adapter_repo, private=True)
    try:
        try:
            api.delete_tag(state.adapter_repo, tag="current")
        except HfHubHTTPError as exc:
            if getattr(exc.response, "status_code", None) != 404:  # no tag yet: the first promotion
                raise
        api.create_tag(state.adapter_repo, tag="current", revision=pushed.commit,
                       tag_message=f"tunepack loop {name}: cycle {cycle.number} promoted")
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Tagging the promoted adapter", repo_id=state.adapter_repo) from None
    return Promoted(ref=cycle.candidate, repo=state.adapter_repo, commit=pushed.commit, cycle=cycle.number)


def _finish(api, state: RemoteState, spec: LoopSpec, outcome: RemoteRun, me: str | None) -> None:
    loop = read_state(spec.name)
    state.cycles_run, state.frozen, state.consumed = loop.done_cycles, dict(loop.frozen), list(loop.consumed)
    state.spend_usd = approval_spend(api, state.approval, running_as_elapsed=me)[0]
    outcome.spend_usd = state.spend_usd
    state.runs.append(outcome)
    done = refusal(state, state.spend_usd + state.approval.per_cycle_usd)  # would the next run be refused?
    if done is not None:
        _suspend(api, state, done.problem)
    _upload(api, state, spec.name)


def _upload(api, state: RemoteState, name: str) -> None:
    """The loop's home and loop_state.json, one commit: loops/NAME, registry/NAME (the weights of the adapter in use
    only) and the tiny replicas built here."""
    home = tunepack_home()
    staging = Path(tempfile.mkdtemp(prefix="tunepack-loop-upload-"))
    current = state.current.ref if state.current else None
    try:
        _copy(home / "loops" / name, staging / "home" / "loops" / name, lambda p: p.name not in SCRATCH)
        registry = home / "registry" / name
        for version in sorted(registry.glob("v*")) if registry.is_dir() else []:
            keep_weights = f"{name}@{version.name}" == current
            _copy(version, staging / "home" / "registry" / name / version.name,
                  lambda p, keep=keep_weights: keep or p.name not in WEIGHTS)
        for replica in sorted((home / "models").glob("tiny-*")) if (home / "models").is_dir() else []:
            if replica.is_dir():
                _copy(replica, staging / "home" / "models" / replica.name, lambda p: not p.name.startswith("."))
        (staging / STATE_FILE).write_text(state.model_dump_json(indent=2), encoding="utf-8")
        api.upload_folder(repo_id=state.state_repo, repo_type="dataset", folder_path=str(staging),
                          delete_patterns=["home/**"],
                          commit_message=f"tunepack loop {name}: {state.runs[-1].outcome} "
                                         f"(cycle {state.runs[-1].cycle or '-'})")
    except TunepackError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Writing the loop's state", repo_id=state.state_repo) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy(source: Path, target: Path, keep) -> None:
    for path in sorted(source.rglob("*")) if source.is_dir() else []:
        if path.is_file() and keep(path) and not any(part.startswith(".") for part in path.relative_to(source).parts):
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / path.relative_to(source))


def _note_failure(api, state_repo: str, problem: str) -> None:
    """A run that failed part way: noted in loop_state.json (the home is left as the last good run wrote it)."""
    try:
        state = read_remote_state(api, state_repo)
        if state is None:
            return
        me = _this_run(approval_spend(api, state.approval)[1])
        state.runs.append(RemoteRun(job_id=me, outcome="failed", reason=problem[:500],
                                    spend_usd=approval_spend(api, state.approval, running_as_elapsed=me)[0]))
        write_remote_state(api, state, f"tunepack loop {state.name}: a run failed ({me})")
    except Exception as exc:  # noqa: BLE001 — the failure itself is already in the log
        print(f"tunepack loop: could not note the failure in {state_repo}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
