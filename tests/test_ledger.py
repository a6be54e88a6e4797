"""The experiment ledger: the propose → claim → record rules, atomic claims across processes, the plateau
rule, TSV and markdown exports, and the `tunepack ledger` CLI."""

import multiprocessing
import subprocess
import sys

import pytest

from support.common import REPO, run_cli

from mcp_server.ledger import Ledger, LedgerError, config_hash_of, direction_for, export_tsv, report_markdown


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger("study", path=tmp_path / "ledger.db")


def _finish(ledger: Ledger, status: str, value: float | None = None, variable: str = "lr", parent=None, **kw):
    e = ledger.propose(f"try {variable}={value}", variable, f"{variable}-{len(ledger.list())}", parent=parent)
    ledger.claim("w")
    return ledger.record(e.id, status, metric_value=value, metric_name="eval_loss" if value is not None else None,
                         **kw)


def test_the_loop_and_its_rules(ledger):
    base = ledger.propose("baseline", "baseline", "demo", expected="loss below 2")
    assert (base.status, base.parent, base.value) == ("proposed", None, "demo")
    with pytest.raises(LedgerError, match="still proposed"):
        ledger.record(base.id, "keep", metric_value=1.0, metric_name="eval_loss")
    assert ledger.claim("w1").id == base.id and ledger.claim("w2") is None
    ledger.record(base.id, "running", job_id="job-1")
    with pytest.raises(LedgerError, match="needs its metric"):
        ledger.record(base.id, "keep")
    kept = ledger.record(base.id, "keep", metric_value=2.0, metric_name="eval_loss", note="40 steps")
    assert (kept.status, kept.job_id, kept.metric_value, kept.do_not_repeat) == ("keep", "job-1", 2.0, False)

    lr = ledger.propose("2x lr", "training.learning_rate", 0.0004, parent=base.id)
    assert lr.value == "0.0004" and lr.config_hash == config_hash_of(parent_hash=base.config_hash,
                                                                     variable="training.learning_rate", value="0.0004")
    with pytest.raises(LedgerError, match="repeats experiment #2"):
        ledger.propose("again", "training.learning_rate", 0.0004, parent=base.id)
    with pytest.raises(LedgerError, match="exactly one variable"):
        ledger.propose("two at once", "training.learning_rate, lora.r", "x")
    with pytest.raises(LedgerError, match="no experiment #99"):
        ledger.propose("orphan", "lora.r", 8, parent=99)
    with pytest.raises(LedgerError, match="is running by w3, not proposed"):
        ledger.claim("w3", lr.id) and ledger.claim("w4", lr.id)
    with pytest.raises(LedgerError, match="ranks experiments on 'eval_loss'"):
        ledger.record(lr.id, "discard", metric_value=0.3, metric_name="accuracy")
    dropped = ledger.record(lr.id, "discard", metric_value=2.4)  # the project's metric name is implied
    assert dropped.do_not_repeat and dropped.metric_name == "eval_loss"
    assert [e.id for e in ledger.blocked(variable="training.learning_rate", value=0.0004)] == [lr.id]
    with pytest.raises(LedgerError, match="do-not-repeat"):
        ledger.propose("again", "training.learning_rate", 0.0004, parent=base.id)

    crash = ledger.propose("rank 64", "lora.r", 64, parent=base.id)
    ledger.claim("w5")
    ledger.record(crash.id, "crash", note="OOM")
    retry = ledger.propose("rank 64 after the OOM fix", "lora.r", 64, parent=base.id)  # a crash may be retried
    assert retry.id != crash.id
    # the reviewer re-classifies; notes accumulate and the finish order stays
    again = ledger.record(base.id, "discard", note="reviewer: metric came from the train split")
    assert again.note == "40 steps; reviewer: metric came from the train split" and again.do_not_repeat
    assert again.finished_at == kept.finished_at
    assert ledger.counts() == {"proposed": 1, "running": 0, "keep": 0, "discard": 2, "crash": 1}
    assert [e.id for e in ledger.list(status="discard")] == [base.id, lr.id]
    assert Ledger("other", path=ledger.path).list() == [] and "study" in Ledger.projects(ledger.path)


def _claim_all(path: str, worker: str, start, out) -> None:
    ledger = Ledger("race", path=path)
    start.wait()
    got = []
    while (e := ledger.claim(worker)) is not None:
        got.append(e.id)
    out.put((worker, got))


def test_concurrent_claims_take_each_experiment_once(tmp_path):
    path = str(tmp_path / "race.db")
    ledger = Ledger("race", path=path)
    ids = [ledger.propose(f"h{i}", "lora.r", i).id for i in range(5)]
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(path, f"w{i}", start, out)) for i in range(8)]
    for p in procs:
        p.start()
    start.set()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    claimed = [i for got in results.values() for i in got]
    assert sorted(claimed) == ids, results  # every experiment exactly once
    workers = {e.id: e.worker for e in ledger.list()}
    assert all(workers[i] == w for w, got in results.items() for i in got)
    assert all(e.status == "running" for e in ledger.list())


def test_plateau_rule(ledger):
    assert direction_for("eval_loss") == "min" and direction_for("eval/humaneval/pass@1") == "max"
    assert not ledger.plateau(k=3).should_stop  # nothing finished yet
    best = _finish(ledger, "keep", 2.0)
    _finish(ledger, "discard", 2.1, parent=best.id)
    _finish(ledger, "crash", parent=best.id)
    verdict = ledger.plateau(k=3)
    assert not verdict.should_stop and verdict.since_best == 2 and verdict.best_id == best.id
    better = _finish(ledger, "keep", 1.9, parent=best.id)
    assert ledger.best().id == better.id and ledger.plateau(k=3).since_best == 0
    for _ in range(3):
        _finish(ledger, "discard", 1.95, parent=better.id)
    verdict = ledger.plateau(k=3)
    assert verdict.should_stop and f"No improvement over #{better.id}" in verdict.reason
    assert not ledger.plateau(k=4).should_stop
    assert ledger.plateau(k=3, min_delta=0.15).best_id == best.id  # 1.9 is not 0.15 better than 2.0
    assert ledger.plateau(k=3, direction="max").best_id == best.id + 1  # the 2.1 discard, when higher is better


def test_plateau_without_any_metric_says_so(ledger):
    for _ in range(2):
        _finish(ledger, "crash")
    verdict = ledger.plateau(k=2)
    assert verdict.should_stop and "none has a metric" in verdict.reason


def test_exports(ledger):
    base = _finish(ledger, "keep", 2.0, job_id="job-1", note="tab\tinside")
    _finish(ledger, "discard", 2.5, parent=base.id)
    ledger.propose("pending | pipe", "lora.alpha", 64, parent=base.id)
    tsv = export_tsv(ledger).splitlines()
    header = tsv[0].split("\t")
    assert header[:4] == ["id", "status", "parent", "variable"] and len(tsv) == 4
    rows = [dict(zip(header, line.split("\t"))) for line in tsv[1:]]
    assert all(len(line.split("\t")) == len(header) for line in tsv)
    assert rows[0]["metric_value"] == "2" and rows[0]["job_id"] == "job-1" and rows[0]["note"] == "tab inside"
    assert rows[1]["do_not_repeat"] == "yes" and rows[2]["status"] == "proposed"
    md = report_markdown(ledger, k=1)
    assert md.startswith("# Experiments: study") and "3 experiments — 1 proposed, 1 keep, 1 discard" in md
    assert f"| {base.id} ★ | keep |" in md and "pending \\| pipe" in md
    assert "STOP — No improvement" in md and "## Do not repeat" in md


def test_cli(tmp_path):
    def ledger(*args):
        done = run_cli("ledger", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    p = ("-p", "cli-study")
    ledger("propose", *p, "--hypothesis", "baseline", "--variable", "baseline", "--value", "demo")
    assert "running" in ledger("claim", *p, "--worker", "w1")
    out = ledger("record", *p, "1", "keep", "--metric", "eval/humaneval/pass@1=0.4", "--job", "j1")
    assert "keep" in out and "Best is #1" in out
    ledger("propose", *p, "--hypothesis", "more epochs", "--variable", "training.num_train_epochs", "--value", "3",
           "--parent", "1")
    assert "#2" in ledger("claim", *p, "2", "--worker", "w2")
    ledger("record", *p, "2", "discard", "--metric", "eval/humaneval/pass@1=0.35")
    assert "should_stop: true" in ledger("plateau", *p, "--k", "1")
    assert '"id": 1' in ledger("best", *p, "--json")
    assert "discard" in ledger("list", *p, "--status", "discard")
    ledger("export", *p, "--format", "tsv", "-o", str(tmp_path / "r.tsv"))
    assert (tmp_path / "r.tsv").read_text().count("\n") == 3
    assert "| 1 ★ | keep |" in ledger("export", *p)
    assert "cli-study" in ledger("projects")
    done = run_cli("ledger", "propose", *p, "--hypothesis", "again", "--variable", "training.num_train_epochs",
                   "--value", "3", "--parent", "1")
    assert done.returncode == 1 and done.stderr.startswith("tunepack: error: This repeats experiment #2")
    done = run_cli("ledger", "record", *p, "1", "keep", "--metric", "oops")
    assert done.returncode == 1 and "NAME=NUMBER" in done.stderr


def test_module_imports_stay_light():
    code = "import sys, mcp_server.ledger, mcp_server.research, mcp_server.harness; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
