"""Which stock chat template a model uses, as far as the host can tell without downloading the model.

Converting agent sessions happens on the host before the job, and some families need their rows
shaped (Llama 3.x takes one tool call per message; Gemma 4 writes a message's text after its tool
results). The job later checks the real tokenizer's template exactly; here it is enough to know
the family, and the revision where it can be known:
- ``tiny:<family>``: the replica's stock template;
- a local model folder, or a Hub model already in the local Hugging Face cache: its template's
  structural fingerprint against tunepack's and TRL's known stock templates;
- any other Hub id: the family from the name, with the shaping that is safe for all its revisions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .chat_templates import fingerprint, header

NAME_GUESSES = ((re.compile(r"gemma-?4", re.I), "gemma4"),  # the conservative Gemma 4 shaping (all revisions)
                (re.compile(r"llama-?3\.[123]", re.I), "llama3_2"))


def _template_text(folder: Path) -> str | None:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
        return template.get("default") if isinstance(template, dict) else template
    return None


def _cached_folder(repo_id: str, revision: str | None) -> Path | None:
    """The snapshot folder of a Hub model in the local cache, without touching the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for name in ("chat_template.jinja", "tokenizer_config.json"):
        found = try_to_load_from_cache(repo_id, name, revision=revision)
        if isinstance(found, str):
            return Path(found).parent
    return None


def known_stock(template: str) -> str | None:
    """The stock template name whose fingerprint this template has (tunepack's headers, then TRL's)."""
    from ..resources import chat_templates
    from .chat_templates import trl_templates

    print_ = fingerprint(template)
    for text in chat_templates().values():
        fields = header(text)
        if fields.get("fingerprint") == print_:
            return fields["stock"]
    return next((name for name, text in trl_templates().items()
                 if not name.endswith("_training") and fingerprint(text) == print_), None)


def template_for_model(name: str, revision: str | None = None) -> tuple[str | None, str]:
    """(stock template name or None, how it was found) for ``model.name``."""
    if name.startswith("tiny:"):
        from .tiny_model import FAMILIES

        family = FAMILIES.get(name[5:])
        return (family.template if family else None), "the replica's stock template"
    folder = Path(name) if Path(name).is_dir() else _cached_folder(name, revision)
    text = _template_text(folder) if folder else None
    if text:
        stock = known_stock(text)
        return stock, f"the model's template ({'fingerprint' if stock else 'not a known stock template'})"
    for pattern, stock in NAME_GUESSES:
        if pattern.search(name):
            return stock, "the model's name (its tokenizer is not local; the shaping safe for every revision)"
    return None, "no family-specific shaping"
