"""Export a registry version for serving: the vLLM + harness configs for the adapter as it is, or (``merge``)
a standalone model — base in full precision + adapter, ``merge_and_unload`` — with its tokenizer and a model
card, optionally pushed to the Hub (private by default; public needs the human's yes, as for publishing).

The merged folder is written into a hidden staging folder beside the target and renamed into place at the end:
a failure leaves nothing behind. A target that already holds this very export (same version, same adapter
hash) is reused, so a failed push can simply be run again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..approval import Consent, Decision, approve
from ..errors import RegistryError, disk_guard
from ..home import home_dir
from ..staging import staging_folder
from .hub import HUB_ID, HubPush, hub_card, push_folder
from .local import AdapterVersion, LocalRegistry
from .serve import ServeConfig, family_of, serve_config, vllm_command

DTYPES = ("bfloat16", "float16", "float32")
EXPORT_RECORD = "tunepack_export.json"
STAGING = ".tunepack-export-"
MERGED_TAGS = ["tunepack", "trl", "sft", "merged"]


class Export(BaseModel):
    status: Literal["served", "merged", "approval_required"] = Field(
        description="served: configs for the adapter as it is; merged: a standalone model was written; "
                    "approval_required: a public push waits for the human's yes")
    name: str
    version: int
    base_model: str = Field(description="the base as vLLM is told to load it (Hub id or folder)")
    adapter: str = Field(description="the adapter folder, or its Hub repo for a remote run")
    adapter_sha256: str | None = None
    merged_dir: str | None = None
    reused: bool = Field(False, description="the target already held this export; nothing was merged again")
    dtype: str | None = Field(None, description="dtype of the saved merged weights")
    compute_dtype: str | None = Field(None, description="dtype the merge ran in (float32 on CPU)")
    max_abs_logit_diff: float | None = Field(None, description="max |merged − (base + adapter)| logits on a probe")
    decision: Decision | None = None
    push: HubPush | None = None
    serve: ServeConfig | None = None


class Base(BaseModel):
    name: str  # as the run's manifest names it
    source: str  # what to load: a Hub id or a folder
    revision: str | None = None
    trust_remote_code: bool = False

    @property
    def local(self) -> bool:
        return not HUB_ID.match(self.source) or Path(self.source).expanduser().exists()


def _manifest(entry: AdapterVersion) -> dict:
    path = Path(entry.path) / "tunepack_manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _adapter_config(entry: AdapterVersion) -> dict:
    path = Path(entry.path) / "adapter_config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def base_of(entry: AdapterVersion, manifest: dict, adapter_config: dict, override: str | None = None) -> Base:
    """The base model a version was trained on: the manifest's model (its resolved folder for tiny replicas),
    else the registry entry, else PEFT's ``base_model_name_or_path``; ``override`` replaces the source."""
    model = (manifest.get("config") or {}).get("model") or {}
    name = model.get("name") or entry.base_model or adapter_config.get("base_model_name_or_path")
    if not name:
        raise RegistryError(f"{entry.name} v{entry.version} does not say which base model it was trained on.",
                            "pass --base with the base model (Hub id or local folder).")
    source = override or manifest.get("model_path") or adapter_config.get("base_model_name_or_path") or name
    if source.startswith("tiny:"):
        raise RegistryError(f"The base of {entry.name} v{entry.version} is the replica {source}, but its folder is "
                            "not recorded.", "pass --base with the replica's folder (tunepack tiny-model … -o DIR).")
    return Base(name=name, source=source, revision=None if override else model.get("revision"),
                trust_remote_code=bool(model.get("trust_remote_code")))


def adapter_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        digest.update(name.encode())
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def _adapter_rank(config: dict, manifest: dict) -> int:
    """The largest LoRA rank (PEFT's config; the run's lora.r when only the Hub holds the adapter)."""
    trained = ((manifest.get("config") or {}).get("lora") or {}).get("r") or 0
    ranks = [config.get("r") or trained, *(config.get("rank_pattern") or {}).values()]
    return int(max(ranks))


def resolve_base(base: Base) -> Path:
    """A local folder holding the base's full weights: the folder itself, the Hugging Face cache, or a download."""
    if base.local:
        path = Path(base.source).expanduser()
        if not (path / "config.json").is_file():
            raise RegistryError(f"The base model folder '{path}' is missing or has no config.json.",
                                "restore it (for a tiny replica: tunepack tiny-model --data FILES -o DIR), or pass "
                                "--base with a local copy of the base model.")
        return path
    from huggingface_hub import constants, get_token, snapshot_download

    from .. import hf_auth

    try:
        return Path(snapshot_download(base.source, revision=base.revision, local_files_only=True))
    except Exception:  # not in the cache: download when the Hub is reachable
        pass
    if constants.HF_HUB_OFFLINE:
        raise RegistryError(f"The base model {base.source} is not in the local Hugging Face cache and the Hub is off "
                            "(HF_HUB_OFFLINE is set).", f"download it where the Hub is reachable (hf download "
                            f"{base.source}) or pass --base with a local copy.")
    try:
        return Path(snapshot_download(base.source, revision=base.revision, endpoint=hf_auth.endpoint(),
                                      token=get_token(), ignore_patterns=["original/*", "*.gguf", "*.onnx", "*.h5",
                                                                          "*.msgpack", "*.tflite"]))
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise RegistryError(f"The base model {base.source} is not available locally and the Hub could not provide it "
                            f"({type(exc).__name__}: {first}).",
                            "check the id and revision, log in for gated or private models (hf auth login), or "
                            "pass --base with a local copy of the base model.") from None


def check_architecture(entry: AdapterVersion, manifest: dict, config: dict) -> None:
    trained = manifest.get("model_class")
    found = config.get("architectures") or []
    if trained and found and trained not in found:
        raise RegistryError(f"{entry.name} v{entry.version} was trained on a {trained}, but the base model found is a "
                            f"{', '.join(found)}.", "export against the base the adapter was trained on (drop "
                            "--base, or point it at a copy of that same model).")


def dtypes(manifest: dict, config: dict, cuda: bool) -> tuple[str, str]:
    """(saved dtype, dtype the merge runs in): the run's model.dtype, else the checkpoint's own dtype, else what
    the run trained in; the merge runs in float32 on CPU (CPUs only emulate half precision)."""
    setting = ((manifest.get("config") or {}).get("model") or {}).get("dtype", "auto")
    text = config.get("text_config") or {}
    candidates = [setting if setting != "auto" else None, config.get("dtype"), config.get("torch_dtype"),
                  text.get("dtype"), text.get("torch_dtype"), (manifest.get("precision") or {}).get("weights")]
    saved = next((c for c in candidates if c in DTYPES), "float32")
    return saved, saved if cuda else "float32"


def target_dir(output: str | Path | None, entry: AdapterVersion) -> Path:
    return Path(output).expanduser().resolve() if output else home_dir("exports") / f"{entry.name}-v{entry.version}"


def _previous(target: Path, entry: AdapterVersion, sha: str | None) -> dict | None:
    """The export record of a target that already holds this version merged; refuse any other non-empty target."""
    if not target.exists() or (target.is_dir() and not any(target.iterdir())):
        return None
    record = target / EXPORT_RECORD
    if record.is_file():
        done = json.loads(record.read_text(encoding="utf-8"))
        if sha and (done.get("name"), done.get("version"), done.get("adapter_sha256")) == (entry.name, entry.version,
                                                                                               sha):
            return done
    raise RegistryError(f"The output folder '{target}' exists and is not empty.",
                        "pick a new folder with -o, or remove that one if it is not needed.")


def merged_card(entry: AdapterVersion, manifest: dict, base: Base, record: dict, serve_line: str) -> str:
    from huggingface_hub import ModelCard

    used_4bit = (manifest.get("quantization") or {}).get("used_4bit")
    trained = "QLoRA (4-bit NF4 base)" if used_4bit else "LoRA"
    adapter_card = Path(entry.card_path).read_text(encoding="utf-8") if Path(entry.card_path).is_file() else ""
    adapter_body = re.sub(r"^---\n.*?\n---\n", "", adapter_card, count=1, flags=re.S).strip()
    body = "\n".join([
        f"# {entry.name} v{entry.version} — merged", "",
        f"The LoRA adapter **{entry.name} v{entry.version}** from the tunepack registry, merged into the weights of "
        f"its base model `{base.name}` with PEFT's `merge_and_unload`: a standalone model that loads without PEFT.",
        "", "| | |", "|---|---|",
        f"| base model | `{base.name}`" + (f" (revision `{base.revision}`)" if base.revision else "") + " |",
        f"| adapter | `{entry.name}` v{entry.version}, sha256 `{record['adapter_sha256']}` |",
        f"| adapter trained with | {trained} |",
        f"| merge | into the full-precision base (not the 4-bit weights of QLoRA training), computed in "
        f"{record['compute_dtype']}, saved as {record['dtype']} |",
        f"| check | max abs logit difference merged vs base + adapter: {record['max_abs_logit_diff']:.3g} over "
        f"{record['probe_tokens']} probe tokens |", "",
        "Serve it with an OpenAI-compatible API (MODEL: this folder, or the Hub repo holding it):", "",
        f"```bash\n{serve_line}\n```", "",
        "## The adapter's card", "", adapter_body or "(none)", ""])
    card = ModelCard(hub_card(body, manifest, entry.name))
    for key, value in (("library_name", "transformers"), ("tags", MERGED_TAGS), ("pipeline_tag", "text-generation")):
        setattr(card.data, key, value)  # a standalone transformers model now, not a PEFT adapter
    return str(card)


def _local_adapter(entry: AdapterVersion, workdir: Path) -> Path:
    """The adapter folder: the registry's copy, or a download of the Hub repo a remote run pushed it to."""
    folder = Path(entry.path)
    if (folder / "adapter_config.json").is_file():
        return folder
    if not entry.hub_repo:
        raise RegistryError(f"{entry.name} v{entry.version} has no adapter files ({folder}).",
                            "push the adapter folder again (registry_push) or pick another version.")
    from huggingface_hub import get_token, snapshot_download

    from .. import hf_auth

    try:
        return Path(snapshot_download(entry.hub_repo, revision=entry.hub_commit, local_dir=str(workdir / "adapter"),
                                      endpoint=hf_auth.endpoint(), token=get_token()))
    except Exception as exc:
        raise hf_auth.http_error(exc, action="Downloading the adapter", repo_id=entry.hub_repo) from None


def _merge(entry: AdapterVersion, manifest: dict, base: Base, target: Path, serve_line: str) -> dict:
    """Merge into a staging folder beside ``target`` and rename it into place; returns the export record."""
    import torch

    from .merge import config_of

    base_dir = resolve_base(base)
    config = config_of(base_dir)
    check_architecture(entry, manifest, config)
    dtype, compute = dtypes(manifest, config, torch.cuda.is_available())
    with disk_guard(f"Writing the merged model {target}", target.parent, setting="-o"):
        return _write(entry, manifest, base, base_dir, target, dtype, compute, serve_line)


def _staging(parent: Path) -> Path:
    """A hidden staging folder tagged with this process id; those left by exports that were killed (an
    out-of-memory kill mid-merge) are removed first."""
    return staging_folder(parent, STAGING)
    return True


def _write(entry: AdapterVersion, manifest: dict, base: Base, base_dir: Path, target: Path, dtype: str,
           compute: str, serve_line: str) -> dict:
    from .. import __version__
    from .merge import merge_into

    staging = _staging(target.parent)
    try:
        model_dir = staging / "model"
        adapter_dir = _local_adapter(entry, staging)
        report = merge_into(model_dir, base_dir, adapter_dir, dtype=dtype, compute_dtype=compute,
                            trust_remote_code=base.trust_remote_code)
        record = {"name": entry.name, "version": entry.version, "registry_path": entry.path, "base_model": base.name,
                  "base_source": base.source, "base_revision": base.revision,
                  "adapter_sha256": adapter_hash(adapter_dir), **report.model_dump(),
                  "tunepack_version": __version__, "exported_at": time.time()}
        if manifest:
            (model_dir / "tunepack_manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        (model_dir / "README.md").write_text(merged_card(entry, manifest, base, record, serve_line), encoding="utf-8")
        (model_dir / EXPORT_RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")
        if target.is_dir():  # an empty folder the user made: replaced
            target.rmdir()
        os.rename(model_dir, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return record


def _refuse_options(merge: bool, output: str | Path | None, push_repo: str | None) -> None:
    if push_repo and not merge:
        raise RegistryError("--push uploads a merged model, but --merge is not set.",
                            "add --merge, or publish the adapter itself with `tunepack registry publish NAME --repo "
                            "NS/NAME`.")
    if output and not merge:
        raise RegistryError("-o names the folder of a merged model, but --merge is not set.",
                            "add --merge, or drop -o to get the serving configs for the adapter as it is.")
    if push_repo and not HUB_ID.match(push_repo):
        raise RegistryError(f"'{push_repo}' is not a Hub repo id.", "use namespace/name, e.g. alice/agent-sft-merged.")


def export_version(name: str, version: int | None = None, *, merge: bool = False, output: str | Path | None = None,
                   push_repo: str | None = None, private: bool = True, consent: Consent | None = None,
                   base_override: str | None = None, port: int = 8000,
                   registry: LocalRegistry | None = None) -> Export:
    """Serving configs for a registry version; with ``merge`` a standalone merged model in ``output`` (default
    ``<tunepack home>/exports/NAME-vN``), pushed to ``push_repo`` when given."""
    entry = (registry or LocalRegistry()).get(name, version)
    _refuse_options(merge, output, push_repo)
    decision = None
    if push_repo:
        decision = approve("registry_export", {"name": entry.name, "version": entry.version, "repo_id": push_repo,
                                               "private": private, "merge": merge, "base": base_override},
                           0.0, needed=not private,
                           consent=consent or Consent(),
                           summary=f"push {entry.name} v{entry.version}, merged, as the public repo {push_repo}")
    manifest, adapter_config = _manifest(entry), _adapter_config(entry)
    base = base_of(entry, manifest, adapter_config, base_override)
    has_files = bool(adapter_config)
    adapter = entry.path if has_files or not entry.hub_repo else entry.hub_repo
    family = family_of(manifest.get("model_class"), base.name)
    done = Export(status="served", name=entry.name, version=entry.version, base_model=base.source, adapter=adapter,
                  adapter_sha256=adapter_hash(Path(entry.path)) if has_files else None, decision=decision)
    if decision is not None and decision.status == "approval_required":
        return done.model_copy(update={"status": "approval_required"})
    if not merge:
        done.serve = serve_config(entry.name, entry.version, base=base.source, revision=base.revision,
                                  adapter=adapter, rank=_adapter_rank(adapter_config, manifest), family=family,
                                  port=port)
        if adapter == entry.hub_repo:
            done.serve.notes.append(f"vLLM downloads the adapter from the Hub repo {adapter}: export HF_TOKEN in its "
                                    "environment when the repo is private")
        return done
    target = target_dir(output, entry)
    done.serve = serve_config(entry.name, entry.version, base=base.source, merged=str(target), family=family,
                              port=port)
    record = _previous(target, entry, done.adapter_sha256)
    reused = record is not None
    record = record or _merge(entry, manifest, base, target, vllm_command(entry.name, merged="MODEL", family=family))
    done = done.model_copy(update={"status": "merged", "merged_dir": str(target), "reused": reused,
                                   "adapter_sha256": record["adapter_sha256"], "dtype": record["dtype"],
                                   "compute_dtype": record["compute_dtype"],
                                   "max_abs_logit_diff": record["max_abs_logit_diff"]})
    if push_repo:
        done.push = push_folder(target, push_repo, private=private, what="the merged model",
                                message=f"tunepack: {entry.name} v{entry.version} merged into {base.name}")
    return done
