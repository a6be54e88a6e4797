"""Mask preview of one row for a config: which tokens SFT would train, and any mask problem.

Runs as its own process (the MCP server never imports transformers); prints one JSON object.

Raw agent sessions (data.format traces, or auto over a session folder) are converted first, as a run converts them
(cached), so the row shown is a row training reads.

Usage: python -m mcp_server.pipeline.preview CONFIG [--row N] [--chars 6000]
"""

from __future__ import annotations

import argparse
import json
import sys


def _window(text: str, chars: int) -> str:
    """Cut a long preview around the trained spans (the system prompt alone is rarely the point)."""
    if len(text) <= chars:
        return text
    start = max(0, text.find("⟦") - 400)
    cut = text[start:start + chars]
    return ("… " if start else "") + cut + (" …" if start + chars < len(text) else "") + \
        f"\n[showing characters {start}–{start + len(cut)} of {len(text)}]"


def preview_row(config_path: str, row: int = 0, chars: int = 6000) -> dict:
    from transformers import AutoTokenizer

    from ..config import load_config
    from ..errors import DataError
    from ..resources import chat_templates
    from ..traces.spine import training_config
    from ..train import maskcheck as mc
    from ..train.data import read_local_rows
    from ..train.tiny_model import ensure_tiny_model

    cfg = training_config(load_config(config_path))  # raw sessions: the converted rows a run trains on
    if not cfg.data.path:
        raise DataError("The mask preview reads local data files, and this config uses data.hub_id.",
                        "download a few rows to a .jsonl file and point data.path at it for the preview.")
    rows = [r for path in cfg.data.path for r in read_local_rows(path)]
    if not 0 <= row < len(rows):
        raise DataError(f"Row {row} does not exist: the dataset has {len(rows)} rows.", f"pick a row from 0 to {len(rows) - 1}.")
    model = ensure_tiny_model(cfg) if cfg.model.is_tiny else cfg.model.name
    tokenizer = AutoTokenizer.from_pretrained(model, revision=cfg.model.revision,
                                              trust_remote_code=cfg.model.trust_remote_code)
    fmt = cfg.data.format if cfg.data.format != "auto" else mc.detect_format(rows[0].keys(), cfg.data.messages_column)
    needs_tools = mc.rows_with_tools(rows, fmt, cfg.data.messages_column, cfg.data.tools_column) > 0
    template, label = mc.resolve_chat_template(tokenizer, cfg.chat_template, fmt, cfg.model.name,
                                               needs_tools=needs_tools, packaged=chat_templates())
    messages, tools, n_prompt = mc.conversation(rows[row], fmt, cfg.data.messages_column, cfg.data.tools_column)
    ids, mask, _, _ = mc.tokenize_row(tokenizer, messages, tools, template, n_prompt)
    text = mc.preview(tokenizer, messages, tools, template, n_prompt)
    return {
        "row": row, "chat_template": label, "tokens": len(ids), "trained_tokens": sum(mask),
        "max_length": cfg.training.max_length, "fits_max_length": len(ids) <= cfg.training.max_length,
        "problems": mc.check_row(tokenizer, messages, tools, template, n_prompt),
        "preview": _window(text, chars),
        "legend": "text inside ⟦ ⟧ is trained; everything else is context only",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mask preview of one row.")
    parser.add_argument("config")
    parser.add_argument("--row", type=int, default=0)
    parser.add_argument("--chars", type=int, default=6000)
    args = parser.parse_args(argv)
    from ..errors import TunepackError
    from ..train.maskcheck import MaskCheckError

    try:
        result = preview_row(args.config, args.row, args.chars)
    except TunepackError as exc:
        result = {"error": exc.to_dict()}
    except MaskCheckError as exc:
        result = {"error": {"kind": "data", "problem": exc.problem, "fix": exc.fix}}
    except ImportError as exc:
        result = {"error": {"kind": "data", "problem": f"The mask preview needs {exc.name or 'a package'}, which is "
                            "not installed where it runs.", "fix": "install the training extra: pip install -e "
                            "'.[train]' (or pip install 'tunepack[train]')."}}
    except Exception as exc:  # noqa: BLE001 - a tokenizer or template error: say what it was, not a traceback
        result = {"error": {"kind": "data", "problem": f"The mask preview failed: {type(exc).__name__}: "
                            f"{str(exc)[:300]}", "fix": "check data.path, model.name and chat_template in the "
                            "config (tunepack validate CONFIG); a template error names the message it refused."}}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
