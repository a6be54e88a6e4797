"""Scheduling a loop on HF Jobs from this machine: quote the whole bound (max_cycles x one run's worst case, or
max_spend_usd), pass the approval gate, write the state repo (spec/, code/, loop_state.json) and create the
scheduled uv job that runs ``remote_job.py`` against it. The state's shape and the bounds a run reads are in
remote.py.

    done = schedule_loop("loop.yaml", flavor="a10g-small", timeout_s=3600, consent=Consent.keyboard())
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from pathlib import Path

from pydantic import BaseModel, Field

from .. import hf_auth
from ..approval import Consent, Spend, spend
from ..config import load_config
from ..errors import LoopError
from ..jobs import JobInfo, estimate
from ..staging import write_text_atomically
from .remote import STATE_FILE, Approval, RemoteState, read_remote_state, write_remote_state
from .spec import LoopSpec, load_loop_config, load_spec
from .state import loop_dir

CODE_MOUNT = "/tunepack-loop/code"  # the package, read-only at the approved commit (PYTHONPATH)
JOB_HOME = "/tmp/tunepack-loop/home"  # the job's tunepack home: the same path every run (tiny replicas' paths)
SOURCE = re.compile(r"^hf://datasets/[A-Za-z0-9][\w.-]*/[\w.-]+(@\S+)?$")
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
CODE_SUFFIXES = {".py", ".yaml", ".yml", ".j2", ".jinja", ".json", ".md", ".txt", ".typed", ".toml"}


class ScheduledLoop(BaseModel):
    spend: Spend
    state_repo: str | None = None
    adapter_repo: str | None = None
    schedule_id: str | None = None
    per_cycle_usd: float
    bound_usd: float
    max_cycles: int
    uploads: list[str] = Field(default_factory=list, description="What travels to the state repo from here: the "
                                                                 "spec, its training config and its retention set")
    command: list[str] = Field(default_factory=list)


# --- scheduling (this machine) ----------------------------------------------------------------------------------

def check_remote_spec(spec: LoopSpec) -> None:
    local = [s for s in spec.sources if not SOURCE.match(s)]
    if local:
        raise LoopError(f"A loop on HF Jobs reads its sessions from the Hub, and {', '.join(local[:3])} "
                        f"{'is' if len(local) == 1 else 'are'} on this machine: a scheduled job cannot reach it.",
                        "push the sessions to a private dataset repo (the traces_push tool, toolset data, or "
                        "`tunepack traces push FOLDER --repo NAMESPACE/NAME`: private unless --public; try --dry-run "
                        "first) and list it in sources as hf://datasets/NAMESPACE/NAME.")
    if spec.state_repo and not REPO_ID.match(spec.state_repo):
        raise LoopError(f"state_repo '{spec.state_repo}' is not a repo id.", "write it as NAMESPACE/NAME.")


def dependencies() -> list[str]:
    """What the job installs: tunepack's own requirements and its [train] extra, as installed tunepack declares
    them (the package itself comes from the state repo's code/)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    out = []
    for text in metadata.requires("tunepack") or []:
        req = Requirement(text)
        marker = str(req.marker or "")
        if marker and marker.replace("'", '"') != 'extra == "train"':
            continue
        req.marker = None
        out.append(str(req))
    return out


def _code_files() -> dict[str, Path]:
    """The package's files (links followed: its templates and skills), by their path under code/."""
    root = Path(__file__).resolve().parents[1]
    out: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in CODE_SUFFIXES:
                out[f"code/mcp_server/{path.relative_to(root).as_posix()}"] = path
    return out


def _spec_files(spec: LoopSpec) -> dict[str, bytes]:
    """The spec as the job reads it: its config and retention set beside it under spec/, the sources as they are.
    Each cycle replaces the config's data.path by its own rows; the copy names the retention set there only so that
    it loads (data.format stays what this machine resolved it to)."""
    import yaml

    from ..config.load import read_yaml

    raw = json.loads(spec.model_dump_json(exclude_none=True))
    raw.update(config="train.yaml", retention={**raw["retention"], "path": "retention.jsonl"})
    config = read_yaml(spec.config)
    data = {k: v for k, v in (config.get("data") or {}).items() if k not in ("path", "hub_id", "revision")}
    config["data"] = {**data, "format": load_loop_config(spec).data.format, "path": ["retention.jsonl"]}
    head = "# tunepack loop: data.path is replaced by each cycle's rows (it names the retention set only to load)\n"
    return {"spec/loop.yaml": yaml.safe_dump(raw, sort_keys=False).encode(),
            "spec/train.yaml": (head + yaml.safe_dump(config, sort_keys=False)).encode(),
            "spec/retention.jsonl": Path(spec.retention.path).read_bytes()}


def _check_loads(files: dict[str, bytes]) -> None:
    """The spec and config as the job will read them load here: a config that names other files on this machine
    (a local model folder, a chat template file) is refused now, not in the job."""
    from ..errors import TunepackError

    folder = Path(tempfile.mkdtemp(prefix="tunepack-loop-spec-"))
    try:
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        load_config(load_spec(folder / "spec" / "loop.yaml").config)
    except TunepackError as exc:
        raise LoopError(f"The loop's config does not load as the scheduled job would read it (only the config, its "
                        f"retention set and the spec travel): {exc.problem}",
                        "use a Hub model id and no other local files in the training config.") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _digest(files: dict[str, bytes] | dict[str, Path]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        value = files[name]
        digest.update(name.encode() + b"\0" + (value if isinstance(value, bytes) else value.read_bytes()) + b"\0")
    return digest.hexdigest()


def schedule_loop(path: str | Path, *, flavor: str, timeout_s: int, schedule: str = "@weekly",
                  max_spend_usd: float | None = None, consent: Consent | None = None) -> ScheduledLoop:
    """Quote the schedule's whole bound, pass the gate, then write the state repo and create the scheduled job."""
    spec = load_spec(path)
    check_remote_spec(spec)
    cfg = load_loop_config(spec)
    one = estimate("hf", flavor, timeout_s)
    bound = round(max_spend_usd if max_spend_usd is not None else one.worst_case_usd * spec.max_cycles, 4)
    if bound + 1e-9 < one.worst_case_usd:
        raise LoopError(f"One cycle on {one.flavor} may cost up to ${one.worst_case_usd:.2f} (timeout {timeout_s} s), "
                        f"more than the whole max spend of ${bound:.2f}: no cycle could ever run.",
                        "raise --max-spend, or shorten --timeout.")
    from ..hf_auth import permissions

    who = permissions()
    check_sources_exist(spec)
    state_repo = spec.state_repo or f"{who.user}/{spec.name}-loop"
    adapter_repo = f"{who.user}/{spec.name}"
    files, code = _spec_files(spec), _code_files()
    _check_loads(files)
    arguments = {"spec_sha256": _digest(files), "code_sha256": _digest(code), "flavor": one.flavor,
                 "timeout_s": timeout_s, "schedule": schedule, "max_cycles": spec.max_cycles,
                 "max_spend_usd": bound, "state_repo": state_repo, "adapter_repo": adapter_repo}
    approval = Approval(id=hashlib.sha256(json.dumps({**arguments, "at": time.time()}).encode()).hexdigest()[:12],
                        namespace=who.user, schedule=schedule, flavor=one.flavor, timeout_s=timeout_s,
                        price_per_hour_usd=one.price_per_hour_usd, per_cycle_usd=one.worst_case_usd,
                        max_cycles=spec.max_cycles, max_spend_usd=bound)
    cost = one.model_copy(update={"replicas": spec.max_cycles, "worst_case_usd": bound})
    made: list[tuple[str, list[str]]] = []

    def submit() -> JobInfo:
        made.append(_create(spec, approval, state_repo, adapter_repo, files, code))
        return JobInfo(id=made[0][0], backend="hf-schedule", name=f"loop-{spec.name}", stage="SCHEDULING",
                       labels=_labels(spec, approval), created_at=time.time(), flavor=one.flavor)

    outcome = spend("loop_schedule", arguments, cost, cfg.tracking.project, submit, consent or Consent())
    done = ScheduledLoop(spend=outcome, per_cycle_usd=one.worst_case_usd, bound_usd=bound, max_cycles=spec.max_cycles,
                         state_repo=state_repo, adapter_repo=adapter_repo, uploads=sorted(files))
    if made:
        done = done.model_copy(update={"schedule_id": made[0][0], "command": made[0][1]})
    return done


def check_sources_exist(spec: LoopSpec) -> None:
    """Every Hub source exists and holds files, before anything is quoted: a schedule whose every run would find
    no sessions is refused now."""
    api = hf_auth.api()
    for source in spec.sources:
        repo, _, revision = source.removeprefix("hf://datasets/").partition("@")
        try:
            files = api.list_repo_files(repo, repo_type="dataset", revision=revision or None)
        except Exception as exc:  # noqa: BLE001
            why = hf_auth.http_error(exc, action="Listing its files", repo_id=repo).problem
            raise LoopError(f"The loop's source {source} cannot be read: {why}",
                            "push the sessions there first (the traces_push tool, or `tunepack traces push FOLDER "
                            f"--repo {repo}`), or fix the name in sources.") from None
        if not [f for f in files if f.endswith((".jsonl", ".json", ".parquet"))]:
            raise LoopError(f"The loop's source {source} holds no session files (.jsonl/.json/.parquet).",
                            f"push the sessions there first (`tunepack traces push FOLDER --repo {repo}`).")


def _labels(spec: LoopSpec, approval: Approval) -> dict[str, str]:
    return {"tunepack_loop": spec.name, "tunepack_approval": approval.id}


def _create(spec: LoopSpec, approval: Approval, state_repo: str, adapter_repo: str, files: dict[str, bytes],
            code: dict[str, Path]) -> tuple[str, list[str]]:
    """Write spec/, code/ and the state to the state repo (one commit), create the scheduled job mounting code/ at
    that commit, and record its id in the state. A loop scheduled again keeps its counters and history; its old
    schedule is deleted (one schedule per loop)."""
    from huggingface_hub import Volume

    api = hf_auth.api()
    try:
        api.create_repo(state_repo, repo_type="dataset", private=True, exist_ok=True)
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Creating the loop's state repo", repo_id=state_repo) from None
    earlier = read_remote_state(api, state_repo)
    state = RemoteState(name=spec.name, state_repo=state_repo, adapter_repo=adapter_repo, approval=approval)
    if earlier is not None:
        state = earlier.model_copy(update={"approval": approval, "schedule_id": None, "suspended": None,
                                           "spend_usd": 0.0, "adapter_repo": adapter_repo})
        if earlier.schedule_id:
            _delete_schedule(api, earlier.approval.namespace, earlier.schedule_id)
    staging = Path(tempfile.mkdtemp(prefix="tunepack-loop-"))
    try:
        for name, data in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        for name, source in code.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, staging / name)
        (staging / STATE_FILE).write_text(state.model_dump_json(indent=2), encoding="utf-8")
        commit = api.upload_folder(repo_id=state_repo, repo_type="dataset", folder_path=str(staging),
                                   delete_patterns=["code/**", "spec/**"] if earlier is not None else None,
                                   commit_message=f"tunepack loop {spec.name}: approved {approval.id}").oid
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Writing the loop's state repo", repo_id=state_repo) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    approval.code_commit = commit
    volume = Volume(type="dataset", source=state_repo, mount_path=CODE_MOUNT, revision=commit, path="code",
                    read_only=True)
    try:
        with warnings.catch_warnings():  # create_scheduled_uv_job is marked experimental: its warning is noise here
            warnings.simplefilter("ignore")
            scheduled = api.create_scheduled_uv_job(
                "python", script_args=["-m", "mcp_server.loop.remote_job", state_repo], schedule=approval.schedule,
                concurrency=False, dependencies=dependencies(), flavor=approval.flavor, timeout=approval.timeout_s,
                env={"PYTHONPATH": CODE_MOUNT, "TUNEPACK_HOME": JOB_HOME, "PYTHONUNBUFFERED": "1"},
                secrets={"HF_TOKEN": hf_auth.token()}, name=f"loop-{spec.name}", labels=_labels(spec, approval),
                volumes=[volume], namespace=approval.namespace)
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Creating the scheduled job", namespace=approval.namespace) from None
    state = state.model_copy(update={"schedule_id": scheduled.id, "approval": approval})
    try:
        write_remote_state(api, state, f"tunepack loop {spec.name}: scheduled {scheduled.id}")
    except BaseException:
        _delete_schedule(api, approval.namespace, scheduled.id)  # no schedule whose state does not name it
        raise
    write_text_atomically(loop_dir(spec.name) / "remote.json", json.dumps(
        {"state_repo": state_repo, "adapter_repo": adapter_repo, "schedule_id": scheduled.id,
         "approval": approval.model_dump(mode="json")}, indent=2))
    return scheduled.id, list(scheduled.job_spec.command or [])


def _delete_schedule(api, namespace: str, schedule_id: str) -> None:
    try:
        api.delete_scheduled_job(scheduled_job_id=schedule_id, namespace=namespace)
    except Exception:  # noqa: BLE001, S110 — already gone: nothing to delete
        pass
