"""The rendered script: PEP 723 header, embedded config and mask check, --check-only runs."""

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib

import pytest

from mcp_server.config import parse_config
from mcp_server import methods
from mcp_server.train import render

PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def pep723(script: str) -> dict:
    match = next(m for m in PEP723.finditer(script) if m.group("type") == "script")
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in match.group("content").splitlines(keepends=True))
    return tomllib.loads(content)


def config(tiny_model_dir, short_data, **training):
    return parse_config({
        "model": {"name": str(tiny_model_dir)}, "data": {"path": str(short_data)},
        "training": {"max_length": 128, "max_steps": 4, "logging_steps": 2, "gradient_checkpointing": False,
                     **training},
        "tracking": {"project": "render-tests", "run_name": "render-run"},
    })


def test_pins_are_public_exact_and_match_the_tested_packages():
    pins = render.pins()
    names = {p.split("==")[0] for p in pins}
    assert {"torch", "transformers", "trl", "peft", "datasets", "trackio", "bitsandbytes"} <= names
    for pin in pins:
        name, version = pin.split("==")
        assert "+" not in version
        assert importlib.metadata.version(name).split("+")[0] == version, f"pins.yaml is stale for {name}"


def test_header_body_and_embedded_parts(tiny_model_dir, short_data):
    cfg = config(tiny_model_dir, short_data)
    text = methods.render_script(cfg)
    meta = pep723(text)
    assert meta["requires-python"] == ">=3.11"
    assert meta["dependencies"] == render.pins()
    assert any(d.startswith("bitsandbytes") for d in meta["dependencies"])
    compile(text, "train.py", "exec")
    namespace: dict = {}
    exec(text[text.index("CONFIG = "):text.index("RENDER_INFO = ")], namespace)
    assert namespace["CONFIG"] == cfg.model_dump(mode="json")
    assert "def check_dataset(" in text and "from __future__ import annotations" in text.split("CONFIG =")[0]
    assert text.count("from __future__") == 1
    assert "SFTTrainer" in text and "LoraConfig" in text and "assistant_only_loss" in text


def test_config_hash_is_stable_and_sensitive(tiny_model_dir, short_data):
    a, b = config(tiny_model_dir, short_data), config(tiny_model_dir, short_data, learning_rate=1e-3)
    assert render.config_hash(a) == render.config_hash(config(tiny_model_dir, short_data))
    assert render.config_hash(a) != render.config_hash(b)


def test_write_script_and_check_only_runs(tmp_path, tiny_model_dir, short_data):
    out = methods.write_script(config(tiny_model_dir, short_data), tmp_path / "train.py")
    assert not list(tmp_path.glob(".train-*"))  # no temp file left behind
    done = subprocess.run([sys.executable, str(out), "--check-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    mask = json.loads(next(l for l in done.stdout.splitlines() if l.startswith("TUNEPACK_MASK "))[14:])
    assert mask["rows"] == 32 and mask["problems"] == [] and mask["longest_row_tokens"] <= 128


@pytest.mark.parametrize("overrides, needle", [
    ({"chat_template": "trl:llama3"}, "drops assistant tool calls"),
    ({"chat_template": "trl:nosuchmodel"}, "has no training chat template 'nosuchmodel'"),
])
def test_script_reports_bad_template_as_one_error_line(tmp_path, tiny_model_dir, short_data, overrides, needle):
    cfg = config(tiny_model_dir, short_data).model_copy(update=overrides)
    out = methods.write_script(cfg, tmp_path / "train.py")
    done = subprocess.run([sys.executable, str(out), "--check-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3
    errors = [json.loads(l[15:]) for l in done.stdout.splitlines() if l.startswith("TUNEPACK_ERROR ")]
    assert len(errors) == 1 and needle in errors[0]["problem"] and errors[0]["fix"]
