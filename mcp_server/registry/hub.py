"""Publish a registry version to the Hugging Face Hub: create the repo (private by default), upload
the adapter, its manifest and a model card built with ``ModelCard`` / ``ModelCardData``.

Re-publishing the same version to the same repo is idempotent: the version folder remembers what
it pushed (``hub.json``: repo, commit, a hash of the content) and a repeat returns that commit
without a new upload.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel

from .. import hf_auth
from ..approval import Consent, Decision, approve
from .local import AdapterVersion

HUB_TAGS = ["peft", "trl", "sft", "tunepack"]
SKIP = {"registry.json", "hub.json", "README.md"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class HubPush(BaseModel):
    repo_id: str
    url: str
    commit: str
    commit_url: str | None = None
    private: bool
    reused: bool = False
    files: list[str]


def _content_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in SKIP):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


USE_PLACEHOLDER = "PATH_OR_REPO_OF_THIS_ADAPTER"  # the local card's usage snippet, until the adapter has a repo


def hub_card(body_markdown: str, manifest: dict, name: str, eval_results: list[dict] | None = None,
             repo_id: str | None = None) -> str:
    """The card text with Hub metadata: base_model, datasets, library_name, tags and model-index; with
    ``repo_id``, its usage snippet loads from that repo."""
    if repo_id:
        body_markdown = body_markdown.replace(USE_PLACEHOLDER, repo_id)
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    config = manifest.get("config", {})
    base = (config.get("model") or {}).get("name", "")
    dataset = (config.get("data") or {}).get("hub_id")
    results = [EvalResult(task_type="text-generation", dataset_type=r["dataset_type"], dataset_name=r["dataset_name"],
                          metric_type=r["metric_type"], metric_value=r["metric_value"]) for r in eval_results or []]
    if not results and body_markdown.startswith("---\n"):  # keep the model-index the eval step wrote locally
        card_data = ModelCard(body_markdown).data  # a ModelCardData at runtime; typed as its base CardData
        if isinstance(card_data, ModelCardData):
            results = card_data.eval_results or []
    data = ModelCardData(base_model=base if HUB_ID.match(base) else None, datasets=[dataset] if dataset else None,
                         library_name="peft", tags=HUB_TAGS, model_name=name, eval_results=results or None)
    body = re.sub(r"^---\n.*?\n---\n", "", body_markdown, count=1, flags=re.S)
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n{body}"))


class Publication(BaseModel):
    decision: Decision
    push: HubPush | None = None  # None while the human's approval is required


def publish_approved(name: str, version: int | None, repo_id: str, *, private: bool = True,
                     consent: Consent | None = None) -> Publication:
    """Publish a registry version through the approval gate: a public repo needs the human's yes (the
    keyboard, an elicitation answer or an approval token); a private one does not."""
    from .local import LocalRegistry

    entry = LocalRegistry().get(name, version)
    arguments = {"name": entry.name, "version": entry.version, "repo_id": repo_id, "private": private}
    decision = approve("registry_publish", arguments, 0.0, needed=not private, consent=consent or Consent(),
                       summary=f"publish {entry.name} v{entry.version} as the public repo {repo_id}")
    if decision.status == "approval_required":
        return Publication(decision=decision)
    return Publication(decision=decision, push=publish(entry, repo_id, private=private))


def publish(entry: AdapterVersion, repo_id: str, *, private: bool = True,
            eval_results: list[dict] | None = None) -> HubPush:
    folder = Path(entry.path)
    if not HUB_ID.match(repo_id):
        raise hf_auth.HubError(f"'{repo_id}' is not a repo id.", "use namespace/name, e.g. alice/qwen3-agent-sft.")
    content = _content_hash(folder)
    record_path = folder / "hub.json"
    records = json.loads(record_path.read_text()) if record_path.is_file() else {}
    previous = records.get(repo_id)
    if previous and previous["content"] == content:
        return HubPush(**{k: v for k, v in previous.items() if k != "content"}, reused=True)

    manifest_path = folder / "tunepack_manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    card = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").is_file() else ""
    staging = Path(tempfile.mkdtemp(prefix="tunepack-hub-"))
    try:
        for item in folder.iterdir():
            if item.name not in SKIP and not item.name.startswith("."):
                (shutil.copytree if item.is_dir() else shutil.copy2)(item, staging / item.name)
        if not (staging / "adapter_config.json").is_file():
            _weights_from_hub(entry, staging)  # an HF-trained version: its weights are in its job's output repo
        (staging / "README.md").write_text(hub_card(card, manifest, entry.name, eval_results, repo_id=repo_id),
                                           encoding="utf-8")
        result = push_folder(staging, repo_id, private=private, what="the adapter",
                             message=f"tunepack: {entry.name} v{entry.version}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    records[repo_id] = {**result.model_dump(exclude={"reused"}), "content": content}
    record_path.write_text(json.dumps(records, indent=2))
    return result


def _weights_from_hub(entry: AdapterVersion, staging: Path) -> None:
    """The adapter files of a version that lives only on the Hub (trained by an HF job), at the commit the
    registry recorded; a version with weights nowhere is refused before anything is pushed."""
    if not entry.hub_repo:
        raise hf_auth.HubError(f"{entry.name} v{entry.version} has no adapter weights in {entry.path} and no Hub "
                               "repo that holds them.", "publish a version that finished training (registry_list).")
    from huggingface_hub import snapshot_download

    try:
        got = Path(snapshot_download(entry.hub_repo, revision=entry.hub_commit, allow_patterns=ADAPTER_FILES,
                                     local_dir=staging / ".weights"))
    except Exception as exc:
        raise hf_auth.http_error(exc, action=f"Reading the adapter of {entry.name} v{entry.version}",
                                 repo_id=entry.hub_repo) from None
    if not (got / "adapter_config.json").is_file():
        raise hf_auth.HubError(f"{entry.hub_repo}@{(entry.hub_commit or '')[:12]} holds no adapter_config.json: "
                               f"{entry.name} v{entry.version} has no adapter to publish.",
                               "train it again, or publish another version (registry_list).")
    for item in got.iterdir():
        if not item.name.startswith("."):
            shutil.move(str(item), staging / item.name)
    shutil.rmtree(got, ignore_errors=True)


ADAPTER_FILES = ["adapter_config.json", "adapter_model.safetensors", "adapter_model.bin", "tokenizer*",
                 "special_tokens_map.json", "chat_template.*"]


def push_folder(folder: Path, repo_id: str, *, private: bool, message: str, what: str) -> HubPush:
    """Create the model repo (private unless told otherwise; an existing one is kept) and upload ``folder`` as
    one commit. Used for adapters (``publish``) and merged models (``export``)."""
    if not HUB_ID.match(repo_id):
        raise hf_auth.HubError(f"'{repo_id}' is not a repo id.", "use namespace/name, e.g. alice/qwen3-agent-sft.")
    api = hf_auth.api()
    try:
        repo_url = str(api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model"))
    except Exception as exc:
        raise hf_auth.http_error(exc, action="Creating the repo", repo_id=repo_id) from None
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    try:
        commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type="model",
                                   commit_message=message)
    except Exception as exc:
        raise hf_auth.http_error(exc, action=f"Uploading {what}", repo_id=repo_id) from None
    return HubPush(repo_id=repo_id, url=repo_url, commit=commit.oid, commit_url=commit.commit_url,
                   private=private, files=files)


def upload_dataset(files: list[str], repo_id: str, *, private: bool = True) -> str:
    """Upload local training files to a (private) dataset repo; return the commit to pin."""
    api = hf_auth.api()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    except Exception as exc:
        raise hf_auth.http_error(exc, action="Creating the dataset repo", repo_id=repo_id) from None
    staging = Path(tempfile.mkdtemp(prefix="tunepack-data-"))
    try:
        (staging / "data").mkdir()
        for index, path in enumerate(files):
            src = Path(path)
            shutil.copy2(src, staging / "data" / f"train-{index:05d}{src.suffix}")
        try:
            commit = api.upload_folder(repo_id=repo_id, folder_path=str(staging), repo_type="dataset",
                                       commit_message="tunepack: training data")
        except Exception as exc:
            raise hf_auth.http_error(exc, action="Uploading the training data", repo_id=repo_id) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return commit.oid


def hub_repos(entry: AdapterVersion) -> list[str]:
    """The Hub repos that hold this version: where it was trained (an HF job's output repo) and where it was
    published since."""
    record = Path(entry.path) / "hub.json"
    published = list(json.loads(record.read_text())) if record.is_file() else []
    return list(dict.fromkeys([*([entry.hub_repo] if entry.hub_repo else []), *published]))


def push_eval(entry: AdapterVersion) -> list[dict]:
    """The version's card (with its eval table and model-index) and ``eval_results.json`` on every Hub repo
    that holds it, one commit each: ``[{repo_id, commit}]``, or ``[{repo_id, error}]`` where the Hub refused."""
    from huggingface_hub import CommitOperationAdd

    folder = Path(entry.path)
    manifest_path = folder / "tunepack_manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    card = Path(entry.card_path).read_text(encoding="utf-8")
    pushed = []
    for repo_id in hub_repos(entry):
        operations = [CommitOperationAdd("README.md", hub_card(card, manifest, entry.name, repo_id=repo_id).encode())]
        if (folder / "eval_results.json").is_file():
            operations.append(CommitOperationAdd("eval_results.json", str(folder / "eval_results.json")))
        try:
            commit = hf_auth.api().create_commit(repo_id, operations, commit_message=f"tunepack: eval of "
                                                 f"{entry.name} v{entry.version}")
            pushed.append({"repo_id": repo_id, "commit": commit.oid})
        except Exception as exc:  # noqa: BLE001 - the eval is recorded here whatever the Hub says; the reason is kept
            err = hf_auth.http_error(exc, action="Uploading the eval to the model card", repo_id=repo_id)
            pushed.append({"repo_id": repo_id, "error": str(err)})
    return pushed


def push_card(repo_id: str, card_text: str) -> str:
    """Replace the README.md of a repo (the script's own push wrote TRL's card); return the commit."""
    api = hf_auth.api()
    try:
        commit = api.upload_file(path_or_fileobj=card_text.encode(), path_in_repo="README.md", repo_id=repo_id,
                                 commit_message="tunepack: model card")
    except Exception as exc:
        raise hf_auth.http_error(exc, action="Uploading the model card", repo_id=repo_id) from None
    return commit.oid
