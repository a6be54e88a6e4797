"""Selection: rank the completed runs on the spec's metric or another one (a logged metric or an eval
score), name the best adapter, and write keep / discard / crash to the ledger once every run finished."""

import pytest

from mcp_server.ledger import Ledger
from mcp_server.sweeps import read_state, select_sweep, submit_sweep, sweep_dir
from mcp_server.sweeps.state import updating
from support.sweeps import tiny_base, unique


@pytest.fixture
def sweep(short_data):
    project = unique("select")
    spec = {"name": "sel", "base": tiny_base(short_data, project), "metric": {"name": "eval_loss"},
            "set": {"data.eval_fraction": 0.25}, "grid": {"training.learning_rate": [0.001, 0.003, 0.01, 0.03]}}
    done = submit_sweep(spec, start=False)
    ledger = Ledger(project)
    for run in read_state(sweep_dir(done.sweep_id)).runs:
        ledger.claim("w", run.experiment_id)
    return done.sweep_id, project


def finish(sweep_id, outcomes):
    with updating(sweep_dir(sweep_id)) as state:
        for run in state.runs:
            status, value, score = outcomes[run.id]
            run.status = status
            run.metric_value = value
            run.failure = {"failed": "script", "stopped": "diverged"}.get(status)
            if status == "completed":
                run.result = {"registry_name": "sel", "registry_version": int(run.id[1:]), "adapter_path": f"/x/{run.id}"}
                run.eval = {"tasks": [{"task": "humaneval", "metric": "pass@1", "scores": {"adapter": score},
                                       "status": {"adapter": "scored"}}]}
        state.status = "done" if all(v[0] != "running" for v in outcomes.values()) else "running"


def test_ranks_on_the_spec_metric_and_records_the_ledger(sweep):
    sweep_id, project = sweep
    finish(sweep_id, {"r01": ("completed", 2.1, 0.1), "r02": ("completed", 1.7, 0.3), "r03": ("running", 1.5, None),
                      "r04": ("failed", None, None)})
    early = select_sweep(sweep_id)
    assert early.best.run == "r02" and not early.recorded and "still running" in early.ledger_note
    assert {e.status for e in Ledger(project).list()} == {"running"}
    finish(sweep_id, {"r01": ("completed", 2.1, 0.1), "r02": ("completed", 1.7, 0.3), "r03": ("stopped", None, None),
                      "r04": ("failed", None, None)})
    pick = select_sweep(sweep_id)
    assert [(r.run, r.rank) for r in pick.ranking] == [("r02", 1), ("r01", 2), ("r03", None), ("r04", None)]
    assert pick.best.registry_version == 2 and pick.best.adapter == "/x/r02" and pick.recorded
    assert "registry_publish(name='sel', version=2" in pick.next_step
    assert "| 1 | r02 |" in pick.table and "**best**" in pick.table
    ledger = {e.id: e for e in Ledger(project).list()}
    runs = {r.id: r.experiment_id for r in read_state(sweep_dir(sweep_id)).runs}
    assert (ledger[runs["r02"]].status, ledger[runs["r02"]].metric_value) == ("keep", 1.7)
    assert ledger[runs["r01"]].status == "discard" and not ledger[runs["r01"]].do_not_repeat
    assert ledger[runs["r03"]].status == "discard" and ledger[runs["r03"]].do_not_repeat
    assert ledger[runs["r04"]].status == "crash" and pick.plateau is not None
    assert read_state(sweep_dir(sweep_id)).selection["best"]["run"] == "r02"


def test_ranks_on_an_eval_score_without_touching_the_ledger_metric(sweep):
    sweep_id, project = sweep
    finish(sweep_id, {"r01": ("completed", 2.1, 0.4), "r02": ("completed", 1.7, 0.3), "r03": ("completed", 1.9, 0.2),
                      "r04": ("completed", 2.5, None)})
    select_sweep(sweep_id)  # records eval_loss: the project's metric from now on
    by_pass = select_sweep(sweep_id, metric="eval/humaneval/pass@1")
    assert by_pass.metric["direction"] == "max" and by_pass.best.run == "r01"
    assert [r.run for r in by_pass.ranking if r.rank] == ["r01", "r02", "r03"]
    assert not by_pass.recorded and "ranks on 'eval_loss'" in by_pass.ledger_note
    dry = select_sweep(sweep_id, direction="max", record=False)
    assert dry.best.run == "r04" and dry.ledger_note.startswith("not recorded")


def test_a_gap_within_noise_is_said_with_the_values():
    from mcp_server.sweeps.select import within_noise

    note = within_noise(["r01", "r02"], {"r01": 1.2001, "r02": 1.2005}, "eval_loss")
    assert note.startswith("r01 and r02 are within noise on eval_loss (1.2 vs 1.2: 0.03% apart, under 1%)")
    assert within_noise(["r01", "r02"], {"r01": 1.0, "r02": 1.2}, "eval_loss") is None
    assert within_noise(["r01"], {"r01": 1.0}, "eval_loss") is None
