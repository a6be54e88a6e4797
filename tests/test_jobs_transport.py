"""The script reaches an HF job within execve's limits (jobs/transport.py): packed, measured, refused when too big.

Each command is executed the way a container runtime starts a job — execve of ``bash -c <one argument>`` — with
a ``uv`` on PATH that reports what it was handed, so a command that would die at exec fails here too.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from support.common import REPO
from mcp_server.config import load_config, parse_config
from mcp_server.config.eval_section import EvalSection
from mcp_server.errors import JobError
from mcp_server.evals.render import build_spec, render_eval_script
from mcp_server.jobs import JobSpec, get_backend
from mcp_server.jobs.transport import (
    ARG_LIMIT, TOTAL_LIMIT, check_limits, inline_command, measure, script_from_command,
)
from mcp_server.resources import chat_templates
from mcp_server.methods import render_script

MAX_ARG_STRLEN = 131_072
ALL_IDS = [f"HumanEval/{i}" for i in range(164)] + [f"mbpp/{i}" for i in range(11, 511)]


@pytest.fixture
def fake_uv(tmp_path) -> Path:
    """A `uv run FILE ARGS` that prints the sha256 of FILE and the arguments (the job's first step)."""
    uv = tmp_path / "uv"
    uv.write_text('#!/bin/sh\nshift\nsha256sum "$1" | cut -d" " -f1\nshift\nprintf "%s\\n" "$@"\n')
    return uv


def run_in_private_tmp(command: list[str], uv: Path) -> subprocess.CompletedProcess:
    """execve of the command in its own mount namespace with a fresh /tmp (the fixed path /tmp/tunepack_job.py
    must not touch the host's), with the fake uv first on PATH."""
    setup = ('u=$(cat "$0") && mount -t tmpfs tmpfs /tmp && mkdir /tmp/bin && printf "%s\\n" "$u" > /tmp/bin/uv '
             '&& chmod +x /tmp/bin/uv && PATH=/tmp/bin:$PATH exec "$@"')
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup, str(uv), *command]
    try:
        return subprocess.run(wrapper, capture_output=True, text=True, timeout=60, cwd="/")  # a job starts in /
    except OSError as exc:
        pytest.skip(f"cannot make a mount namespace here ({exc})")


def maximal_config(tmp_path: Path):
    """Every option on: traces conversion, windows, long LoRA target list, distributed ZeRO-3 launch, eval of every
    HumanEval and MBPP problem, Hub output, Trackio Space."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n')
    return parse_config({
        "model": {"name": "google/gemma-4-E2B-it", "revision": "a" * 40, "dtype": "bfloat16",
                  "attention": "kernels-community/flash-attn3", "trust_remote_code": True},
        "data": {"path": [str(rows)], "format": "messages", "eval_fraction": 0.05, "allow_truncation": True,
                 "windows": "auto", "window_context": 0.5, "mask_check_rows": 5000},
        "chat_template": "tunepack:gemma4",
        "lora": {"r": 64, "alpha": 128, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                           "up_proj", "down_proj"]},
        "quantization": "4bit",
        "training": {"max_steps": 10000, "max_length": 32768, "packing": True, "eval_steps": 50, "save_steps": 100,
                     "gradient_checkpointing": True, "logging_steps": 5, "weight_decay": 0.1},
        "tracking": {"project": "a-long-project-name-for-every-run-of-the-sweep", "space_id": "alice/trackio-space"},
        "output": {"name": "gemma-4-e2b-every-option", "hub_repo_id": "alice/gemma-4-e2b-every-option"},
        "job": {"backend": "hf", "flavor": "h200x8", "timeout_s": 86400},
        "distributed": {"processes": 8, "strategy": "zero3"},
        "eval": {"tasks": ["humaneval", "mbpp"], "ids": ALL_IDS, "samples": 10, "sandbox": "unsafe-host"},
    })


def test_the_tutorials_script_did_not_fit_one_argument_and_now_starts(tmp_path, fake_uv):
    text = render_script(load_config(REPO / "examples" / "gemma4-pi-traces.yaml"),
                         push={"repo_id": "alice/gemma4-e2b-pi-sft", "private": True})
    old = "echo " + base64.b64encode(text.encode()).decode() + " | base64 -d > /tmp/tunepack_job.py"
    assert len(old) > MAX_ARG_STRLEN  # the encoding tunepack used to send
    with pytest.raises(OSError) as died:
        subprocess.run(["bash", "-c", old], capture_output=True)
    assert died.value.errno == errno.E2BIG

    command = inline_command(text, ["--output-dir", "/tmp/out dir", "$HOME"])
    size = check_limits(command, {}, script_bytes=len(text.encode()))
    assert size.largest_argument_bytes < ARG_LIMIT < MAX_ARG_STRLEN
    assert size.largest_argument_bytes < 0.5 * len(text.encode())  # xz + base64: well under half the script
    done = run_in_private_tmp(command, fake_uv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [hashlib.sha256(text.encode()).hexdigest(), "--output-dir", "/tmp/out dir",
                                        "$HOME"]


def test_the_largest_training_eval_and_preflight_scripts_fit(tmp_path, fake_uv):
    cfg = maximal_config(tmp_path)
    assert len(chat_templates()) >= 7  # every shipped chat template travels in every script
    train = render_script(cfg, push={"repo_id": cfg.output.hub_repo_id, "private": True})
    check = render_script(cfg, run_name="preflight-every-option")  # the preflight job's mask-check script
    models = [{"label": "base", "base": cfg.model.name},
              {"label": "adapter", "base": cfg.model.name, "adapter": cfg.output.hub_repo_id}]
    evaluation, _ = render_eval_script(build_spec(EvalSection(**cfg.eval.model_dump()), models, []),
                                       tracking={"project": "p", "run": "r", "space_id": "alice/trackio-space"})
    assert "'processes': 8" in train and "HumanEval/163" in train and "mbpp/510" in evaluation
    for text in (train, check, evaluation):
        command = inline_command(text, ["--output-dir", "/tmp/eval-output"])
        size = check_limits(command, {"TRACKIO_DIR": "/tmp/t", "HF_TOKEN": "hf_" + "x" * 34},
                            script_bytes=len(text.encode()))
        print(f"script {size.script_bytes:,} B -> largest argument {size.largest_argument_bytes:,} B")
        assert size.largest_argument_bytes < ARG_LIMIT and size.total_bytes < TOTAL_LIMIT
        done = run_in_private_tmp(command, fake_uv)
        assert done.returncode == 0 and done.stdout.split()[0] == hashlib.sha256(text.encode()).hexdigest()


def test_an_argument_over_64_kib_is_refused_with_the_sizes_and_the_fix():
    noise = secrets.token_hex(40_000)  # incompressible: the script's chunks are fine, this argument is not
    command = inline_command("# job\n", ["--note", noise + noise])
    with pytest.raises(JobError) as refused:
        check_limits(command, {}, script_bytes=8)
    assert f"{measure(command, {}).largest_argument_bytes:,} bytes" in refused.value.problem
    assert "65,536" in refused.value.problem and "shorten" in refused.value.fix


def test_a_script_that_packs_over_64_kib_travels_in_chunks(tmp_path, fake_uv):
    noise = secrets.token_hex(60_000)  # incompressible: 120 KB of hex packs to ~80 KB, over one argument's limit
    text = f"# {noise}\n"
    command = inline_command(text, ["--output-dir", "/tmp/o"])
    size = check_limits(command, {}, script_bytes=len(text))
    assert len(command) == 6 and size.largest_argument_bytes < ARG_LIMIT  # two chunks after $0
    assert script_from_command(command) == text
    done = run_in_private_tmp(command, fake_uv)
    assert done.returncode == 0 and done.stdout.split()[0] == hashlib.sha256(text.encode()).hexdigest()


def test_argv_and_environment_over_256_kib_are_refused():
    env = {f"VAR_{i}": "v" * 40_000 for i in range(7)}
    with pytest.raises(JobError, match=r"arguments and environment take [\d,]+ bytes .*262,144"):
        check_limits(["bash", "-c", "true"], env)
    check_limits(["bash", "-c", "true"], dict(list(env.items())[:5]))  # 200 KB: fine


def test_the_hf_backend_refuses_before_anything_is_sent(hub, tmp_path):
    script = tmp_path / "big.py"
    script.write_text(f"# {secrets.token_hex(200_000)}\nprint('never runs')\n")  # packs to ~270 KB: over ARG_MAX/2
    with pytest.raises(JobError, match="tunepack refuses over 262,144 bytes"):
        get_backend("hf").submit(JobSpec(script=str(script), timeout_s=600))
    assert not hub.requests("POST", r"/api/jobs/.*")
