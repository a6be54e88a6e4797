"""Copy an adapter folder into the local registry as a new version, with its model card when the folder
holds a tunepack manifest (the run's Trackio summary goes into the card when the run's database is there)."""

from __future__ import annotations

from pathlib import Path

from ..errors import RegistryError
from ..tracking import TrackioStore
from .card import render_card
from .local import AdapterVersion, LocalRegistry, read_manifest


def _summary(manifest: dict):
    tracking = manifest.get("trackio", {})
    try:
        return TrackioStore(tracking.get("dir")).summary(tracking["project"], tracking["run"])
    except Exception:  # a card without the metrics section beats no version: the run's database may be gone
        return None


def push_adapter(adapter_dir: str | Path, name: str, registry: LocalRegistry | None = None) -> AdapterVersion:
    """A new version of ``name`` from ``adapter_dir`` (never overwrites an existing version)."""
    card = None
    if (Path(adapter_dir) / "tunepack_manifest.json").is_file():
        manifest = read_manifest(adapter_dir)
        summary = _summary(manifest)

        def card(version: int) -> str:
            try:
                return render_card(manifest, summary, name=name, version=version)
            except (KeyError, TypeError, AttributeError) as exc:  # a hand-made or cut manifest
                raise RegistryError(
                    f"'{adapter_dir}/tunepack_manifest.json' is not a manifest a tunepack run wrote (no {exc}).",
                    "push the folder a tunepack run saved, or move tunepack_manifest.json away to register the "
                    "adapter without a model card.") from None
    return (registry or LocalRegistry()).push(adapter_dir, name, card=card)
