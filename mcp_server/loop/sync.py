"""Bringing a scheduled loop's promotion home (``tunepack loop sync NAME``): the adapter repo's tag ``current``,
recorded once in this machine's registry, and the Hub state beside the loop's local state."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from .. import hf_auth
from ..errors import LoopError
from ..staging import write_text_atomically
from .remote import STATE_FILE, Promoted, read_remote_state
from .state import loop_dir


class Synced(BaseModel):
    state_repo: str
    cycles_run: int
    spend_usd: float
    max_cycles: int
    max_spend_usd: float
    suspended: str | None = None
    current: Promoted | None = None
    registered: str | None = None  # NAME@vN in this machine's registry
    already: bool = False


def sync_loop(name: str, state_repo: str | None = None) -> Synced:
    """Record the loop's promoted adapter (the adapter repo's tag ``current``) in the local registry, once: a version
    whose weights live in that repo at that commit, with its manifest and card."""
    from ..registry import LocalRegistry

    api = hf_auth.api()
    record = loop_dir(name) / "remote.json"
    if state_repo is None and record.is_file():
        state_repo = json.loads(record.read_text(encoding="utf-8"))["state_repo"]
    if state_repo is None:
        state_repo = f"{hf_auth.permissions().user}/{name}-loop"
    state = read_remote_state(api, state_repo)
    if state is None:
        raise LoopError(f"The Hub repo {state_repo} holds no loop state ({STATE_FILE}).",
                        "schedule the loop first (`tunepack loop schedule`), or pass --state-repo.")
    write_text_atomically(loop_dir(name) / "remote_state.json", state.model_dump_json(indent=2))
    out = Synced(state_repo=state_repo, cycles_run=state.cycles_run, spend_usd=state.spend_usd,
                 max_cycles=state.approval.max_cycles, max_spend_usd=state.approval.max_spend_usd,
                 suspended=state.suspended, current=state.current)
    if state.current is None:
        return out
    repo = state.current.repo
    try:
        commit = api.model_info(repo, revision="current").sha or state.current.commit
        manifest = json.loads(Path(api.hf_hub_download(repo, "tunepack_manifest.json", revision=commit))
                              .read_text(encoding="utf-8"))
        card = Path(api.hf_hub_download(repo, "README.md", revision=commit)).read_text(encoding="utf-8")
    except Exception as exc:  # noqa: BLE001
        raise hf_auth.http_error(exc, action="Reading the promoted adapter", repo_id=repo) from None
    registry = LocalRegistry()
    known = next((v for v in registry.list(name) if v.hub_repo == repo and v.hub_commit == commit), None)
    if known is not None:
        return out.model_copy(update={"registered": f"{known.name}@v{known.version}", "already": True})
    entry = registry.record_remote(name, manifest=manifest, hub_repo=repo, hub_commit=commit, card=lambda _v: card,
                                   run_name=f"{name}-cycle-{state.current.cycle}")
    return out.model_copy(update={"registered": f"{entry.name}@v{entry.version}"})
