"""The sweep report: a markdown table (best first) and a PNG of the runs' curves, from the state alone."""

import math

from mcp_server.sweeps.report import curve_metrics, ranked, report_markdown, runs_table, write_report
from mcp_server.sweeps.state import RunState, SweepState

PNG_MAGIC = b"\x89PNG"


def state(**extra) -> SweepState:
    def run(rid, status, value, losses, **kw):
        curve = [{"step": i + 1, "loss": v, **({"eval_loss": v + 0.2} if i % 2 else {})} for i, v in enumerate(losses)]
        return RunState(id=rid, changes={"lora.r": int(rid[1:]) * 4}, run_name=f"s-{rid}", config_hash="h",
                        status=status, metric_value=value, curve=curve, step=len(losses) or None, max_steps=4,
                        first_loss=losses[0] if losses else None, last_loss=losses[-1] if losses else None, **kw)

    runs = [run("r01", "completed", 1.9, [2.5, 2.2, 2.0, 1.9], cost_usd=0.12, job_id="j1"),
            run("r02", "completed", 1.4, [2.5, 1.9, 1.6, 1.4], canary=True, job_id="j2",
                result={"registry_name": "sft", "registry_version": 7, "adapter_path": "/reg/sft/v7"}),
            run("r03", "stopped", None, [2.5, 2.9, math.nan], failure="diverged", error="loss became nan"),
            run("r04", "skipped", None, [], failure="canary")]
    return SweepState(id="s-1", name="s", status="done", created_at=0, updated_at=0, backend="local", flavor=None,
                      project="p", ledger="p", metric={"name": "eval_loss", "direction": "min", "reduce": "last"},
                      max_concurrent=2, canary={"run": "r02", "steps": 2, "passed": True}, early_stop={},
                      retries=1, runs=runs,
                      alerts=[{"run": "r03", "title": "sweep s-1: r03 stopped early", "text": "loss became nan"}],
                      **extra)


def test_table_best_first():
    s = state()
    assert ranked(s) == ["r02", "r01"] and ranked(s, "max") == ["r01", "r02"]
    lines = runs_table(s).splitlines()
    assert lines[0].startswith("| rank | run | changes | status | step | first loss | last loss | eval_loss |")
    assert lines[2] == ("| 1 | r02 | lora.r=8 | completed · canary · **best** | 4/4 | 2.5 | 1.4 | 1.4 | 0.00 | j2 |")
    assert lines[3].startswith("| 2 | r01 |") and "| 0.12 | j1 |" in lines[3]
    assert "| – | r03 | lora.r=12 | stopped (diverged) | 3/4 | 2.5 | nan | – |" in lines[4]
    assert lines[5].startswith("| – | r04 | lora.r=16 | skipped (canary) | – |")


def test_report_and_png(tmp_path):
    s = state()
    assert curve_metrics(s) == ["loss", "eval_loss"]
    paths = write_report(tmp_path, s)
    assert open(paths["png_path"], "rb").read(4) == PNG_MAGIC
    text = open(paths["markdown_path"]).read()
    assert text.startswith("# Sweep s-1") and "Canary r02 (2 clean steps): passed" in text
    assert "Best: **r02** (lora.r=8), eval_loss = 1.4, adapter sft v7 at /reg/sft/v7" in text
    assert "- r03: sweep s-1: r03 stopped early — loss became nan" in text and "![curves](curves.png)" in text
    empty = state()
    for r in empty.runs:
        r.curve = []
    (tmp_path / "empty").mkdir()
    assert write_report(tmp_path / "empty", empty)["png_path"] is None
    assert "![curves]" not in report_markdown(empty, png_name=None)
