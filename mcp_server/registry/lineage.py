"""An adapter's lineage as registry versions: the rungs that led to it (base → SFT → distilled → GRPO → ...).

    chain = rungs(entry)             # [(AdapterVersion, manifest), ...]: the ancestors found, oldest first, then entry
    ancestors(manifest)              # the same without the adapter itself

The manifest's ``lineage`` lists each rung by registry name with its version (a registered starting adapter) or
its run name (the run whose verified rollouts were the data); a rung is found by name and version, else by name
and run name. A rung no longer in this registry is left out: the chain says what can still be loaded.
"""

from __future__ import annotations

from .local import AdapterVersion, LocalRegistry, read_manifest


def find_step(step: dict, registry: LocalRegistry | None = None) -> AdapterVersion | None:
    """The registry version one lineage step names, or None when it is not here."""
    registry = registry or LocalRegistry()
    name = step.get("name")
    if not name:
        return None
    versions = registry.list(str(name))
    if step.get("version") is not None:
        return next((v for v in versions if v.version == int(step["version"])), None)
    matches = [v for v in versions if step.get("run_name") and v.run_name == step["run_name"]]
    return matches[-1] if matches else None


def ancestors(manifest: dict, registry: LocalRegistry | None = None) -> list[tuple[AdapterVersion, dict]]:
    """The earlier rungs of an adapter's lineage that this registry holds, oldest first, with their manifests."""
    registry = registry or LocalRegistry()
    found = []
    for step in (manifest.get("lineage") or [])[:-1]:  # the last step is the adapter itself
        entry = find_step(step, registry)
        if entry is not None:
            try:
                found.append((entry, read_manifest(entry.path)))
            except Exception:  # noqa: BLE001 - a version without its manifest (a remote record) is not loadable here
                continue
    return found


def rungs(entry: AdapterVersion, registry: LocalRegistry | None = None) -> list[tuple[AdapterVersion, dict]]:
    """The adapter's ancestors, then the adapter itself."""
    manifest = read_manifest(entry.path)
    return [*ancestors(manifest, registry), (entry, manifest)]
