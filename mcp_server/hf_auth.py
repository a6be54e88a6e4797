"""The Hugging Face token and account, and HTTP errors turned into what to do next.

The token comes from the environment (``HF_TOKEN``) or the local login (``hf auth login``) through
``huggingface_hub.get_token``; it is passed to jobs as a secret, never as an env var, and never
appears in an output, a log, a script or a card.
"""

from __future__ import annotations

from pydantic import BaseModel

from . import settings
from .errors import HubError, TunepackError


def endpoint() -> str:
    from huggingface_hub import constants

    return settings.hf_endpoint() or constants.ENDPOINT


def token() -> str:
    from huggingface_hub import get_token

    value = get_token()
    if not value:
        raise HubError("No Hugging Face token is available (HF_TOKEN is unset and there is no saved login).",
                       "ask the human to run `hf auth login` or to export HF_TOKEN with write access; "
                       "never paste the token into a tool argument.")
    if value.startswith("$"):
        raise HubError("HF_TOKEN holds a literal placeholder (it starts with '$'), not a token.",
                       "export the token's value itself, e.g. in the shell that starts tunepack.")
    return value


def api():
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint(), token=token())


def http_error(exc: Exception, *, action: str, namespace: str | None = None, job_id: str | None = None,
               repo_id: str | None = None) -> TunepackError:
    """Map a huggingface_hub HTTP error to an error that says what to do next."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    where = namespace or (repo_id.split("/")[0] if repo_id else "the namespace")
    if status == 401:
        return HubError(f"{action} failed: the Hugging Face token was rejected (401 — invalid, expired, or a literal "
                        "'$HF_TOKEN' string was sent instead of the value).",
                        "ask the human to log in again (`hf auth login`) or export a valid HF_TOKEN.")
    if status == 402:
        return HubError(f"{action} failed: payment required (402) — the account has no billing or credits for "
                        "paid hardware.", "ask the human to add a payment method or credits on the Hub, or use a "
                                          "free/CPU flavor or the local backend.")
    if status == 403:
        need = "job.write" if "job" in action.lower() else "repo.write"
        return HubError(f"{action} failed: the token lacks {need} permission on '{where}' (403).",
                        f"ask the human for a token with {need} on '{where}', or use a namespace the token can write.")
    if status == 404 and type(exc).__name__ == "RevisionNotFoundError":  # the repo is there; the revision is not
        return HubError(f"{action} failed: {repo_id or 'the repo'} has no such revision (404).",
                        "set model.revision (data.revision for a dataset) to a branch, tag or commit that exists "
                        f"in {repo_id or 'the repo'}, or leave it out for main.")
    if status == 404:
        what = f"job '{job_id}'" if job_id else (f"repo '{repo_id}'" if repo_id else "the resource")
        return HubError(f"{action} failed: {what} was not found (404).",
                        "check the id: list jobs with jobs_list(backend='hf') or repos on the Hub.")
    return HubError(f"{action} failed: {type(exc).__name__} (HTTP {status}): {str(exc).splitlines()[0][:200]}",
                    "retry in a minute; if it persists, check the Hub status page.")


class Permissions(BaseModel):
    user: str
    role: str | None
    can_write: list[str]
    can_run_jobs: list[str]


def permissions() -> Permissions:
    """Who the token belongs to and where it can write repos and run jobs (from whoami-v2)."""
    try:
        info = api().whoami()
    except Exception as exc:
        raise http_error(exc, action="Checking the token") from None
    user = info["name"]
    namespaces = [user] + [o["name"] for o in info.get("orgs") or []]
    token_info = (info.get("auth") or {}).get("accessToken") or {}
    role = token_info.get("role")
    if role == "write":
        return Permissions(user=user, role=role, can_write=namespaces, can_run_jobs=namespaces)
    if role == "fineGrained":
        scoped = (token_info.get("fineGrained") or {}).get("scoped") or []
        write, jobs = [], []
        for entry in scoped:
            name = (entry.get("entity") or {}).get("name")
            perms = set(entry.get("permissions") or [])
            if "repo.write" in perms or "repo.content.write" in perms:
                write.append(name)
            if "job.write" in perms:
                jobs.append(name)
        return Permissions(user=user, role=role, can_write=write, can_run_jobs=jobs)
    return Permissions(user=user, role=role, can_write=[], can_run_jobs=[])
