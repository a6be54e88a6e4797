"""Reading runs from their logs: divergence, the canary's clean steps, failure kinds, metrics, alerts."""

import math
import sqlite3
import time

import pytest

from mcp_server.jobs import JobInfo
from mcp_server.sweeps.monitor import (clean_loss_logs, divergence, eval_value, failure_kind, fire_alert,
                                       metric_records, metric_value)
from support.sweeps import unique


def logs(*losses, key="loss"):
    return [{"step": i + 1, "max_steps": 100, key: v} for i, v in enumerate(losses)]


def test_divergence_nan_at_once_and_loss_above_its_reference_after_warmup_for_k_logs():
    assert divergence(logs(2.0, 1.9, 1.8, 1.7), 3).kind is None
    nan = divergence(logs(2.0, math.nan), 3)
    assert nan.kind == "nan" and "loss became nan at step 2" in nan.reason
    assert "eval_loss became inf" in divergence(logs(2.0, math.inf, key="eval_loss"), 3).reason
    assert divergence(logs(2.0, 2.0, 2.3, 2.4, 1.9, 2.5), 3).kind is None  # dipped back: not consecutive
    rising = divergence(logs(9.0, 2.0, 2.3, 2.4, 2.5), 3)  # step 1 (logged before the first update) is no reference
    assert rising.kind == "rising" and rising.reference == 2.0 and rising.reference_step == 2
    assert "more than 10% above 2 (its value at step 2, after warmup) for 3 consecutive logs (now 2.5 at step 5)" \
        in rising.reason
    assert divergence(logs(2.0, 2.0, 2.1, 2.15, 2.18), 3).kind is None  # within 10 %: noise, not divergence
    warm = [{"step": i + 1, "loss": v, "learning_rate": lr} for i, (v, lr) in
            enumerate([(7.9, 0.0), (8.0, 0.0), (2.0, 1e-3), (1.9, 1e-3), (1.8, 1e-3), (1.7, 1e-3)])]
    assert divergence(warm, 3).kind is None  # the warmup logs at learning rate 0 are not the reference


def test_tracking_summary_flags_by_the_same_rule():
    from mcp_server.tracking.analysis import analyse_series

    _, flags = analyse_series("loss", [(1, 7.9), (2, 8.1), (3, 8.2), (4, 8.3), (5, 8.0)], {1: 0.0, 2: 0.0})
    assert not any("diverging" in f for f in flags)  # 8.1 after warmup is the reference: within 10 %
    _, flags = analyse_series("loss", [(1, 2.0), (2, 2.0), (3, 2.5), (4, 2.6), (5, 2.7)])
    assert any("more than 10% above 2" in f and "diverging" in f for f in flags)


def test_clean_steps_of_the_canary():
    assert clean_loss_logs(logs(2.0, 1.9)) == 2 and clean_loss_logs([]) == 0
    assert clean_loss_logs(logs(2.0, math.nan, 1.5)) == -1


def test_metric_lines_are_read_from_the_log():
    text = "\n".join(["noise", 'TUNEPACK_METRIC {"step": 1, "loss": 2.0, "mean_token_accuracy": 0.1}',
                      'TUNEPACK_METRIC {"step": 2, "loss": NaN}', 'TUNEPACK_METRIC {"train_runtime": 3}',
                      'TUNEPACK_METRIC {"step": 3, "loss": 1.5, "mean_token_accuracy": 0.3}'])
    records = metric_records(text)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert metric_value(records, "loss", "min") == 1.5 and metric_value(records, "loss", "min", "best") == 1.5
    assert metric_value(records, "mean_token_accuracy", "max", "best") == 0.3
    assert metric_value(records, "eval_loss", "min") is None


def test_eval_scores_only_when_scored():
    summary = {"tasks": [{"task": "humaneval", "metric": "pass@1", "scores": {"base": 0.1, "adapter": 0.4},
                          "status": {"base": "scored", "adapter": "scored"}},
                         {"task": "mbpp", "metric": "pass@1", "scores": {"base": 0.1, "adapter": None},
                          "status": {"base": "scored", "adapter": "withheld"}}]}
    assert eval_value(summary, "eval/humaneval/pass@1") == 0.4
    assert eval_value(summary, "eval/mbpp/pass@1") is None and eval_value(summary, "eval/x/pass@1") is None
    assert eval_value({"error": {"problem": "x"}}, "eval/humaneval/pass@1") is None


def info(stage, message=None, code=None):
    return JobInfo(id="j", backend="local", name="n", stage=stage, message=message, exit_code=code,
                   created_at=time.time())


@pytest.mark.parametrize("job, log, kind", [
    (info("ERROR", "killed after its timeout of 600 s", -9), "step 3\n[tunepack] job killed", "infra"),
    (info("ERROR", "the job's runner process disappeared (killed or machine restarted)"), "", "infra"),
    (info("ERROR", "Job timed out"), "===== Job started =====", "infra"),
    (info("DELETED"), "", "infra"),
    (info("ERROR", "exit code 1", 1), "Traceback (most recent call last):\n  RuntimeError: boom", "script"),
    (info("ERROR", "exit code 3", 3), 'TUNEPACK_ERROR {"kind": "data", "problem": "x"}', "script"),
    (info("ERROR", "Job timed out"), "Traceback (most recent call last):\nKeyError", "script"),
    (info("ERROR", "exit code 137", 137), "", "script"),  # killed for memory: retrying would fail again
])
def test_only_infrastructure_failures_are_retryable(job, log, kind):
    assert failure_kind(job, log) == kind


def test_an_alert_lands_in_trackio():
    import os

    project = unique("alerts")
    entry = fire_alert(project, "run-a", "sweep s: r03 stopped early", "loss became nan at step 4", step=4,
                       run_id="r03")
    assert entry["trackio"] is True and entry["run"] == "r03"
    with sqlite3.connect(os.path.join(os.environ["TRACKIO_DIR"], f"{project}.db")) as db:
        rows = db.execute("SELECT run_name, title, level FROM alerts").fetchall()
    assert rows == [("run-a", "sweep s: r03 stopped early", "error")]
