"""Distillation end to end on CPU: a larger Qwen3 replica (same tokenizer, a 64-row wider output layer) is
SFT-trained as the teacher, then distilled into the tiny student off-policy and on-policy, the two runs side by
side (one torch thread each), beside a third off-policy run of 4 steps that holds no rows out (its card must say
so, and its adapter be registered). Each run measures the student's held-out KL to the teacher and NLL of the recorded
turns before and after; the card names the teacher and the mode, each mode has its Trackio group, and a teacher
with another tokenizer is refused before any job starts. About 90 s on two cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.common import REPO, run_cli, short_conversation, write_jsonl

STEPS = 20
MAX_LENGTH = 128


def _config(folder: Path, name: str, **sections) -> Path:
    config = {"quantization": "none", "data": {"path": str(folder / "rows.jsonl"), "eval_fraction": 0.25},
              "lora": {"r": 16, "alpha": 32, "dropout": 0.0},
              "training": {"learning_rate": 0.01, "max_steps": STEPS, "per_device_train_batch_size": 8,
                           "max_length": MAX_LENGTH, "logging_steps": 5, "seed": 1, "warmup_ratio": 0.0},
              "tracking": {"project": "distill-e2e"}, "output": {"name": name}, "eval": {"tasks": []}}
    for key, value in sections.items():
        config[key] = {**config.get(key, {}), **value}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _manifest(result: dict) -> dict:
    return json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("distill")
    write_jsonl(folder / "rows.jsonl", [{"messages": short_conversation(i)} for i in range(48)])
    built = run_cli("tiny-model", "--data", str(folder / "rows.jsonl"), "-o", str(folder / "teacher-base"),
                    "--family", "qwen3", "--size", "large")
    assert built.returncode == 0, built.stderr[-2000:]
    teacher = run_cli("run", str(_config(folder, "distill-teacher", model={"name": str(folder / "teacher-base")})),
                      "--json")
    assert teacher.returncode == 0, teacher.stderr[-3000:]
    teacher_result = json.loads(teacher.stdout)
    procs = {}
    modes = (("off", {"lmbda": 0.0}), ("on", {"lmbda": 1.0, "max_new_tokens": 32}), ("none", {"lmbda": 0.0}))
    for mode, knobs in modes:
        path = _config(folder, f"distill-{mode}", model={"name": "tiny:qwen3"},
                       training={"method": "distill", **({"learning_rate": 0.02} if mode == "on" else {}),
                                 **({"max_steps": 4} if mode == "none" else {})},
                       teacher={"name": teacher_result["adapter_path"]}, distill=knobs,
                       data={"eval_fraction": None} if mode == "none" else {})  # "none": no held-out rows
        procs[mode] = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "run", str(path), "--json"], cwd=REPO,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    out = {"folder": folder, "teacher": teacher_result}
    for mode, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        out[mode] = json.loads(stdout)
    return out


def test_without_held_out_rows_the_adapter_is_registered_and_its_card_says_nothing_was_held_out(runs):
    """The run used to end ERROR at the card (distillation.heldout is {} without eval rows), never registered."""
    listed = json.loads(run_cli("registry", "list", "distill-none", "--json").stdout)
    assert [(v["name"], v["version"], v["run_name"]) for v in listed] == [("distill-none", 1, runs["none"]["run_name"])]
    manifest = _manifest(runs["none"])
    assert manifest["distillation"]["heldout"] == {} and manifest["dataset"]["eval_rows"] == 0
    card = (Path(listed[0]["path"]) / "README.md").read_text()
    assert Path(runs["none"]["card_path"]) == Path(listed[0]["path"]) / "README.md"
    assert "distilled from the teacher" in card and "48 training rows" in card and "evaluation rows" not in card
    assert ("- Held-out evaluation: none. No rows were held out, so the run measured nothing on data it did not train "
            "on") in card
    assert "Held-out (eval rows" not in card and "measured on them" not in card


@pytest.mark.parametrize("mode", ["off", "on"])
def test_the_student_moves_towards_the_teacher_on_held_out_rows(runs, mode):
    heldout = _manifest(runs[mode])["distillation"]["heldout"]
    before, after = heldout["before"], heldout["after"]
    assert after["kl"] <= 0.8 * before["kl"], heldout  # the KL to the teacher falls by at least 20 %
    assert after["nll"] < before["nll"], heldout  # and the recorded turns are likelier than for the undistilled student
    assert before["tokens"] == after["tokens"] > 0


def test_on_policy_batches_are_written_by_the_student_and_off_policy_ones_are_not(runs):
    on, off = (_manifest(runs[m])["distillation"] for m in ("on", "off"))
    assert on["batches"]["on_policy"] == STEPS and on["generated_tokens"] > 0
    assert off["batches"] == {"on_policy": 0, "off_policy": STEPS} and off["generated_tokens"] == 0
    log = Path(runs["on"]["log_path"]).read_text() if runs["on"].get("log_path") else ""
    metrics = [json.loads(line.split(" ", 1)[1]) for line in log.splitlines() if line.startswith("TUNEPACK_METRIC")]
    assert max(m.get("distill/on_policy_batches", 0) for m in metrics) > 0


def test_the_teacher_tokenizer_and_widths_were_checked_before_training(runs):
    vocabulary = _manifest(runs["off"])["distillation"]["vocabulary"]
    assert vocabulary["teacher_width"] == vocabulary["student_width"] + 64  # the teacher's padded output layer
    assert vocabulary["compared"] == vocabulary["student_width"] and vocabulary["sliced"]
    assert vocabulary["rows"] > 0 and vocabulary["tokens"] > 0


def test_the_card_names_the_teacher_and_mode_and_the_registry_the_method(runs):
    card = Path(runs["on"]["card_path"]).read_text()
    assert "distilled from the teacher" in card and runs["teacher"]["adapter_path"] in card
    assert "Mode: on-policy" in card and "knowledge-distillation" in card
    assert "KL to the teacher" in card
    assert runs["on"]["registry_name"] == "distill-on" and runs["teacher"]["registry_name"] == "distill-teacher"
    manifest = _manifest(runs["off"])
    assert manifest["method"] == "distill" and manifest["distillation"]["teacher"]["adapter"]


def test_each_mode_logs_to_its_own_trackio_group(runs):
    from trackio.sqlite_storage import SQLiteStorage

    from mcp_server.tracking import TrackioStore

    groups = {m: (SQLiteStorage.get_run_config("distill-e2e", run=runs[m]["trackio_run"]) or {}).get("_Group")
              for m in ("off", "on")}
    assert groups == {"off": "distill-off-policy", "on": "distill-on-policy"}  # two modes' losses: two groups
    summary = TrackioStore(os.environ["TRACKIO_DIR"]).summary("distill-e2e", runs["off"]["trackio_run"])
    assert summary.last["eval/distill/kl"] < summary.first["eval/distill/kl"]


def test_a_teacher_with_another_tokenizer_is_refused_before_any_job(runs):
    folder = runs["folder"]
    built = run_cli("tiny-model", "--data", str(folder / "rows.jsonl"), "-o", str(folder / "llama-base"),
                    "--family", "llama3", "--size", "large")
    assert built.returncode == 0, built.stderr[-2000:]
    path = _config(folder, "distill-llama", model={"name": "tiny:qwen3"}, training={"method": "distill"},
                   teacher={"name": str(folder / "llama-base")})
    jobs_before = run_cli("jobs", "list", "--json").stdout
    refused = run_cli("run", str(path), "--json")
    assert refused.returncode != 0
    assert "The teacher's vocabulary is not the student's" in refused.stderr
    assert "distil from a teacher of the student's own family" in refused.stderr
    assert run_cli("jobs", "list", "--json").stdout == jobs_before  # nothing was started


def test_the_eval_scores_the_teacher_beside_base_and_adapter(runs):
    done = run_cli("eval", "run", "distill-off", "--tasks", "next-action", "--max-tokens", "16", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert "| Base model | Base + adapter | Teacher |" in result["table"]
    teacher_row = [line for line in result["table"].splitlines() if line.startswith("| action_type |")][0]
    assert teacher_row.count("|") == 7  # metric, n, baseline, base, adapter, teacher
    card = Path(result["card_path"]).read_text()
    assert "| Teacher |" in card
