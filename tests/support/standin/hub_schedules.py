"""The scheduled-jobs routes of the stand-in, as huggingface_hub 2.4 calls them (``hf_api.py``: create, list,
inspect, delete, suspend, resume, update the schedule or the labels, trigger), and the tag routes of repos
(``create_tag`` / ``delete_tag``).

A scheduled job never fires on its own here: a test fires it with ``trigger_scheduled_job`` (``POST …/run``),
which starts a job from the stored spec exactly as ``run_job`` would (the runner executes it when the stand-in
runs jobs) and answers that job's JSON. Every change is kept in ``state.schedule_events``
(``{"id", "event", "at"}``: created, triggered, suspended, resumed, rescheduled, relabelled, deleted).
"""

from __future__ import annotations

import copy
import re
import time

from .jobs_runner import TERMINAL, iso

SCHEDULE = re.compile(r"@(annually|yearly|monthly|weekly|daily|hourly)|(\S+\s+){4}\S+")


class ScheduleRoutes:
    """Handler methods for /api/scheduled-jobs and the repo tag routes (mixed into the request handler, which
    provides ``state``, ``standin``, ``_send``, ``_error``, ``_coded_error`` and ``_new_job``). Called with
    ``state.lock`` held."""

    def _event(self, schedule_id: str, event: str) -> None:
        self.state.schedule_events.append({"id": schedule_id, "event": event, "at": time.time()})

    def _scheduled_view(self, item: dict) -> dict:
        """The JSON ScheduledJobInfo reads: secrets shown by name only, as the Hub shows them."""
        view = copy.deepcopy({k: v for k, v in item.items() if k != "secretValues"})
        if view["jobSpec"].get("secrets"):
            view["jobSpec"]["secrets"] = {k: "<encrypted>" for k in view["jobSpec"]["secrets"]}
        view["status"]["nextJobRunAt"] = None if item["suspend"] else iso(time.time() + 3600)
        return view

    def _scheduled(self, namespace: str, schedule_id: str) -> dict | None:
        item = self.state.schedules.get(schedule_id)
        if item is None or item["owner"]["name"] != namespace:
            self._error(404, "Scheduled job not found")
            return None
        return item

    def _create_schedule(self, req, namespace: str) -> None:
        s, body = self.state, req.body or {}
        if namespace not in (s.user, *[o["name"] for o in s.orgs]):
            return self._error(403, f"You don't have job.write permission on {namespace}")
        schedule = body.get("schedule") or ""
        if not SCHEDULE.fullmatch(schedule.strip()):
            return self._error(400, f"Invalid schedule {schedule!r}: use @hourly, @daily, … or a CRON expression")
        spec = body.get("jobSpec") or {}
        if not spec.get("command") or not (spec.get("dockerImage") or spec.get("spaceId")):
            return self._error(400, "jobSpec needs a command and a dockerImage (or spaceId)")
        s.counter += 1
        schedule_id = f"69{s.prefix}{s.counter:016x}"
        s.schedules[schedule_id] = {
            "id": schedule_id, "createdAt": iso(time.time()), "schedule": schedule,
            "suspend": bool(body.get("suspend", False)), "concurrency": bool(body.get("concurrency", False)),
            "jobSpec": spec, "secretValues": dict(spec.get("secrets") or {}),
            "status": {"lastJob": None, "nextJobRunAt": None},
            "owner": {"id": "6000", "name": namespace, "type": "user"}}
        self._event(schedule_id, "created")
        self._send(200, self._scheduled_view(s.schedules[schedule_id]))

    def _list_schedules(self, req, namespace: str) -> None:
        items = [i for i in self.state.schedules.values() if i["owner"]["name"] == namespace]
        for label in req.query.get("label", []):
            key, _, value = label.partition("=")
            items = [i for i in items if (i["jobSpec"].get("labels") or {}).get(key) == value]
        self._send(200, [self._scheduled_view(i) for i in items])

    def _inspect_schedule(self, req, namespace: str, schedule_id: str) -> None:
        item = self._scheduled(namespace, schedule_id)
        if item is not None:
            self._send(200, self._scheduled_view(item))

    def _delete_schedule(self, req, namespace: str, schedule_id: str) -> None:
        if self._scheduled(namespace, schedule_id) is not None:
            del self.state.schedules[schedule_id]
            self._event(schedule_id, "deleted")
            self._send(200, {})

    def _suspend_schedule(self, req, namespace: str, schedule_id: str, action: str) -> None:
        item = self._scheduled(namespace, schedule_id)
        if item is not None:
            item["suspend"] = action == "suspend"
            self._event(schedule_id, "suspended" if action == "suspend" else "resumed")
            self._send(200, self._scheduled_view(item))

    def _reschedule(self, req, namespace: str, schedule_id: str) -> None:
        item = self._scheduled(namespace, schedule_id)
        if item is None:
            return
        schedule = (req.body or {}).get("schedule") or ""
        if not SCHEDULE.fullmatch(schedule.strip()):
            return self._error(400, f"Invalid schedule {schedule!r}")
        item["schedule"] = schedule
        self._event(schedule_id, "rescheduled")
        self._send(200, self._scheduled_view(item))

    def _relabel_schedule(self, req, namespace: str, schedule_id: str) -> None:
        item = self._scheduled(namespace, schedule_id)
        if item is None:
            return
        labels = dict((req.body or {}).get("labels") or {})
        name = (item["jobSpec"].get("labels") or {}).get("name")
        item["jobSpec"]["labels"] = {**labels, **({"name": name} if name and "name" not in labels else {})}
        self._event(schedule_id, "relabelled")
        self._send(200, self._scheduled_view(item))

    def _trigger_schedule(self, req, namespace: str, schedule_id: str) -> None:
        """One run now, from the stored spec and secrets; 409 while the last run is still going and the schedule
        does not allow concurrent runs (``trigger_scheduled_job``'s documented error)."""
        item = self._scheduled(namespace, schedule_id)
        if item is None:
            return
        last = item["status"]["lastJob"]
        if last and not item["concurrency"]:
            job = self.state.jobs.get(last["id"])
            runner = self.standin.runner
            if job and (job["status"]["stage"] not in TERMINAL or (runner is not None and runner.is_live(last["id"]))):
                return self._error(409, f"Scheduled job {schedule_id} already has a running job ({last['id']}) and "
                                        "concurrency is disabled")
        spec = {**copy.deepcopy(item["jobSpec"]), "secrets": dict(item["secretValues"])}
        job = self._new_job(namespace, spec)
        item["status"]["lastJob"] = {"id": job["id"], "at": job["createdAt"]}
        self._event(schedule_id, "triggered")
        self._send(200, job)

    # --- repo tags -------------------------------------------------------------------------------------------

    def _create_tag(self, req, kind: str, repo_id: str, revision: str) -> None:
        from urllib.parse import unquote

        from .hub_repos import resolve_revision

        repo = self.state.repos.get(repo_id)
        if repo is None or not repo["commits"]:
            return self._coded_error(404, "RepoNotFound", "Repository not found")
        oid = resolve_revision(repo, unquote(revision))
        if oid is None:
            return self._coded_error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}")
        tag = (req.body or {}).get("tag") or ""
        tags = repo.setdefault("tags", {})
        if not isinstance(tags, dict):
            tags = repo["tags"] = {name: repo["commits"][-1] for name in tags}
        if tag in tags:
            return self._error(409, f"Tag {tag} already exists")
        tags[tag] = oid
        self._send(200, {})

    def _delete_tag(self, req, kind: str, repo_id: str, tag: str) -> None:
        from urllib.parse import unquote

        repo = self.state.repos.get(repo_id)
        tags = (repo or {}).get("tags") or {}
        if repo is None:
            return self._coded_error(404, "RepoNotFound", "Repository not found")
        if unquote(tag) not in tags:
            return self._coded_error(404, "RevisionNotFound", f"Invalid rev id: {unquote(tag)}")
        if isinstance(tags, dict):
            del tags[unquote(tag)]
        else:
            repo["tags"] = [t for t in tags if t != unquote(tag)]
        self._send(200, {})
