"""Agent sessions straight from a Hub dataset repo: download the session files at a pinned revision.

The Hub shows raw Pi, Claude Code and Codex sessions natively as agent traces; such a repo is a folder
of session files, not rows. ``fetch_sessions`` resolves the revision to its commit, downloads only the
files the converter reads (``.jsonl``, ``.json`` and OpenCode's SQLite stores) into the tunepack home —
one folder per commit, reused — and returns them with a provenance record (repo, commit, each file's
size and sha256) that goes into the conversion stats, the run's manifest and the card.

References: ``hf://datasets/NAMESPACE/NAME`` or ``hf://datasets/NAMESPACE/NAME@REVISION`` (CLI and
tools), ``data.hub_id`` + ``data.revision`` with ``data.format: traces`` (configs).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..errors import HubUnreachable, TraceError
from ..home import home_dir
from .detect import DB_SUFFIXES, SUFFIXES

PREFIX = "hf://datasets/"
_REF = re.compile(r"^hf://datasets/([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@([^@\s]+))?$")
DONE_MARK = ".tunepack-complete"


def parse_ref(ref: str) -> tuple[str, str | None] | None:
    """(repo id, revision or None) for an ``hf://datasets/…`` reference; None for anything else."""
    if not ref.startswith(PREFIX):
        return None
    match = _REF.match(ref)
    if not match:
        raise TraceError(f"'{ref}' is not a Hub dataset reference.",
                         "write it as hf://datasets/NAMESPACE/NAME or hf://datasets/NAMESPACE/NAME@REVISION.")
    return match.group(1), match.group(2)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _reader_token() -> str | None:
    """The token if there is one (public repos need none); a placeholder token is still refused."""
    from huggingface_hub import get_token

    from ..hf_auth import token

    return token() if get_token() else None


def _commit(repo_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    from ..hf_auth import endpoint

    try:
        sha = HfApi(endpoint=endpoint(), token=_reader_token()).dataset_info(repo_id, revision=revision).sha
    except RevisionNotFoundError:
        raise TraceError(f"The dataset repo {repo_id} has no revision '{revision}'.",
                         "give a branch, tag or commit the repo has (or leave the revision out for main).") from None
    except RepositoryNotFoundError:
        raise TraceError(f"The dataset repo {repo_id} was not found on the Hub, or the token cannot read it.",
                         "check the id, and for a private repo set HF_TOKEN to a token that can read it.") from None
    except Exception as exc:  # noqa: BLE001 — transport errors of httpx/httpx2/requests share no base class
        raise _unreachable(repo_id, exc) from None
    if sha is None:
        raise TraceError(f"The Hub did not report a commit for the dataset repo {repo_id} at '{revision or 'main'}'.",
                         "try again later, or give the revision as a full commit sha.")
    return sha


def _unreachable(repo_id: str, exc: Exception) -> TraceError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None:
        return TraceError(f"The Hub answered HTTP {status} for {repo_id}: {str(exc).splitlines()[0][:200]}",
                          "check the repo id and the token, or try again later.")
    return HubUnreachable(f"The Hub could not be reached to read {repo_id} ({type(exc).__name__}).",
                          "check the network and HF_ENDPOINT, or download the sessions and point data.path at them.")


def fetch_sessions(repo_id: str, revision: str | None = None) -> tuple[Path, dict]:
    """(local folder of the repo's session files, provenance record) at the commit ``revision`` resolves to."""
    from huggingface_hub import snapshot_download

    commit = _commit(repo_id, revision)
    folder = home_dir("hub-traces", f"{repo_id.replace('/', '--')}@{commit[:16]}")
    if not (folder / DONE_MARK).is_file():
        patterns = [f"*{suffix}" for suffix in SUFFIXES + DB_SUFFIXES]
        from ..hf_auth import endpoint

        try:
            snapshot_download(repo_id, repo_type="dataset", revision=commit, allow_patterns=patterns,
                              local_dir=str(folder), endpoint=endpoint(), token=_reader_token())
        except Exception as exc:  # noqa: BLE001 — a download cut off half way: nothing is marked complete
            raise _unreachable(repo_id, exc) from None
        (folder / DONE_MARK).write_text(commit, encoding="utf-8")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES + DB_SUFFIXES
                   and ".cache" not in p.relative_to(folder).parts)
    if not files:
        raise TraceError(f"The dataset repo {repo_id} at {commit[:12]} holds no session files (.jsonl, .json, "
                         "SQLite stores).",
                         "point at a repo of raw agent sessions (Pi, Claude Code, Codex, OpenCode), or train on a "
                         "rows dataset with data.format messages.")
    record = {"hub_id": repo_id, "revision": revision or "main", "commit": commit,
              "files": [{"path": str(p.relative_to(folder)), "bytes": p.stat().st_size, "sha256": _digest(p)}
                        for p in files]}
    return folder, record


def resolve_paths(paths: list[str]) -> tuple[list[str], dict | None]:
    """``paths`` with any ``hf://datasets/…`` reference replaced by its downloaded folder, and its record."""
    out, source = [], None
    for entry in paths:
        ref = parse_ref(str(entry))
        if ref is None:
            out.append(str(entry))
            continue
        folder, source = fetch_sessions(*ref)
        out.append(str(folder))
    return out, source
