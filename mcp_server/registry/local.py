"""The local adapter registry: versioned folders that are never overwritten.

Layout: ``<root>/<name>/v<N>/`` holds the adapter (``adapter_config.json`` +
``adapter_model.safetensors``), its tokenizer files, ``tunepack_manifest.json``, the model card
``README.md`` and ``registry.json`` (what this registry knows of the version). A push copies into a
hidden staging folder, then renames it to the next free ``v<N>`` under a file lock: a failed or killed push
leaves no version behind (the next push removes the staging folders of writers that died), two pushes never
get the same number, and a full disk is one DiskFullError.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel

from ..errors import RegistryError, disk_guard
from ..home import home_dir
from ..staging import staging_folder

REQUIRED = ("adapter_config.json", "adapter_model.safetensors")
SKIP = {"checkpoints", "training_args.bin", "README.md", "metrics.jsonl"}
VERSION_DIR = re.compile(r"^v(\d+)$")


class AdapterVersion(BaseModel):
    name: str
    version: int
    path: str
    created_at: float
    base_model: str | None = None
    run_name: str | None = None
    job_id: str | None = None
    files: list[str] = []
    hub_repo: str | None = None
    hub_commit: str | None = None
    withdrawn: str | None = None  # why this version is out of use (output.register_when: beats_base, it lost to the base)

    @property
    def card_path(self) -> str:
        return str(Path(self.path) / "README.md")


class LocalRegistry:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root else home_dir("registry")
        self.root.mkdir(parents=True, exist_ok=True)

    def _versions(self, name: str) -> list[int]:
        folder = self.root / name
        if not folder.is_dir():
            return []
        return sorted(int(m.group(1)) for p in folder.iterdir() if (m := VERSION_DIR.match(p.name)) and p.is_dir())

    def push(self, adapter_dir: str | Path, name: str, *, card: str | Callable[[int], str] | None = None,
             base_model: str | None = None, run_name: str | None = None, job_id: str | None = None) -> AdapterVersion:
        adapter_dir = Path(adapter_dir)
        missing = [f for f in REQUIRED if not (adapter_dir / f).is_file()]
        if missing:
            raise RegistryError(
                f"'{adapter_dir}' is not a saved adapter: {', '.join(missing)} missing.",
                "push the folder the training script saved (it prints it in its TUNEPACK_DONE line).",
            )
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise RegistryError(f"Registry name '{name}' is not allowed.", "use letters, digits, '.', '-' and '_'.")
        folder = self.root / name
        with disk_guard(f"Pushing '{adapter_dir}' to the registry", self.root):
            return self._push(adapter_dir, name, folder, card, base_model=base_model, run_name=run_name, job_id=job_id)

    def _push(self, adapter_dir: Path, name: str, folder: Path, card: str | Callable[[int], str] | None,
              **meta: str | None) -> AdapterVersion:
        staging = _staging(folder)
        try:
            for item in adapter_dir.iterdir():
                if item.name in SKIP or item.name.startswith("."):
                    continue
                (shutil.copytree if item.is_dir() else shutil.copy2)(item, staging / item.name)
            with FileLock(str(folder / ".lock"), timeout=60):
                version = (self._versions(name) or [0])[-1] + 1
                if card is not None:  # a callable gets the version number the card should name
                    text = card(version) if callable(card) else card
                    (staging / "README.md").write_text(text, encoding="utf-8")
                target = folder / f"v{version}"
                if target.exists():  # never overwrite, whatever happened before
                    raise RegistryError(f"Registry version {target} already exists.", "push again; a new number is taken.")
                entry = AdapterVersion(name=name, version=version, path=str(target), created_at=time.time(), **meta,
                                       files=sorted(p.name for p in staging.iterdir()) + ["registry.json"])
                (staging / "registry.json").write_text(entry.model_dump_json(indent=2), encoding="utf-8")
                os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return entry

    def record_remote(self, name: str, *, manifest: dict, hub_repo: str, hub_commit: str,
                      card: Callable[[int], str], run_name: str | None = None,
                      job_id: str | None = None) -> AdapterVersion:
        """A version whose weights live in a Hub repo (a remote job pushed them): card + manifest here."""
        folder = self.root / name
        with disk_guard(f"Recording the Hub adapter {hub_repo} in the registry", self.root):
            staging = _staging(folder)
            try:
                (staging / "tunepack_manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
                with FileLock(str(folder / ".lock"), timeout=60):
                    version = (self._versions(name) or [0])[-1] + 1
                    (staging / "README.md").write_text(card(version), encoding="utf-8")
                    entry = AdapterVersion(name=name, version=version, path=str(folder / f"v{version}"),
                                           created_at=time.time(), base_model=manifest["config"]["model"]["name"],
                                           run_name=run_name, job_id=job_id, hub_repo=hub_repo, hub_commit=hub_commit,
                                           files=["README.md", "registry.json", "tunepack_manifest.json"])
                    (staging / "registry.json").write_text(entry.model_dump_json(indent=2), encoding="utf-8")
                    os.rename(staging, entry.path)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        return entry

    def list(self, name: str | None = None) -> list[AdapterVersion]:
        names = [name] if name else sorted(p.name for p in self.root.iterdir() if p.is_dir())
        out = []
        for n in names:
            for v in self._versions(n):
                meta = self.root / n / f"v{v}" / "registry.json"
                if meta.is_file():
                    out.append(AdapterVersion.model_validate_json(meta.read_text(encoding="utf-8")))
        return out

    def get(self, name: str, version: int | None = None) -> AdapterVersion:
        versions = self.list(name)
        if not versions:
            known = ", ".join(sorted({v.name for v in self.list()})) or "none"
            raise RegistryError(f"The registry has no adapter named '{name}' (names: {known}).",
                                "use `tunepack registry list` to see what is there.")
        if version is None:
            kept = [v for v in versions if not v.withdrawn]
            if not kept:
                raise RegistryError(f"Every version of '{name}' is withdrawn ({versions[-1].withdrawn}).",
                                    f"train a better one, or name a version explicitly (versions: "
                                    f"{', '.join(str(v.version) for v in versions)}).")
            return kept[-1]
        for v in versions:
            if v.version == version:
                return v
        raise RegistryError(f"'{name}' has no version {version} (versions: {', '.join(str(v.version) for v in versions)}).",
                            "pick one of the listed versions.")

    def withdraw(self, entry: AdapterVersion, reason: str) -> AdapterVersion:
        """Mark a version out of use (its files, card and eval stay as evidence; its number is never reused):
        ``get`` without a version skips it, ``list`` shows it with the reason."""
        done = entry.model_copy(update={"withdrawn": reason})
        meta = Path(entry.path) / "registry.json"
        tmp = meta.with_suffix(".json.tmp")
        tmp.write_text(done.model_dump_json(indent=2), encoding="utf-8")
        os.replace(tmp, meta)
        return done

    def update_card(self, entry: AdapterVersion, card: str) -> None:
        """Rewrite a version's model card (evaluation results fill it later); nothing else changes."""
        path = Path(entry.card_path)
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(card, encoding="utf-8")
        os.replace(tmp, path)

    def record_eval(self, entry: AdapterVersion, results: dict) -> str:
        """Keep a version's latest eval results (with the eval code's hashes) as ``eval_results.json``;
        earlier ones move to ``eval_history.jsonl``. Returns the path."""
        path = Path(entry.path) / "eval_results.json"
        with FileLock(str(Path(entry.path).parent / ".lock"), timeout=60):
            earlier = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            if earlier is not None and not earlier.get("partial"):  # a partial record is the same eval, unfinished
                with (Path(entry.path) / "eval_history.jsonl").open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(earlier) + "\n")
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
            os.replace(tmp, path)
        return str(path)

    def eval_results(self, entry: AdapterVersion) -> dict | None:
        path = Path(entry.path) / "eval_results.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _staging(folder: Path) -> Path:
    """A fresh hidden staging folder named after this process; those of writers that died (killed mid-copy) go."""
    return staging_folder(folder, ".staging-")
    return True


def read_manifest(adapter_dir: str | Path) -> dict:
    path = Path(adapter_dir) / "tunepack_manifest.json"
    if not path.is_file():
        raise RegistryError(f"'{adapter_dir}' has no tunepack_manifest.json.",
                            "push folders written by a tunepack training script.")
    return json.loads(path.read_text(encoding="utf-8"))
