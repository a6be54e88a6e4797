"""Files tunepack ships beside its code: jinja2 templates and Agent Skills folders.

Both live at the repository root (``templates/``, ``skills/``) and are reached through the
``mcp_server/assets`` symlinks, which the wheel build copies as package data, so the same lookup
works from a clone, an editable install and an installed wheel.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

PACKAGE = Path(__file__).resolve().parent
ASSETS = PACKAGE / "assets"


def templates_dir() -> Path:
    return ASSETS / "templates"


def skills_dir() -> Path:
    return ASSETS / "skills"


@lru_cache(maxsize=1)
def jinja_env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, **context: object) -> str:
    return jinja_env().get_template(name).render(**context)


def template_path(name: str) -> Path:
    return templates_dir() / name


def chat_templates() -> dict[str, str]:
    """tunepack's training chat templates (``templates/chat/*.jinja``) by name."""
    folder = templates_dir() / "chat"
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jinja"))}


def embedded_source(*modules: str) -> str:
    """Standard-library-only modules of the package (``"jobs/markers.py"``), as rendered scripts embed them
    verbatim: joined, without their ``from __future__`` lines (the script has its own)."""
    return "\n\n".join("".join(line for line in (PACKAGE / m).read_text(encoding="utf-8").splitlines(keepends=True)
                                if not line.startswith("from __future__")) for m in modules)


# The vllm extra of the TRL the headers pin (trl[vllm]: vLLM versions TRL's GRPO path supports; outside it TRL
# warns and colocate generation may break; tests/test_grpo.py compares it with the installed TRL's metadata). The
# eval job's vLLM backend takes the same bounds: unbounded, a header pinning transformers 5.25 resolves to vllm
# 0.1.2 (bench/resolve_drift.py).
VLLM_FOR_TRL = "vllm>=0.22.0,<=0.31.0"


def training_pins() -> list[str]:
    """The exact packages a rendered training script runs with (mcp_server/train/pins.yaml); eval scripts add
    theirs (mcp_server/evals/pins.yaml)."""
    import yaml

    return list(yaml.safe_load((PACKAGE / "train" / "pins.yaml").read_text(encoding="utf-8")))
