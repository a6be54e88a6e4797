"""The model card (README.md) written beside every adapter version, from templates/model_card.md.j2.

It is filled from the run manifest the training script wrote and from the Trackio summary, and it
keeps a marked results section that the evaluation step replaces in place.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import yaml

from ..resources import jinja_env
from ..tracking import RunSummary

RESULTS_START, RESULTS_END = "<!-- tunepack:results:start -->", "<!-- tunepack:results:end -->"
NOT_EVALUATED = ("Not evaluated yet. Evaluation (HumanEval, MBPP) fills this table:\n\n"
                 "| Benchmark | Metric | Base model | Base + adapter |\n|---|---|---|---|\n")
METRIC_ORDER = ("loss", "mean_token_accuracy", "entropy", "grad_norm", "learning_rate", "num_tokens",
                "eval_loss", "eval_mean_token_accuracy")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def heldout_evaluation(manifest: dict, first: dict) -> dict:
    """What the run measured on data it did not train on, whichever the method: ``rows`` held out (rows, or prompts
    for GRPO), ``measured`` (what was measured on them; None when nothing was) and ``how`` to hold data out. Without
    held-out data a distillation run records ``distillation.heldout`` as ``{}`` and a GRPO run an empty curve."""
    dataset, distillation, grpo = manifest["dataset"], manifest.get("distillation"), manifest.get("grpo")
    dpo = manifest.get("dpo")
    if dpo:
        found = dpo.get("heldout") or {}
        measured = (f"the preference accuracy and chosen-minus-rejected margin on {found['before']['pairs']} pairs, "
                    "before and after training" if found.get("before") and found.get("after") else None)
        return {"rows": dpo.get("heldout_pairs") or 0, "unit": "pairs", "measured": measured,
                "how": "to hold pairs out (by prompt), set data.eval_fraction (e.g. 0.2)"}
    if grpo:
        curve = grpo.get("curve") or []
        measured = (f"the reward on {curve[0]['n']} of them, {len(curve)} times from step {curve[0]['step']} to step "
                    f"{curve[-1]['step']} (one sample per prompt)" if curve else None)
        return {"rows": manifest["mask_check"].get("heldout_prompts") or 0, "unit": "prompts", "measured": measured,
                "how": "for a held-out reward curve, set data.eval_fraction (e.g. 0.1) or grpo.heldout_path"}
    if distillation:
        found = distillation.get("heldout") or {}
        before, after = found.get("before"), found.get("after")
        measured = (f"the student's KL to the teacher and NLL of the recorded turns on their {before['tokens']} "
                    "trained tokens, before and after training" if before and after else None)
    else:
        measured = "the eval loss (the eval_* rows of the Training table)" if "eval_loss" in first else None
    return {"rows": dataset.get("eval_rows") or 0, "unit": "rows", "measured": measured,
            "how": "to hold rows out, set data.eval_fraction (e.g. 0.1), or data.eval_split for a Hub dataset"}


def render_card(manifest: dict, summary: RunSummary | None, *, name: str, version: int | None = None,
                results_markdown: str = NOT_EVALUATED) -> str:
    config = manifest["config"]
    base = config["model"]["name"]
    data = config["data"]
    first = summary.first if summary else {}
    metric_keys = [k for k in METRIC_ORDER if k in first]
    env = jinja_env()
    env.filters.setdefault("basename", lambda p: Path(str(p)).name)
    return env.get_template("model_card.md.j2").render(
        name=name, version=version, tunepack_version=manifest.get("tunepack_version"),
        base_model=base, base_model_id=base if HUB_ID.match(base) else None,
        base_model_revision=config["model"].get("revision"),
        used_4bit=manifest["quantization"]["used_4bit"], quantization_reason=manifest["quantization"]["reason"],
        config=config, chat_template=manifest.get("chat_template"), speed=manifest.get("speed"),
        dataset_id=data.get("hub_id"),
        data_source=f"Hub dataset `{data['hub_id']}`" if data.get("hub_id") else "local files",
        dataset=manifest["dataset"], mask=manifest["mask_check"], training=manifest["training"],
        device=manifest["device"], trackio=manifest["trackio"], job=manifest.get("job"), libraries=manifest.get("libraries", {}),
        metric_keys=metric_keys, first=first, last=summary.last if summary else {},
        minimum=summary.minimum if summary else {}, maximum=summary.maximum if summary else {}, fmt=_fmt,
        results_markdown=results_markdown.rstrip("\n"), script_sha256=manifest.get("script_sha256"),
        config_hash=manifest.get("config_hash"), git_commit=manifest.get("git_commit"),
        config_yaml=yaml.safe_dump(config, sort_keys=False), distillation=manifest.get("distillation"),
        grpo=manifest.get("grpo"), dpo=manifest.get("dpo"), lineage=manifest.get("lineage"), traces=manifest.get("traces"),
        start=manifest.get("start"), memory=manifest.get("memory_plan"), heldout=heldout_evaluation(manifest, first),
    )


def replace_results(card: str, results_markdown: str) -> str:
    """Swap the marked results section of a card (used by the evaluation step)."""
    start, end = card.index(RESULTS_START) + len(RESULTS_START), card.index(RESULTS_END)
    return card[:start] + "\n" + results_markdown.rstrip("\n") + "\n" + card[end:]


def card_or_short(manifest: dict, summary: RunSummary | None, *, name: str, version: int | None = None) -> str:
    """The model card; when it cannot be rendered (a manifest shape the template does not know), a short card
    that says so and points at the manifest, so a trained adapter is still registered rather than lost."""
    try:
        return render_card(manifest, summary, name=name, version=version)
    except (KeyError, TypeError, ValueError, AttributeError, jinja2.TemplateError) as exc:
        base = ((manifest.get("config") or {}).get("model") or {}).get("name", "unknown")
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
        print(f"[tunepack] warning: the model card did not render ({why}); the adapter is registered with a short "
              "card, and its tunepack_manifest.json holds the run's whole record", flush=True)
        return (f"---\nlibrary_name: peft\n---\n\n# {name}" + (f" v{version}" if version else "") + "\n\n"
                f"A LoRA adapter for `{base}`, trained by tunepack. Its full card could not be rendered ({why}); "
                "`tunepack_manifest.json` in this folder holds the run's record (config, data, mask check, training).\n\n"
                f"## Results\n\n{RESULTS_START}\n{NOT_EVALUATED}{RESULTS_END}\n")

