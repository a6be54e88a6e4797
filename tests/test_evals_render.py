"""The eval script: PEP 723 pins, the embedded kit pinned by hash, refusal when the kit is edited."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

from mcp_server.evals.render import KIT_DIR, KIT_FILES, eval_pins, render_eval_script, write_eval_script

SPEC = {"tasks": ["humaneval"], "limit": 1, "samples": 1, "temperature": 0.0, "max_tokens": 32,
        "sandbox": "namespaces", "timeout_s": 5, "memory_mb": 256, "mbpp_source": "hub", "backend": "auto",
        "models": [{"label": "base", "base": "/nonexistent/model"}], "train_data": [], "allow_contaminated": False,
        "ngram": 13, "min_overlap": 0.5, "ids": []}


def test_the_kit_is_self_contained():
    """The kit is copied into scripts that run without tunepack: it may import only itself."""
    files = {p.name for p in KIT_DIR.glob("*.py")}
    assert files == set(KIT_FILES)
    for name in KIT_FILES:
        tree = ast.parse((KIT_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not node.module.startswith("mcp_server"), (name, node.module)
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                raise AssertionError(f"{name} reaches outside the kit")


def test_pins_match_the_installed_packages():
    for pin in eval_pins():
        name, version = pin.split("==")
        assert importlib.metadata.version(name).split("+")[0] == version, pin  # torch is the local +cpu build
    assert any(p.startswith("inspect-ai==") for p in eval_pins())
    # vLLM brings its torch, bounded like TRL's GRPO path (unbounded, the transformers pin resolves to vllm 0.1.2)
    assert "vllm>=0.22.0,<=0.31.0" in eval_pins("vllm") and not any(p.startswith("torch==") for p in eval_pins("vllm"))


def test_the_script_embeds_the_spec_and_kit_hashes(tmp_path):
    text, info = render_eval_script(SPEC, tracking={"project": "p", "run": "r"})
    ast.parse(text)
    assert text.startswith("# /// script") and '"inspect-ai==' in text
    for name in KIT_FILES:
        assert info["kit"][name] == hashlib.sha256((KIT_DIR / name).read_bytes()).hexdigest()
    assert info["script_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_an_edited_kit_is_refused(tmp_path):
    script, _ = write_eval_script(SPEC, tmp_path / "eval.py")
    text = script.read_text()
    script.write_text(text.replace("def check_contamination(", "def check_contamination_disabled(", 1))
    out = subprocess.run([sys.executable, str(script), "--output-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 3
    error = json.loads(next(l for l in out.stdout.splitlines() if l.startswith("TUNEPACK_ERROR "))[15:])
    assert "edited after rendering" in error["problem"]
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_bad_model_path_is_one_clear_error(tmp_path):
    script, _ = write_eval_script(SPEC, tmp_path / "eval.py")
    out = subprocess.run([sys.executable, str(script), "--output-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                          "TUNEPACK_OFFLINE": "1"})
    assert out.returncode == 3, out.stdout[-2000:] + out.stderr[-2000:]
    error = json.loads(next(l for l in out.stdout.splitlines() if l.startswith("TUNEPACK_ERROR "))[15:])
    assert "/nonexistent/model" in error["problem"] and "does not exist" in error["problem"] and error["fix"]
    assert not Path(tmp_path / "out" / "results.json").exists()
