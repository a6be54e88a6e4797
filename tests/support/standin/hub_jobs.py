"""The Jobs routes of the stand-in: submit, inspect, list, cancel and the Server-Sent-Events logs."""

from __future__ import annotations

import json
import time

from .jobs_runner import TERMINAL, iso


def _synthetic_stamp(index: int) -> float:  # lines a test wrote into state.logs by hand have no timestamp
    return time.time() - 5 + (index + 1) / 1000


class JobRoutes:
    """Handler methods for /api/jobs (mixed into the request handler, which provides ``state``, ``standin``,
    ``_send`` and ``_error``). Callers hold ``state.lock`` except around ``_job_logs``, which streams."""

    def _submit_job(self, req, namespace: str) -> None:
        s = self.state
        if namespace not in (s.user, *[o["name"] for o in s.orgs]):
            return self._error(403, f"You don't have job.write permission on {namespace}")
        self._send(200, self._new_job(namespace, req.body or {}))

    def _new_job(self, namespace: str, spec: dict) -> dict:
        """A job from its spec (a submit, or a run of a scheduled job), handed to the runner; its JSON."""
        s = self.state
        s.counter += 1
        job_id = f"68{s.prefix}{s.counter:016x}"
        job = {"id": job_id, "createdAt": iso(time.time() - 5), "dockerImage": spec.get("dockerImage"),
               "command": spec["command"], "arguments": spec.get("arguments", []),
               "environment": spec.get("environment", {}),
               "secrets": {k: "<encrypted>" for k in spec.get("secrets") or {}}, "flavor": spec.get("flavor"),
               "labels": spec.get("labels"), "status": {"stage": "SCHEDULING", "message": None},
               "owner": {"id": "6000", "name": namespace, "type": "user"}}
        if "timeoutSeconds" in spec:
            job["timeoutSeconds"] = spec["timeoutSeconds"]
        if spec.get("volumes"):
            job["volumes"] = spec["volumes"]
        s.jobs[job_id] = job
        s.logs[job_id] = []
        s.log_times[job_id] = []
        if self.standin.runner is not None:
            self.standin.runner.start(job_id, spec, dict(spec.get("secrets") or {}))
        return job

    def _cancel_job(self, req, namespace: str, job_id: str) -> None:
        s = self.state
        job = s.jobs.get(job_id)
        if job is None:
            return self._error(404, "Job not found")
        if job["status"]["stage"] not in TERMINAL:
            job["status"] = {"stage": "CANCELED", "message": None}
            job["finishedAt"] = iso(time.time())
            s.changed.notify_all()
        runner = self.standin.runner
        if runner is not None and runner.is_live(job_id):
            runner.cancel(job_id)
        self._send(200, {})

    def _inspect_job(self, req, namespace: str, job_id: str) -> None:
        job = self.state.jobs.get(job_id)
        self._send(200, job) if job else self._error(404, "Job not found")

    def _list_jobs(self, req, namespace: str) -> None:
        jobs = [j for j in self.state.jobs.values() if j["owner"]["name"] == namespace]
        if "stage" in req.query:
            jobs = [j for j in jobs if j["status"]["stage"] in req.query["stage"]]
        for label in req.query.get("label", []):
            key, _, value = label.partition("=")
            jobs = [j for j in jobs if (j.get("labels") or {}).get(key) == value]
        self._send(200, jobs)

    # --- logs ------------------------------------------------------------------------------

    def _job_logs(self, req, namespace: str, job_id: str) -> None:
        """SSE as ``_stream_sse_events`` reads it: a ``===== Job started`` event, the history (``tail``: its
        last N lines), then — while the job runs in the runner — new lines as they come and keep-alives,
        until it ends. A job nothing runs (``run_jobs=False``) gets the history and the end of the stream."""
        s, runner = self.state, self.standin.runner
        with s.lock:
            job = s.jobs.get(job_id)
            if job is None:
                return self._error(404, "Job not found")
            tail = int(req.query["tail"][0]) if "tail" in req.query else None
            count = len(s.logs.get(job_id, []))
            cursor = max(0, count - tail) if tail else 0
            live = runner is not None and job_id in runner.runs
            started = {"timestamp": job["createdAt"], "data": f"===== Job started at {job['createdAt']} ====="}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            self._events([started])
            self._stream(job_id, cursor, live)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (a no-follow client past the server's Date)

    def _events(self, events: list[dict]) -> None:
        self.wfile.write(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events))

    def _batch(self, job_id: str, cursor: int) -> tuple[list[dict], int]:
        lines = self.state.logs.get(job_id, [])
        stamps = self.state.log_times.get(job_id, [])
        batch = [{"timestamp": iso(stamps[i] if i < len(stamps) else _synthetic_stamp(i)), "data": lines[i]}
                 for i in range(cursor, len(lines))]
        return batch, max(cursor, len(lines))

    def _stream(self, job_id: str, cursor: int, live: bool) -> None:
        s, runner = self.state, self.standin.runner
        last_write = time.monotonic()
        while True:
            keepalive = self.standin.keepalive_s
            with s.changed:
                batch, cursor = self._batch(job_id, cursor)
                ended = not (live and runner.is_live(job_id))
                if not batch and not ended:
                    s.changed.wait(max(0.05, keepalive - (time.monotonic() - last_write)))
            if batch:
                self._events(batch)
                last_write = time.monotonic()
            elif ended:
                return
            elif time.monotonic() - last_write >= keepalive:
                self.wfile.write(b": keep-alive\n\n")
                last_write = time.monotonic()
