"""Push the user's own agent sessions to a Hub dataset repo, raw, redacted and incrementally.

``push_sessions`` collects the sessions (``collect``: the harnesses' own folders, or given paths), keeps those
matching ``--project`` / ``--since`` / ``--until``, and compares each session's content hash with what the last
push to the same repo recorded (``traces-push/state.json`` in the tunepack home, under a file lock): only new or
grown sessions go. Each goes as the harness wrote it, in its harness's folder of the repo — the raw layouts the
Hub's agent-trace viewer reads and ``hf://datasets/NS/NAME`` (``hub.py``) trains on — after every string in it
went through the conversion's redaction (``scrub``: the session as one unit, so a secret found anywhere in it is
replaced wherever it occurs in it); the report counts the replacements by kind.

The repo is private unless ``public`` is asked for, and a public repo (asked for, or an existing repo that is
public) needs the human's yes through the approval room: the keyboard (the CLI), an elicitation answer or an
approval token (the MCP tool). ``dry_run`` lists what would go and the redaction report, without a Hub call.

Usage:
    report = push_sessions(None, "alice/my-traces", PushOptions(since=date(2026, 11, 1)), Consent.keyboard())
    print(report.summary)        # "3 sessions pushed (new 2, changed 1); 14 unchanged"
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..approval import Consent, Decision, approve
from ..config.schema import untitled
from ..errors import TraceError
from ..home import home_dir
from .collect import FOLDERS, Unit, collect, inside
from .scrub import scrub_session

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
LISTED = 50


class PushOptions(BaseModel):
    """Which sessions go and how (``tunepack traces push`` flags and the ``traces_push`` tool's arguments)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=untitled)

    public: bool = Field(False, description="Make the repo public (needs the human's approval); default private.")
    project: str | None = Field(None, description="Only sessions whose working directory is this folder or below.")
    since: date | None = Field(None, description="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
    until: date | None = Field(None, description="Only sessions started on or before this day (YYYY-MM-DD, UTC).")
    dry_run: bool = Field(False, description="List what would be pushed and the redaction report; upload nothing.")


class PushedSession(BaseModel):
    harness: str
    source: str = Field(description="The session here.")
    repo_path: str = Field(description="Its main file in the repo.")
    status: Literal["new", "changed"]
    files: int
    bytes: int
    redactions: dict[str, int] = Field(default_factory=dict, description="Secrets replaced in it, by kind.")


class PushReport(BaseModel):
    status: Literal["pushed", "up_to_date", "dry_run", "approval_required"]
    summary: str
    repo_id: str
    url: str | None = None
    private: bool
    commit: str | None = None
    found: int = Field(description="Sessions found.")
    selected: int = Field(description="Sessions left after --project / --since / --until.")
    pushed: int = Field(description="Sessions uploaded (dry run: that would be).")
    unchanged: int = Field(description="Sessions already pushed with the same content.")
    filtered: dict[str, int] = Field(default_factory=dict, description="Sessions left out, by filter.")
    harnesses: dict[str, int] = Field(default_factory=dict, description="Sessions pushed per harness.")
    redactions: dict[str, int] = Field(default_factory=dict, description="Secrets replaced before upload, by kind.")
    sessions: list[PushedSession] = Field(default_factory=list, description=f"The first {LISTED} sessions pushed.")
    decision: Decision | None = None
    notes: list[str] = Field(default_factory=list)


def _reason_left_out(unit: Unit, opts: PushOptions) -> str | None:
    if opts.project and not (unit.cwd and inside(unit.cwd, opts.project)):
        return "project"
    if opts.since and unit.day() < opts.since:
        return "since"
    if opts.until and unit.day() > opts.until:
        return "until"
    return None


def _select(units: list[Unit], opts: PushOptions) -> tuple[list[Unit], Counter]:
    kept: list[Unit] = []
    filtered: Counter[str] = Counter()
    for unit in units:
        reason = _reason_left_out(unit, opts)
        if reason:
            filtered[reason] += 1
        else:
            kept.append(unit)
    return kept, filtered


# --- state: what was pushed to which repo ------------------------------------------------------------------

def _state_path() -> Path:
    return home_dir("traces-push") / "state.json"


@contextmanager
def _lock() -> Iterator[None]:
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(_state_path()) + ".lock", timeout=10):
            yield
    except Timeout:
        raise TraceError("Another `tunepack traces push` is running (its lock is held).",
                         "wait for it to finish and run this push again: it will skip what that one pushed.") from None


def _load_state() -> dict:
    path = _state_path()
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"repos": {}}


def _save_state(state: dict) -> None:
    path = _state_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def _diff(units: list[Unit], pushed: dict[str, str], remote: set[str] | None):
    """(sessions to push with their hash and status, number unchanged). A session recorded as pushed whose file
    the repo no longer has goes again."""
    todo, unchanged = [], 0
    for unit in units:
        digest = unit.digest()
        before = pushed.get(unit.key)
        missing = remote is not None and any(repo_path not in remote for _, repo_path in unit.files)
        if before == digest and not missing:
            unchanged += 1
        else:
            todo.append((unit, digest, "new" if before is None else "changed"))
    return todo, unchanged


# --- the Hub ------------------------------------------------------------------------------------------------

class _Remote(BaseModel):
    private: bool
    files: set[str]


def _remote(repo_id: str) -> _Remote | None:
    """The repo's visibility and files, or None when it does not exist yet."""
    from huggingface_hub.errors import RepositoryNotFoundError

    from .. import hf_auth

    try:
        info = hf_auth.api().dataset_info(repo_id)
    except RepositoryNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 — any transport or HTTP failure: one message that says what to do
        raise hf_auth.http_error(exc, action="Reading the dataset repo", repo_id=repo_id) from None
    return _Remote(private=bool(info.private), files={s.rfilename for s in info.siblings or []})


def card(repo_id: str) -> str:
    folders = ", ".join(f"`{f}/`" for f in sorted(set(FOLDERS.values())))
    return (f"---\ntags:\n- agent-traces\n- tunepack\npretty_name: {repo_id.split('/')[1]}\n---\n"
            f"# {repo_id.split('/')[1]}\n\nCoding-agent sessions pushed with `tunepack traces push`, as the harness "
            f"wrote them, one folder per harness ({folders}). Secrets (Hugging Face, OpenAI, Anthropic, GitHub and "
            "AWS keys, bearer headers) were replaced by `[REDACTED_…]` markers before upload; review before making "
            "the repo public.\n\nTrain on them with `data.hub_id: " + repo_id + "` and `data.format: traces`, or "
            f"`tunepack traces convert hf://datasets/{repo_id} -o rows.jsonl`.\n")


def _upload(staging: Path, repo_id: str, *, create: bool, private: bool, message: str):
    from .. import hf_auth

    api = hf_auth.api()
    try:
        if create:
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        return api.upload_folder(repo_id=repo_id, folder_path=str(staging), repo_type="dataset",
                                 commit_message=message)
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Uploading the sessions", repo_id=repo_id) from None


# --- the room function --------------------------------------------------------------------------------------

def _stage(todo, staging: Path, totals: Counter) -> list[PushedSession]:
    """Redacted copies of the sessions to push under ``staging`` (their repo paths), and what each became."""
    listed = []
    for unit, _, status in todo:
        counts: Counter = Counter()
        scrub_session([(path, staging / repo_path) for path, repo_path in unit.files], counts)
        totals.update(counts)
        listed.append(PushedSession(harness=unit.harness, source=unit.source, repo_path=unit.key, status=status,
                                    files=len(unit.files), bytes=unit.size(), redactions=dict(counts)))
    return listed


def _summary(pushed: list[PushedSession], unchanged: int, dry_run: bool) -> str:
    statuses = Counter(s.status for s in pushed)
    what = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    verb = "would be pushed" if dry_run else "pushed"
    head = f"{len(pushed)} sessions {verb}" + (f" ({what})" if what else "")
    return f"{head}; {unchanged} unchanged"


def _check_request(repo_id: str, opts: PushOptions) -> None:
    if not REPO_ID.match(repo_id or ""):
        raise TraceError(f"'{repo_id}' is not a dataset repo id.", "use namespace/name, e.g. alice/my-agent-traces.")
    if opts.since and opts.until and opts.since > opts.until:
        raise TraceError(f"--since {opts.since} is after --until {opts.until}.", "swap the two days.")


def push_sessions(paths: list[str] | None, repo_id: str, options: PushOptions | None = None,
                  consent: Consent | None = None) -> PushReport:
    """Push the sessions under ``paths`` (None: the harnesses' default folders) to the dataset repo ``repo_id``."""
    opts = options or PushOptions()
    _check_request(repo_id, opts)
    units, notes = collect(paths)
    kept, filtered = _select(units, opts)
    if any(unit.harness == "opencode" for unit in kept):
        notes.append("OpenCode sessions go in their store's layout (opencode/<store>/session|message|part/…): tunepack "
                     "trains on them, but the Hub's trace viewer does not show OpenCode sessions")
    base = {"repo_id": repo_id, "found": len(units), "selected": len(kept), "filtered": dict(filtered), "notes": notes}
    with _lock():
        state = _load_state()
        pushed_before = state["repos"].get(repo_id, {}).get("sessions", {})
        if opts.dry_run:
            return _dry_run(kept, pushed_before, opts, base)
        remote = _remote(repo_id)
        todo, unchanged = _diff(kept, pushed_before, remote.files if remote else None)
        private = (not opts.public) if remote is None else remote.private
        if opts.public and remote is not None and remote.private:
            raise TraceError(f"The dataset repo {repo_id} exists and is private; a push does not change that.",
                             "make it public in the repo's settings on the Hub yourself, or push to a new repo.")
        consent = consent or Consent()
        asked = consent.token is not None or consent.elicited is not None
        decision = _approve(repo_id, paths, opts, consent, needed=not private) if todo or asked else None
        if decision is not None and decision.status == "approval_required":
            return PushReport(status="approval_required", summary=decision.message, private=private, pushed=0,
                              unchanged=unchanged, decision=decision, **base)
        if not todo:  # nothing to ask about; a token or an answer that came anyway was still checked
            return PushReport(status="up_to_date", summary=_summary([], unchanged, False), private=private,
                              pushed=0, unchanged=unchanged, url=_url(repo_id) if remote else None, decision=decision,
                              **base)
        return _push(todo, unchanged, state, remote, private, decision, base)


def _url(repo_id: str) -> str:
    from ..hf_auth import endpoint

    return f"{endpoint().rstrip('/')}/datasets/{repo_id}"


def _approve(repo_id: str, paths: list[str] | None, opts: PushOptions, consent: Consent, needed: bool) -> Decision:
    arguments = {"repo": repo_id, "paths": sorted(paths or []), "public": True, "project": opts.project,
                 "since": str(opts.since) if opts.since else None, "until": str(opts.until) if opts.until else None}
    return approve("traces_push", arguments, 0.0, needed=needed, consent=consent,
                   summary=f"push agent sessions to the PUBLIC dataset repo {repo_id} (anyone can read them)")


def _dry_run(kept: list[Unit], pushed_before: dict, opts: PushOptions, base: dict) -> PushReport:
    todo, unchanged = _diff(kept, pushed_before, None)
    totals: Counter = Counter()
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=home_dir("traces-push")))
    try:
        listed = _stage(todo, staging, totals)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return PushReport(status="dry_run", summary=_summary(listed, unchanged, True), private=not opts.public,
                      pushed=len(listed), unchanged=unchanged, harnesses=dict(Counter(s.harness for s in listed)),
                      redactions=dict(totals), sessions=listed[:LISTED], **base)


def _push(todo, unchanged: int, state: dict, remote: _Remote | None, private: bool, decision: Decision | None,
          base: dict) -> PushReport:
    repo_id = base["repo_id"]
    totals: Counter = Counter()
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=home_dir("traces-push")))
    try:
        listed = _stage(todo, staging, totals)
        if remote is None or "README.md" not in remote.files:
            (staging / "README.md").write_text(card(repo_id), encoding="utf-8")
        harnesses = Counter(s.harness for s in listed)
        counts = ", ".join(f"{k} {v}" for k, v in sorted(harnesses.items()))
        message = f"tunepack: {len(listed)} sessions ({counts})"
        commit = _upload(staging, repo_id, create=remote is None, private=private, message=message)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    record = state["repos"].setdefault(repo_id, {"sessions": {}})
    record["sessions"].update({unit.key: digest for unit, digest, _ in todo})
    record["commit"] = commit.oid
    _save_state(state)
    return PushReport(status="pushed", summary=_summary(listed, unchanged, False), url=_url(repo_id), private=private,
                      commit=commit.oid, pushed=len(listed), unchanged=unchanged, harnesses=dict(harnesses),
                      redactions=dict(totals), sessions=listed[:LISTED], decision=decision, **base)
