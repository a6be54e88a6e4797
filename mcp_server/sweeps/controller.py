"""The sweep controller: a local job that runs a submitted sweep to its end.

It submits the canary, watches it, and once the canary has logged its first N steps cleanly submits
the rest, at most ``max_concurrent`` at a time (through the job backend, with labels sweep / sweep_run /
config_hash, each paid job charged against the budget). It stops diverging runs (NaN, or the loss
above its first value for K consecutive logs) with a Trackio alert, resubmits runs lost to the
infrastructure (never a script crash), records every run in the ledger, and writes the state file on
every poll. At the end it writes the report (markdown table + PNG of the curves).

A crash of the controller leaves the last state behind; ``sweep_status`` sees that the controller job
is gone and says so. Started again (``tunepack sweep resume ID``), it re-attaches to the jobs it knows,
adopts a job it submitted but had not yet recorded (found by its labels), and carries on.

Usage: python -m mcp_server.sweeps.controller SWEEP_DIR
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from filelock import FileLock, Timeout

from .. import settings
from ..config import TrainConfig
from ..errors import TunepackError
from ..jobs import JobBackend, estimate, failure_error, flavor_info, get_backend
from ..ledger import Ledger, LedgerError
from ..methods.grpo.rewards import hacking_signs
from .monitor import (
    clean_loss_logs,
    divergence,
    eval_task_metric,
    eval_value,
    failure_kind,
    fire_alert,
    metric_records,
    update_from_log,
)
from .state import ACTIVE, FINAL, FailureKind, RunState, SweepState, read_plan, read_state, write_state

POLL_S = {"local": 1.0, "hf": 15.0}
WORKER = "sweep-controller"


class Controller:
    def __init__(self, folder: str | Path, backend: JobBackend | None = None, poll_s: float | None = None):
        self.folder = Path(folder)
        self.plan = read_plan(self.folder)
        self.state: SweepState = read_state(self.folder)
        self.backend = backend or get_backend(self.state.backend)
        self.poll_s = POLL_S.get(self.state.backend, 5.0) if poll_s is None else poll_s
        self.ledger = Ledger(self.state.ledger)
        self.price = flavor_info(self.state.backend, self.state.flavor).price_per_hour_usd
        self._clean: dict[str, int] = {}  # run id -> clean loss logs seen this session (canary gate)

    # --- one poll -------------------------------------------------------------------------------

    def step(self) -> bool:
        """Refresh the active runs, gate on the canary, launch what may start; True while work remains."""
        s = self.state
        if s.status == "starting":
            s.status = "running"
        for run in s.runs:
            if run.status in ACTIVE:
                try:
                    self._refresh(run)
                except Exception as exc:  # e.g. the Hub answered 5xx or the network dropped: look again next poll
                    s.controller.last_error = f"reading {run.id} ({run.job_id}): {type(exc).__name__}: {exc}"
        if s.status == "running":
            self._launch()
        if s.status == "running" and all(r.status in FINAL for r in s.runs):
            s.status = "done"
        if s.status != "running" and s.report is None:
            self._report()
        s.controller.heartbeat_at = time.time()
        write_state(self.folder, s)
        return s.status == "running"

    def run(self) -> int:
        lock = FileLock(str(self.folder / "controller.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            print(f"[tunepack] another controller runs sweep {self.state.id}; exiting", flush=True)
            return 2
        try:
            s = self.state
            s.controller.pid, s.controller.started_at = os.getpid(), time.time()
            s.controller.job_id = settings.job_id() or s.controller.job_id  # set by the local runner
            s.controller.starts += 1
            s.controller.last_error = None
            print(f"[tunepack] sweep {s.id}: {len(s.runs)} runs on {s.backend}, at most {s.max_concurrent} at once"
                  + (f", canary {s.canary['run']}" if s.canary else ""), flush=True)
            try:
                while self.step():
                    time.sleep(self.poll_s)
            except BaseException as exc:
                s.controller.last_error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                s.message = f"the controller stopped: {s.controller.last_error}"
                write_state(self.folder, s)
                raise
            print(f"[tunepack] sweep {s.id} {s.status}", flush=True)
            return 0
        finally:
            lock.release()

    # --- following one run --------------------------------------------------------------------------

    def _refresh(self, run: RunState) -> None:
        job_id = run.job_id
        assert job_id is not None, "an active run was submitted: it has a job"
        info = self.backend.status(job_id)
        log = self.backend.logs(job_id)
        records = metric_records(log)
        update_from_log(run, records, self.state.metric)
        self._clean[run.id] = clean_loss_logs(records)
        if self.price and info.started_at:
            run.cost_usd = round(run.earlier_attempts_usd + self.price * info.runtime_s / 3600, 4)
        if not info.done:
            run.status = "running" if info.stage == "RUNNING" else "submitted"
            stop = self.state.early_stop
            if stop.get("enabled", True):
                verdict = divergence(records, stop.get("patience", 3))
                hacked = hacking_signs(records)  # GRPO's signs too
                if verdict.kind or hacked:
                    self._stop(run, job_id, verdict.reason or str(hacked), verdict.kind or "hacking")
            return
        run.ended_at = info.ended_at or time.time()
        self._settle()
        if info.stage == "COMPLETED":
            self._completed(run, info, log)
            return
        kind = "canceled" if info.stage == "CANCELED" else failure_kind(info, log)
        error = str(failure_error(info, log))
        if kind == "infra" and run.attempts <= self.state.retries:
            run.status, run.job_id, run.earlier_attempts_usd = "pending", None, run.cost_usd
            run.note = f"attempt {run.attempts} lost to the infrastructure ({info.message}); resubmitting"
            print(f"[tunepack] {run.id}: {run.note}", flush=True)
            return
        self._fail(run, kind, error)

    def _completed(self, run: RunState, info, log: str) -> None:
        try:
            if self.backend.name == "local":
                from ..pipeline import result_of

                result = result_of(info, log).model_dump()
                run.eval = result.pop("eval", None)
            else:
                from ..pipeline.remote import finish_remote

                recorded = finish_remote(self.backend, info.id)
                assert recorded is not None, "a sweep run is a train job that completed: finish_remote records it"
                result = recorded
        except TunepackError as exc:
            self._fail(run, "script", str(exc))
            return
        keep = ("registry_name", "registry_version", "adapter_path", "card_path", "hub_repo", "hub_commit",
                "trackio_project", "trackio_run", "steps", "first_loss", "last_loss", "wall_time_s")
        run.result = {k: result.get(k) for k in keep if result.get(k) is not None}
        metric = self.state.metric
        if eval_task_metric(metric["name"]):
            run.metric_value = eval_value(run.eval or self._registry_eval(run), metric["name"])
        run.status, run.note = "completed", None
        print(f"[tunepack] {run.id} completed: {run.result.get('registry_name')} v{run.result.get('registry_version')}"
              f", {metric['name']} = {run.metric_value}", flush=True)

    def _registry_eval(self, run: RunState) -> dict | None:
        try:
            from ..registry import LocalRegistry

            if run.result is None:
                return None
            registry = LocalRegistry()
            entry = registry.get(run.result["registry_name"], run.result["registry_version"])
            return registry.eval_results(entry)
        except Exception:
            return None

    def _stop(self, run: RunState, job_id: str, reason: str, kind: str) -> None:
        """Stop a run early. The ledger keeps what the settings taught: a NaN loss (deterministic: the same settings
        fail again) is a discard not to repeat, named with the change that lifts it; a loss that rose (it may be the
        start's noise on a short run) or a hacked reward is a discard that may be proposed again."""
        print(f"[tunepack] {run.id}: stopping early — {reason}", flush=True)
        try:
            self.backend.cancel(job_id)
        except TunepackError as exc:
            self.state.controller.last_error = f"canceling {run.id}: {exc}"
        run.status, run.failure, run.error, run.ended_at = "stopped", "diverged", reason, time.time()
        self.state.alerts.append(fire_alert(
            self.state.project, run.run_name, f"sweep {self.state.id}: {run.id} stopped early", reason,
            level="error", step=run.step, run_id=run.id))
        lift = {"nan": "; a lower learning rate (or fp32 / a longer warmup) lifts it"}.get(kind, "")
        self._record(run, "discard", note=f"sweep {self.state.id}: early-stopped ({kind}), {reason}{lift}",
                     do_not_repeat=kind == "nan")
        self._settle()

    def _fail(self, run: RunState, kind: FailureKind, error: str) -> None:
        run.status, run.failure, run.error = "failed", kind, error
        run.ended_at = run.ended_at or time.time()
        print(f"[tunepack] {run.id} failed ({kind}): {error.splitlines()[0][:300]}", flush=True)
        self._record(run, "crash", note=f"sweep {self.state.id}: {kind} failure: {error.splitlines()[0][:300]}")

    def _skip(self, run: RunState, kind: FailureKind, why: str) -> None:
        run.status, run.failure, run.note = "skipped", kind, why
        self._record(run, "crash", note=f"sweep {self.state.id}: not started — {why}")

    # --- launching ------------------------------------------------------------------------------

    def _launch(self) -> None:
        s = self.state
        canary = s.canary
        if canary and not canary.get("passed"):
            crun = s.run(canary["run"])
            if crun.status == "pending":
                self._submit(crun)
                return
            if crun.status in ACTIVE:
                if self._clean.get(crun.id, self._clean_from_curve(crun)) < canary["steps"]:
                    return
            elif crun.status != "completed":
                detail = (crun.error or crun.note or "no error text").strip().splitlines()[0][:300]
                why = f"the canary {crun.id} {crun.status} before it logged {canary['steps']} clean steps: {detail}"
                canary["failed"] = why
                for run in s.runs:
                    if run.status == "pending":
                        self._skip(run, "canary", why)
                s.status = "canary_failed"
                s.message = why + " — fix that before running the rest (the others were not started)."
                s.alerts.append(fire_alert(s.project, crun.run_name, f"sweep {s.id}: canary failed", why,
                                           level="error", step=crun.step, run_id=crun.id))
                return
            canary["passed"], canary["passed_at"] = True, time.time()
            print(f"[tunepack] canary {crun.id} passed {canary['steps']} clean steps; starting the others", flush=True)
        active = sum(1 for r in s.runs if r.status in ACTIVE)
        pending = sorted((r for r in s.runs if r.status == "pending"), key=lambda r: (r.attempts == 0, r.id))
        for run in pending:
            if active >= s.max_concurrent:
                break
            if not self._submit(run):
                break
            active += 1

    @staticmethod
    def _clean_from_curve(run: RunState) -> int:
        losses = [p["loss"] for p in run.curve if "loss" in p]
        return clean_loss_logs([{"loss": v} for v in losses])

    def _submit(self, run: RunState) -> bool:
        """Submit one run (adopting a job this sweep already submitted for it); False stops launching."""
        s = self.state
        cfg = TrainConfig.model_validate(self.plan["configs"][run.id])
        planned = next(p for p in self.plan["plan"]["runs"] if p["id"] == run.id)
        labels = {"sweep": s.id, "sweep_run": run.id, "config_hash": run.config_hash}
        try:
            known = [j for j in self.backend.list(labels={"sweep": s.id, "sweep_run": run.id})
                     if j.id not in run.jobs]
        except TunepackError:
            known = []
        if known:  # the controller died between submitting and recording: adopt that job (and its reservation)
            job = max(known, key=lambda j: j.created_at)
            self._adopt_charge(run, job)
            print(f"[tunepack] {run.id}: adopting job {job.id} submitted before a restart", flush=True)
        else:
            cost = estimate(s.backend, s.flavor, planned["timeout_s"], 1, planned["expected_s"])
            spent = sum(r.worst_case_usd for r in s.runs)
            beyond = self._beyond_approval(run, cost.worst_case_usd)
            if beyond:
                return beyond == "fail"  # a failed retry lets the others launch; "stop" stops launching
            if s.budget_cap_usd is not None and spent + cost.worst_case_usd > s.budget_cap_usd + 1e-9:
                why = (f"the sweep's budget cap ${s.budget_cap_usd:.2f} would be passed (${spent:.2f} charged, "
                       f"this run up to ${cost.worst_case_usd:.2f})")
                for r in s.runs:
                    if r.status == "pending":
                        self._skip(r, "budget", why)
                return False
            self._claim(run)
            from ..approval import Consent
            from ..pipeline import start_pipeline

            try:  # the human approved the whole sweep at sweep_submit; each paid job is still charged
                started = start_pipeline(cfg, backend=self.backend, timeout_s=planned["timeout_s"], flavor=s.flavor,
                                         extra_labels=labels, force=bool(self.plan["spec"].get("force")),
                                         consent=Consent(part_of=s.id, reservation=self._reservation(run)))
            except TunepackError as exc:
                if getattr(exc, "kind", "") == "approval":  # the daily budget refused it
                    for r in s.runs:
                        if r.status == "pending":
                            self._skip(r, "budget", exc.problem)
                    return False
                self._fail(run, "script" if exc.kind in ("config", "data") else "submit", str(exc))
                return True
            if started.job is None:  # the gate wants an approval the sweep's should have covered
                self._fail(run, "submit", started.spend.decision.message)
                return True
            job = started.job
            run.worst_case_usd = round(run.worst_case_usd + started.spend.cost.worst_case_usd, 4)
        run.job_id = job.id
        run.jobs.append(job.id)
        run.attempts += 1
        run.status, run.submitted_at = "submitted", time.time()
        self._record(run, "running", job_id=job.id)
        print(f"[tunepack] submitted {run.id} ({', '.join(f'{k}={v}' for k, v in run.changes.items())}) as "
              f"{job.id}", flush=True)
        return True

    def _reservation(self, run: RunState) -> str:
        return f"sweep-{self.state.id}-{run.id}-{run.attempts + 1}"

    def _adopt_charge(self, run: RunState, job) -> None:
        """The worst case a killed controller reserved for this attempt becomes the adopted job's charge."""
        if self.price:
            from ..approval import Budget

            Budget().rekey(f"pending-{self._reservation(run)}", f"{self.backend.name}/{job.id}")

    def _committed_usd(self) -> float:
        """What the sweep's jobs have cost or may still cost: real costs of ended attempts, worst cases of the
        ones running."""
        worst = {p["id"]: p["worst_case_usd"] for p in self.plan["plan"]["runs"]}
        return sum(r.earlier_attempts_usd + worst.get(r.id, 0.0) if r.status in ACTIVE else r.cost_usd
                   for r in self.state.runs)

    def _beyond_approval(self, run: RunState, attempt_usd: float) -> str | None:
        """None when this attempt fits the worst case the human approved for the sweep; else the run is failed
        (a retry: "fail") or the launching stops (a first attempt: "stop"). A retry is charged within what was
        approved, or not started and asked again."""
        approved = self.state.approved_usd
        committed = self._committed_usd()
        if not self.price or approved <= 0 or committed + attempt_usd <= approved + 1e-3:  # the total is rounded
            return None
        why = (f"the sweep's approved worst case ${approved:.2f} would be passed (${committed:.2f} spent or running, "
               f"this attempt up to ${attempt_usd:.2f}); a new approval is needed: submit this run again as a sweep "
               "of its own with sweep_submit")
        if run.attempts:
            self._fail(run, "budget", f"retry not started: {why}")
            return "fail"
        for r in self.state.runs:
            if r.status == "pending":
                self._skip(r, "budget", why)
        return "stop"

    # --- ledger, budget, report -----------------------------------------------------------------

    def _claim(self, run: RunState) -> None:
        if run.experiment_id is None:
            return
        try:
            if self.ledger.get(run.experiment_id).status == "proposed":
                self.ledger.claim(f"{WORKER}:{self.state.id}", run.experiment_id)
        except LedgerError as exc:
            self.state.controller.last_error = f"ledger claim of {run.id}: {exc}"

    def _record(self, run: RunState, status: str, **fields) -> None:
        if run.experiment_id is None:
            return
        try:
            self._claim(run)
            self.ledger.record(run.experiment_id, status, **fields)
        except LedgerError as exc:
            self.state.controller.last_error = f"ledger record of {run.id}: {exc}"

    def _settle(self) -> None:
        if self.price:
            from ..approval import reconcile

            reconcile(self.backend)

    def _report(self) -> None:
        from .report import write_report

        try:
            self.state.report = write_report(self.folder, self.state)
        except Exception as exc:  # a report failure never loses the sweep's state
            self.state.report = {"error": f"{type(exc).__name__}: {exc}"}


def main(folder: str) -> int:
    return Controller(folder).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
