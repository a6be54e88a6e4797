"""A loopback stand-in for the Hugging Face Hub and Jobs APIs, for tests.

It implements exactly the endpoints tunepack calls, with the response shapes documented in
../shared/reference/hf-apis.md; it never imports tunepack. Every request is recorded (method,
path, query, headers, JSON or ndjson body) so tests can assert request shapes, and any path can be
made to answer an error code.

Shapes not in hf-apis.md:
- ``whoami-v2``'s ``auth.accessToken`` (``role``, ``displayName``, ``fineGrained.scoped[].entity`` /
  ``permissions``): huggingface_hub 2.4 reads ``name``, ``auth.accessToken.role`` and
  ``displayName`` (``_login.py``); the fineGrained block follows the Hub's token payload for
  fine-grained tokens (entity ``{type, name}`` + permission strings such as ``repo.write``,
  ``job.write``).
- ``/api/jobs/hardware``'s fields come from ``JobHardwareInfo.__init__`` in huggingface_hub 2.4.
- ``revision``, ``tree`` and ``resolve`` (used by ``snapshot_download`` when a retried job looks for its
  last checkpoint): the fields huggingface_hub 2.4 reads — ``sha`` and ``siblings[].rfilename``;
  tree entries ``type/path/size/oid``; resolve headers ``X-Repo-Commit``, ``ETag``, ``Content-Length``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

HARDWARE = [
    {"name": "cpu-basic", "prettyName": "CPU Basic", "cpu": "2 vCPU", "ram": "16 GB", "accelerator": None,
     "unitCostMicroUSD": 167, "unitCostUSD": 0.000167, "unitLabel": "minute"},
    {"name": "t4-small", "prettyName": "Nvidia T4 - small", "cpu": "4 vCPU", "ram": "15 GB",
     "accelerator": {"type": "gpu", "model": "T4", "quantity": "1", "vram": "16 GB", "manufacturer": "Nvidia"},
     "unitCostMicroUSD": 6667, "unitCostUSD": 0.006667, "unitLabel": "minute"},
    {"name": "a10g-small", "prettyName": "Nvidia A10G - small", "cpu": "4 vCPU", "ram": "15 GB",
     "accelerator": {"type": "gpu", "model": "A10G", "quantity": "1", "vram": "24 GB", "manufacturer": "Nvidia"},
     "unitCostMicroUSD": 16667, "unitCostUSD": 0.016667, "unitLabel": "minute"},
]


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict
    body: object


@dataclass
class State:
    user: str = "alice"
    token: str = "hf_standin_token_0123456789abcdefghij"
    role: str = "write"
    fine_grained: dict | None = None
    orgs: list = field(default_factory=lambda: [{"name": "team", "type": "org"}])
    jobs: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    repos: dict = field(default_factory=dict)  # repo_id -> {"type", "private", "files": {path: bytes}, "commits": [oid]}
    requests: list = field(default_factory=list)
    fail: dict = field(default_factory=dict)  # (method, path regex) -> status code
    counter: int = 0
    prefix: str = field(default_factory=lambda: secrets.token_hex(3))


def _now_iso(offset: float = 0.0) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 5 + offset))


class Handler(BaseHTTPRequestHandler):
    state: State
    endpoint: str

    def log_message(self, *args):  # keep test output quiet
        pass

    # --- plumbing ------------------------------------------------------------------------

    def _send(self, status: int, payload: object = None, content_type: str = "application/json") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": message})

    def _record(self) -> Request | None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Type", "").startswith("application/x-ndjson"):
            body = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        else:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
        req = Request(self.command, url.path, parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, body)
        self.state.requests.append(req)
        for (method, pattern), status in list(self.state.fail.items()):
            if method == self.command and re.fullmatch(pattern, url.path):
                self._error(status, f"stand-in error {status}")
                return None
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {self.state.token}":
            self._error(401, "Invalid credentials in Authorization header")
            return None
        return req

    def _job_json(self, job: dict) -> dict:
        return job

    # --- routes --------------------------------------------------------------------------

    def do_GET(self):  # noqa: N802
        req = self._record()
        if req is None:
            return
        path, s = req.path, self.state
        if path == "/api/whoami-v2":
            token = {"displayName": "standin", "role": s.role}
            if s.fine_grained is not None:
                token["fineGrained"] = s.fine_grained
            return self._send(200, {"type": "user", "name": s.user, "orgs": s.orgs,
                                    "auth": {"type": "access_token", "accessToken": token}})
        if path == "/api/jobs/hardware":
            return self._send(200, HARDWARE)
        m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)/revision/(.+)", path)
        if m:
            repo = s.repos.get(m.group(2))
            if repo is None or not repo["commits"]:
                return self._error(404, "Repository not found")
            return self._send(200, {"id": m.group(2), "sha": repo["commits"][-1], "private": repo["private"],
                                    "siblings": [{"rfilename": p} for p in sorted(repo["files"])]})
        m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)/tree/([^/]+)", path)
        if m:  # recursive listing (huggingface_hub's list_repo_tree, used by snapshot_download)
            repo = s.repos.get(m.group(2))
            if repo is None:
                return self._error(404, "Repository not found")
            return self._send(200, [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                                    for p, b in sorted(repo["files"].items())])
        m = re.fullmatch(r"/(?:datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            return self._resolve(m.group(1), m.group(3), head=False)
        m = re.fullmatch(r"/api/jobs/([^/]+)/([^/]+)/logs", path)
        if m:
            if m.group(2) not in s.jobs:
                return self._error(404, "Job not found")
            lines = s.logs.get(m.group(2), [])
            tail = int(req.query["tail"][0]) if "tail" in req.query else None
            lines = lines[-tail:] if tail else lines
            events = ["data: " + json.dumps({"timestamp": _now_iso(i / 1000), "data": "===== Job started ====="})
                      for i in range(1)]
            events += ["data: " + json.dumps({"timestamp": _now_iso((i + 1) / 1000), "data": line})
                       for i, line in enumerate(lines)]
            return self._send(200, ("\n\n".join(events) + "\n\n").encode(), "text/event-stream")
        m = re.fullmatch(r"/api/jobs/([^/]+)/([^/]+)", path)
        if m:
            job = s.jobs.get(m.group(2))
            return self._send(200, job) if job else self._error(404, "Job not found")
        m = re.fullmatch(r"/api/jobs/([^/]+)", path)
        if m:
            jobs = [j for j in s.jobs.values() if j["owner"]["name"] == m.group(1)]
            if "stage" in req.query:
                jobs = [j for j in jobs if j["status"]["stage"] in req.query["stage"]]
            for label in req.query.get("label", []):
                key, _, value = label.partition("=")
                jobs = [j for j in jobs if (j.get("labels") or {}).get(key) == value]
            return self._send(200, jobs)
        return self._error(404, f"no route GET {path}")

    def _resolve(self, repo_id: str, file: str, head: bool) -> None:
        repo = self.state.repos.get(repo_id)
        if repo is None or file not in repo["files"]:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound" if repo else "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = repo["files"][file]
        self.send_response(200)
        self.send_header("X-Repo-Commit", repo["commits"][-1])
        self.send_header("ETag", '"' + hashlib.sha1(body).hexdigest() + '"')
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):  # noqa: N802
        req = self._record()
        if req is None:
            return
        m = re.fullmatch(r"/(?:datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", req.path)
        if m:
            return self._resolve(m.group(1), m.group(3), head=True)
        self._error(404, f"no route HEAD {req.path}")

    def do_POST(self):  # noqa: N802
        req = self._record()
        if req is None:
            return
        path, s = req.path, self.state
        if path == "/api/validate-yaml":
            return self._send(200, {"warnings": [], "errors": []})
        if path == "/api/repos/create":
            body = req.body or {}
            repo_id = f"{body.get('organization') or s.user}/{body['name']}"
            repo_type = body.get("type", "model")
            if repo_id in s.repos:
                return self._send(409, {"error": "You already created this repo", "url": f"{self.endpoint}/{repo_id}"})
            private = body.get("visibility") == "private" or bool(body.get("private"))
            s.repos[repo_id] = {"type": repo_type, "private": private, "files": {}, "commits": []}
            prefix = "" if repo_type == "model" else f"{repo_type}s/"
            return self._send(200, {"url": f"{self.endpoint}/{prefix}{repo_id}"})
        m = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)/preupload/([^/]+)", path)
        if m:
            if m.group(2) not in s.repos:
                return self._error(404, "Repository not found")
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in req.body["files"]]
            return self._send(200, {"files": files, "commitOid": None})
        m = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)/commit/([^/]+)", path)
        if m:
            repo = s.repos.get(m.group(2))
            if repo is None:
                return self._error(404, "Repository not found")
            for item in req.body:
                if item["key"] == "file":
                    repo["files"][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            oid = hashlib.sha1(f"{m.group(2)}:{len(repo['commits'])}".encode()).hexdigest()
            repo["commits"].append(oid)
            prefix = "" if m.group(1) == "models" else f"{m.group(1)}/"
            return self._send(200, {"commitUrl": f"{self.endpoint}/{prefix}{m.group(2)}/commit/{oid}",
                                    "commitOid": oid, "pullRequestUrl": None})
        m = re.fullmatch(r"/api/jobs/([^/]+)/([^/]+)/cancel", path)
        if m:
            job = s.jobs.get(m.group(2))
            if job is None:
                return self._error(404, "Job not found")
            job["status"] = {"stage": "CANCELED", "message": None}
            job["finishedAt"] = _now_iso()
            return self._send(200, {})
        m = re.fullmatch(r"/api/jobs/([^/]+)", path)
        if m:
            namespace = m.group(1)
            if namespace not in (s.user, *[o["name"] for o in s.orgs]):
                return self._error(403, f"You don't have job.write permission on {namespace}")
            s.counter += 1
            job_id = f"68{s.prefix}{s.counter:016x}"
            spec = req.body
            job = {"id": job_id, "createdAt": _now_iso(), "dockerImage": spec.get("dockerImage"),
                   "command": spec["command"], "arguments": spec.get("arguments", []),
                   "environment": spec.get("environment", {}),
                   "secrets": {k: "<encrypted>" for k in spec.get("secrets") or {}}, "flavor": spec.get("flavor"),
                   "labels": spec.get("labels"), "status": {"stage": "SCHEDULING", "message": None},
                   "owner": {"id": "6000", "name": namespace, "type": "user"}}
            if "timeoutSeconds" in spec:
                job["timeoutSeconds"] = spec["timeoutSeconds"]
            s.jobs[job_id] = job
            s.logs[job_id] = []
            return self._send(200, job)
        return self._error(404, f"no route POST {path}")


class HubStandIn:
    """Run with ``with HubStandIn() as hub: ...``; ``hub.endpoint`` is the base URL."""

    def __init__(self):
        self.state = State()
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        handler.endpoint = self.endpoint
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "HubStandIn":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # helpers for tests
    def set_stage(self, job_id: str, stage: str, message: str | None = None) -> None:
        job = self.state.jobs[job_id]
        job["status"] = {"stage": stage, "message": message}
        if stage == "RUNNING":
            job["startedAt"] = _now_iso()
        if stage in ("COMPLETED", "ERROR", "CANCELED"):
            job.setdefault("startedAt", _now_iso())
            job["finishedAt"] = _now_iso(1)

    def requests(self, method: str | None = None, path: str | None = None) -> list[Request]:
        return [r for r in self.state.requests
                if (method is None or r.method == method) and (path is None or re.fullmatch(path, r.path))]
