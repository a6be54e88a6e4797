"""The HF Jobs backend, through huggingface_hub's Jobs API.

A job runs one rendered script on the uv image. The script travels inline — xz + base64 in the
command, decoded by ``bash -c`` and run with ``uv run`` (``transport.py``, which also holds the size
limits checked before every submit) — because handing a local path to ``run_uv_job`` uploads it
through a storage bucket and prints to stdout (which is the MCP stream).
The HF token goes in as a job *secret*, never as env; other secrets are read from the environment
by name. Jobs are ephemeral: the training script pushes its outputs to the Hub itself.
"""

from __future__ import annotations

import builtins
import re
import time
from datetime import datetime
from pathlib import Path

from .. import hf_auth, settings
from ..errors import JobError
from .base import Hardware, JobBackend, JobInfo, JobSpec
from .hf_rules import check_env_names, check_flavor, check_labels, check_secret_names, parse_timeout
from .transport import check_limits, inline_command

UV_IMAGE = "ghcr.io/astral-sh/uv:python3.12-bookworm"
UNIT_HOURS = {"hour": 1.0, "minute": 60.0, "second": 3600.0}
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")  # it goes into the API's URL path


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value else None


class HfBackend(JobBackend):
    name = "hf"

    def __init__(self, namespace: str | None = None):
        self.api = hf_auth.api()
        self._namespace = namespace
        self._flavors: builtins.list[str] | None = None

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            try:
                self._namespace = self.api.whoami()["name"]
            except Exception as exc:
                raise hf_auth.http_error(exc, action="Finding the job namespace") from None
        return self._namespace

    def _call(self, action: str, fn, *, job_id: str | None = None):
        try:
            return fn()
        except JobError:
            raise
        except Exception as exc:
            if getattr(exc, "response", None) is None:
                raise
            raise hf_auth.http_error(exc, action=action, namespace=self.namespace, job_id=job_id) from None

    def _info(self, job) -> JobInfo:
        status = job.status
        return JobInfo(id=job.id, backend=self.name, name=(job.labels or {}).get("name", job.id),
                       stage=status.stage if status else "SCHEDULING", message=status.message if status else None,
                       labels={k: v for k, v in (job.labels or {}).items() if k != "name"},
                       created_at=_ts(job.created_at) or time.time(), started_at=_ts(job.started_at),
                       ended_at=_ts(job.finished_at), flavor=job.flavor, url=job.url)

    def submit(self, spec: JobSpec) -> JobInfo:
        script = self._script(spec)
        self._check_rules(spec)
        secrets = self._secrets(spec)
        text = script.read_text(encoding="utf-8")
        command = inline_command(text, spec.args)
        check_limits(command, {**spec.env, **secrets}, script_bytes=len(text.encode("utf-8")))
        job = self._call("Submitting the job", lambda: self.api.run_job(
            image=UV_IMAGE, command=command, env=spec.env or None, secrets=secrets, flavor=spec.flavor or "cpu-basic",
            timeout=spec.timeout_s, name=spec.name, labels=spec.labels or None, namespace=self.namespace,
            volumes=[m.to_volume() for m in spec.volumes] or None))
        return self._info(job)

    def _check_rules(self, spec: JobSpec) -> None:
        """What huggingface_hub and the Hub accept (hf_rules.py), before anything is sent: the flavor against the
        live hardware list (tunepack's table when it cannot be read), the timeout's format, labels, names."""
        from .pricing import hf_flavors

        if self._flavors is None:  # listed once per backend: a sweep's submits do not each ask again
            try:
                self._flavors = [h.name for h in self.hardware()]
            except Exception:  # noqa: BLE001 — unreachable or refused: the submit itself will say why; check offline
                self._flavors = [h.name for h in hf_flavors()]
        check_flavor(spec.flavor or "cpu-basic", self._flavors)
        if spec.timeout_s is not None:
            parse_timeout(spec.timeout_s)
        check_labels(spec.labels)
        check_labels({"name": spec.name})
        check_secret_names(spec.secrets)
        check_env_names(spec.env)

    @staticmethod
    def _script(spec: JobSpec) -> Path:
        if spec.module:
            raise JobError(f"The hf backend runs rendered scripts only; '{spec.module}' is a local tunepack module.",
                           "submit a rendered script (pipeline_render) or run the pipeline with backend 'hf'.")
        assert spec.script, "JobSpec's validator requires a script when there is no module"
        script = Path(spec.script)
        if not script.is_file():
            raise JobError(f"Script '{script}' does not exist.", "render one first (pipeline_render).")
        return script

    @staticmethod
    def _secrets(spec: JobSpec) -> dict[str, str]:
        """The HF token and the named secrets' values (job secrets: environment variables inside the job only)."""
        secrets = {"HF_TOKEN": hf_auth.token()}
        for name in spec.secrets:
            if name == "HF_TOKEN":
                continue
            value = settings.secret(name)
            if not value:
                raise JobError(f"The job needs the secret {name}, which is not set in the environment.",
                               "export it in the shell that starts tunepack (only its name is passed to tools).")
            secrets[name] = value
        leaked = [k for k in spec.env if k.upper() in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") or "TOKEN" in k.upper()]
        if leaked:
            raise JobError(f"Environment variable(s) {', '.join(leaked)} look like secrets.",
                           "pass them in secrets (by name), never in env.")
        return secrets

    @staticmethod
    def _checked(job_id: str) -> str:
        if not JOB_ID.fullmatch(job_id or ""):
            raise JobError(f"'{job_id}' is not an HF Jobs id (letters, digits, '-' and '_' only).",
                           "use an id from jobs_list(backend='hf') or the one the submitting tool returned; local "
                           "job ids start with 'local-' and need backend='local'.")
        return job_id

    def status(self, job_id: str) -> JobInfo:
        job_id = self._checked(job_id)
        return self._info(self._call("Reading the job", lambda: self.api.inspect_job(
            job_id=job_id, namespace=self.namespace), job_id=job_id))

    def logs(self, job_id: str, tail: int | None = None) -> str:
        job_id = self._checked(job_id)
        lines = self._call("Reading the job logs", lambda: list(self.api.fetch_job_logs(
            job_id=job_id, namespace=self.namespace, follow=False, tail=tail)), job_id=job_id)
        return "\n".join(lines)

    def list(self, labels: dict[str, str] | None = None, stage: str | None = None) -> builtins.list[JobInfo]:
        jobs = self._call("Listing jobs", lambda: list(self.api.list_jobs(
            namespace=self.namespace, labels=labels or None, status=stage)))
        infos = [self._info(j) for j in jobs]
        return sorted(infos, key=lambda i: i.created_at, reverse=True)

    def cancel(self, job_id: str) -> JobInfo:
        job_id = self._checked(job_id)
        self._call("Canceling the job", lambda: self.api.cancel_job(job_id=job_id, namespace=self.namespace),
                   job_id=job_id)
        return self.status(job_id)

    def hardware(self) -> builtins.list[Hardware]:
        items = self._call("Listing hardware", lambda: self.api.list_jobs_hardware())
        out = []
        for hw in items:
            per_hour = hw.unit_cost_usd * UNIT_HOURS.get(hw.unit_label, 1.0)
            acc = hw.accelerator
            out.append(Hardware(name=hw.name, description=f"{hw.pretty_name}: {hw.cpu}, {hw.ram}",
                                price_per_hour_usd=round(per_hour, 4),
                                accelerator=f"{acc.quantity}x {acc.model}" if acc else None))
        return out

    def wait(self, job_id, timeout_s=None, poll_s=5.0, on_line=None) -> JobInfo:
        return super().wait(job_id, timeout_s=timeout_s, poll_s=poll_s, on_line=on_line)
