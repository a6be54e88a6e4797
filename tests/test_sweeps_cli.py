"""`tunepack sweep`: plan prints the runs and their cost, errors are one line, a paid sweep needs --yes."""

import json

from support.common import run_cli
from mcp_server.sweeps import list_sweeps
from support.sweeps import hub_base, unique


def test_plan_table_and_json():
    out = run_cli("sweep", "plan", "examples/sweep.yaml", timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("sweep demo-lr-rank of tiny:qwen3 (sft): 4 runs on local, at most 2 at once; canary r02 "
                               "(2 clean steps)")
    assert "| r02 | training.learning_rate=0.003, lora.r=16 | local | 1 |" in out.stdout and "canary |" in out.stdout
    total = next(line for line in lines if line.startswith("total:"))
    assert total.startswith("total: up to $0.00") and total.endswith("within budget")
    assert lines[-1] == "note: each run's expected_s counts its held-out loss passes and the CPU it shares with the 1 " \
        "run(s) beside it"
    data = json.loads(run_cli("sweep", "plan", "examples/sweep.yaml", "--json", timeout=120).stdout)
    assert data["total_runs"] == 4 and data["runs"][0]["changes"] == {"training.learning_rate": 0.003, "lora.r": 8}
    assert (data["model"], data["method"]) == ("tiny:qwen3", "sft")


def test_errors_are_one_line(tmp_path):
    out = run_cli("sweep", "status", "no-such-sweep", timeout=120)
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert "There is no sweep 'no-such-sweep'" in out.stderr and "Fix:" in out.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nbase: ../examples/demo.yaml\ngrid: {training.lr: [0.1]}\n")
    out = run_cli("sweep", "plan", str(bad), timeout=120)
    assert out.returncode == 1 and "did you mean 'training.learning_rate'" in out.stderr


def test_a_paid_sweep_needs_yes(tmp_path, short_data):
    spec = {"name": "paid", "base": hub_base(short_data, unique("cli-paid")), "backend": "hf",
            "flavor": "a10g-small", "timeout_s": 3600, "grid": {"lora.r": [8, 16]}}
    path = tmp_path / "paid.yaml"
    path.write_text(json.dumps(spec))
    before = set(list_sweeps())
    out = run_cli("sweep", "submit", str(path), timeout=120)
    assert out.returncode == 1 and "may cost up to $2.00" in out.stderr and "--yes" in out.stderr
    assert "| r01 | lora.r=8 | a10g-small |" in out.stdout  # the plan it asks you to check
    assert set(list_sweeps()) == before
