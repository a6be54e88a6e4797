"""The evaluated model is the trained one: base model, revision and chat template as the run recorded them.

    check_model({"label": "adapter", "base": B, "adapter": DIR}, expected)   # raises KitError

``expected`` comes from the run's manifest: {"base", "revision", "template_sha256", "teacher", "start"}.
An adapter whose adapter_config.json names another base or revision, or whose folder carries another
chat template, is refused before any sample: scores of other weights, or of the same weights prompted another
way, are not this run's scores. Without ``expected`` (an adapter from outside the registry) nothing
is compared. The reference models scored beside them (a distilled run's "teacher", a GRPO run's
"start" adapter) must be the very ones the run recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import KitError

FIX = ("evaluate the registry version the run produced (registry_list), unchanged; to score other weights, "
       "register them as a run of their own.")


def _same_model(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return a == b
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    if pa.is_dir() and pb.is_dir():
        return pa.resolve() == pb.resolve()
    return a.rstrip("/") == b.rstrip("/")


def _adapter_config(folder: str) -> dict:
    path = Path(folder) / "adapter_config.json"
    if not path.is_file():
        raise KitError(f"The adapter folder {folder} has no adapter_config.json.", FIX)
    return json.loads(path.read_text(encoding="utf-8"))


def _template_sha(folder: str) -> str | None:
    from transformers import AutoTokenizer

    from .generate import template_sha256

    template = AutoTokenizer.from_pretrained(folder).chat_template
    return template_sha256(template if isinstance(template, str) else None)


def _check_teacher(model: dict, recorded: dict) -> None:
    if not recorded or not _same_model(model["base"], recorded.get("base")) or \
            model.get("adapter") != recorded.get("adapter"):
        raise KitError(f"The teacher model {model['base']} (adapter {model.get('adapter')}) is not the teacher the "
                       f"run distilled from ({recorded.get('base')}, adapter {recorded.get('adapter')}).", FIX)


def _is_start(model: dict, recorded: dict) -> bool:
    """The recorded starting adapter: its folder, or its Hub repo at the recorded commit (downloaded or not)."""
    adapter = model.get("adapter")
    if not recorded or not adapter or not _same_model(model["base"], recorded.get("base")):
        return False
    repo = model.get("adapter_repo") or (adapter if adapter == recorded.get("hub_repo") else None)
    if repo:
        return repo == recorded.get("hub_repo") and model.get("adapter_revision") == recorded.get("hub_commit")
    return _same_model(adapter, recorded.get("adapter"))


def _check_start(model: dict, recorded: dict) -> None:
    if not _is_start(model, recorded):
        where = recorded.get("adapter") or f"{recorded.get('hub_repo')}@{recorded.get('hub_commit')}"
        given = model.get("adapter_repo") or model.get("adapter")
        began = f"({recorded.get('base')}, adapter {where})" if recorded else "(it recorded none)"
        raise KitError(f"The start model {model['base']} (adapter {given}) is not the adapter the GRPO run started "
                       f"from {began}.", FIX)


def check_model(model: dict, expected: dict | None) -> None:
    if not expected:
        return
    label = model["label"]
    if label in ("teacher", "start"):  # a reference score, never the adapter's: it must be the one the run recorded
        (_check_teacher if label == "teacher" else _check_start)(model, expected.get(label) or {})
        return
    if not _same_model(model["base"], expected.get("base")):
        raise KitError(f"The {label} model's base is {model['base']}, but the run trained on {expected.get('base')}.",
                       FIX)
    adapter = model.get("adapter")
    if not adapter:
        return
    config = _adapter_config(adapter)
    if not _same_model(config.get("base_model_name_or_path"), expected.get("base")):
        raise KitError(f"The adapter in {adapter} was trained on {config.get('base_model_name_or_path')}, not on "
                       f"the run's base {expected.get('base')}.", FIX)
    if expected.get("revision") and config.get("revision") not in (None, expected["revision"]):
        raise KitError(f"The adapter in {adapter} names base revision {config.get('revision')}, the run "
                       f"{expected['revision']}.", FIX)
    want = expected.get("template_sha256")
    if want and _template_sha(adapter) != want:
        raise KitError(f"The chat template in {adapter} is not the one the run trained with (its sha256 differs "
                       "from the manifest's).", FIX)
