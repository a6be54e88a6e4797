"""Where a run starts from: a registered adapter (``model.adapter: NAME[@vN]``), resolved on the host before any
job, so a wrong reference is one error here, not a failure on a paid GPU.

    start = start_adapter(cfg)              # None, or {name, version, method, base, adapter, hub_repo, ...}
    start = start_adapter(cfg, remote=True) # an HF job reads the adapter from the Hub at its recorded commit

The adapter's own LoRA weights train further (its rank, alpha and targets are kept), on the base model it was
trained on: ``model.name`` must name that base (for a tiny replica: the same family, and the run uses the
replica the adapter was trained with, whose tokenizer came from that run's data). The result is embedded in the
script (``RENDER_INFO["start"]``), the manifest (``grpo.start``) and the card, and an eval scores it as a third
model.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..config import TrainConfig
from ..errors import ConfigError
from ..registry import AdapterVersion, LocalRegistry, read_manifest

LIST = "`tunepack registry list` shows the names and versions"


def parse_ref(ref: str) -> tuple[str, int | None]:
    name, _, version = ref.partition("@v")
    return name, int(version) if version else None


def start_adapter(cfg: TrainConfig, *, remote: bool = False) -> dict | None:
    """The registered adapter a run starts from, checked against the config; None without model.adapter."""
    if not cfg.model.adapter:
        return None
    name, version = parse_ref(cfg.model.adapter)
    try:
        entry = LocalRegistry().get(name, version)
    except Exception as exc:  # RegistryError: no such name or version
        raise ConfigError(f"model.adapter {cfg.model.adapter}: {getattr(exc, 'problem', exc)}",
                          f"name a registered adapter ({LIST}), e.g. model.adapter: NAME@vN.") from None
    manifest = read_manifest(entry.path)
    _same_base(cfg, entry, manifest)
    where = _where(cfg, entry, remote)
    lora = _lora_of(entry, manifest)
    _same_lora(cfg, lora)
    return {"name": entry.name, "version": entry.version, "ref": f"{entry.name}@v{entry.version}",
            "method": manifest.get("method", "sft"), "base": manifest.get("model_path") or entry.base_model,
            "model": manifest["config"]["model"]["name"], "run_name": entry.run_name, "lora": lora,
            # the adapter's own lineage ends with itself (unversioned): that step becomes the registered version
            "lineage": [*(manifest.get("lineage") or [])[:-1], _step(entry, manifest)], **where}


def _same_base(cfg: TrainConfig, entry: AdapterVersion, manifest: dict) -> None:
    trained = manifest["config"]["model"]
    if trained["name"] != cfg.model.name or (cfg.model.revision or None) != (trained.get("revision") or None):
        raise ConfigError(
            f"model.adapter {entry.name} v{entry.version} was trained on {trained['name']}"
            + (f"@{trained['revision']}" if trained.get("revision") else "")
            + f", but model.name is {cfg.model.name}" + (f"@{cfg.model.revision}" if cfg.model.revision else "")
            + ": its weights only mean something on their own base.",
            f"set model.name: {trained['name']} (and its revision), or start from an adapter of {cfg.model.name} "
            f"({LIST}).")


def _where(cfg: TrainConfig, entry: AdapterVersion, remote: bool) -> dict:
    folder = Path(entry.path)
    local = (folder / "adapter_config.json").is_file()
    hub_repo, hub_commit = entry.hub_repo, entry.hub_commit
    if not hub_repo:  # published after training: the latest publication
        records = json.loads((folder / "hub.json").read_text()) if (folder / "hub.json").is_file() else {}
        if records:
            last = list(records.values())[-1]
            hub_repo, hub_commit = last["repo_id"], last["commit"]
    if remote and not hub_repo:
        raise ConfigError(f"model.adapter {entry.name} v{entry.version} is only in this machine's registry, which an "
                          "HF job cannot read.",
                          f"publish it first (`tunepack registry publish {entry.name} --version {entry.version} --repo "
                          "NS/NAME`, private by default), or run with the local backend.")
    if not remote and not local:
        raise ConfigError(f"model.adapter {entry.name} v{entry.version} has no weights in {folder} (a remote run's "
                          "record).", "run with the HF backend, which reads it from the Hub, or pick a local version.")
    if cfg.model.is_tiny and remote:
        raise ConfigError("A tiny replica with model.adapter runs on the local backend only (the replica lives on "
                          "this machine).", "run it locally, or use the Hub model the replica stands for.")
    return {"adapter": None if remote else str(folder), "hub_repo": hub_repo if remote else None,
            "hub_commit": hub_commit if remote else None, "published": hub_repo}


def _lora_of(entry: AdapterVersion, manifest: dict) -> dict:
    path = Path(entry.path) / "adapter_config.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    lora = manifest["config"].get("lora") or {}
    return {"r": config.get("r", lora.get("r")), "alpha": config.get("lora_alpha", lora.get("alpha")),
            "targets": config.get("target_modules") or lora.get("target_modules")}


def _same_lora(cfg: TrainConfig, lora: dict) -> None:
    """A lora section that asks for another rank than the starting adapter's is refused; the default section
    (none written, or a config read back from a job's record, where every section is set) is not."""
    from ..config.schema import LoraSection

    mine = cfg.lora
    if "lora" not in cfg.model_fields_set or (mine.r, mine.alpha) == (LoraSection().r, LoraSection().alpha):
        return
    if (mine.r, mine.alpha) != (lora["r"], lora["alpha"]):
        raise ConfigError(f"The lora section asks for r {mine.r}, alpha {mine.alpha}, but model.adapter trains the "
                          f"registered adapter further, whose LoRA is r {lora['r']}, alpha {lora['alpha']}.",
                          "remove the lora section (the starting adapter's is kept), or train a new adapter without "
                          "model.adapter.")


def _step(entry: AdapterVersion, manifest: dict) -> dict:
    """One rung of the lineage: which adapter, trained how, from what."""
    step = {"name": entry.name, "version": entry.version, "method": manifest.get("method", "sft"),
            "run_name": manifest.get("run_name"), "steps": (manifest.get("training") or {}).get("steps")}
    environment = (manifest.get("config") or {}).get("environment")
    return {**step, "environment": environment["name"]} if environment else step
