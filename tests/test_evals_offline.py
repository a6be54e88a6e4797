"""Evals run with no network: tiktoken's o200k_base is replaced by an offline stand-in when absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import sys
from mcp_server.evals.kit.offline import cache_path, ensure_token_counting
import os
assert not os.path.exists(cache_path()), cache_path()
print("MODE", ensure_token_counting())
import tiktoken
enc = tiktoken.get_encoding("o200k_base")
print("TOKENS", len(enc.encode("def add(a, b): return a + b")))
from inspect_ai import eval
from inspect_ai.model import ModelOutput
from mcp_server.evals.kit.problems import fenced, load_problems
from mcp_server.evals.kit.sandbox import Sandbox
from mcp_server.evals.kit.tasks import code_task
p = load_problems("humaneval", ids=["HumanEval/2"])
with Sandbox(workers=1) as box:
    log = eval(code_task(p, box), model="mockllm/model", display="none", log_dir=sys.argv[1],
               model_args={"custom_outputs": [ModelOutput.from_content("mockllm/model", fenced(p[0].text + p[0].solution))]})[0]
print("STATUS", log.status, log.results.scores[0].metrics["accuracy"].value)
"""


def test_an_eval_completes_without_the_tiktoken_download(tmp_path):
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), "TUNEPACK_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "logs")], capture_output=True, text=True,
                         env=env, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "MODE offline" in out.stdout
    tokens = int(out.stdout.split("TOKENS ")[1].split()[0])
    assert tokens >= 10  # byte-level stand-in: over-counts, never under-counts
    assert "STATUS success 1.0" in out.stdout


def test_a_cached_encoding_is_kept(tmp_path, monkeypatch):
    from mcp_server.evals.kit import offline

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    Path(offline.cache_path()).write_bytes(b"cached")
    assert offline.ensure_token_counting(try_download=False) == "cached"
