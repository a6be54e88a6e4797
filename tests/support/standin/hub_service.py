"""A loopback stand-in for the Hugging Face Hub and Jobs APIs, for tests.

It implements exactly the endpoints tunepack calls, with the response shapes documented in
../shared/reference/hf-apis.md; it never imports tunepack (it models the remote service, not our client).
Every request is recorded (method, path, query, headers, JSON or ndjson body) so tests can assert request
shapes, and any path can be made to answer an error code. ``HubStandIn()`` (``run_jobs=True``) EXECUTES the
jobs it is given (``jobs_runner.py``, ``job_init.py``, ``uv_shim.py``); ``HubStandIn(run_jobs=False)`` only
records them: they stay SCHEDULING (a queue with no free machine) and tests drive them with ``set_stage`` and
``state.logs``. The Hub side stores one snapshot per commit and serves any revision (``hub_repos.py``).

For tests: ``hub.endpoint``, ``hub.root`` (the stand-in's folder: buckets, materialised volumes, per-job
folders; removed on exit), ``hub.requests(method, path_regex)``, ``hub.set_stage(job_id, stage, message)``,
``hub.wait_job(job_id, timeout)`` → the final job JSON, ``hub.job_log(job_id)`` → its lines,
``hub.kill_job(job_id)`` (its machine "dies"), ``hub.keepalive_s``; ``hub.state``: ``jobs``, ``logs`` /
``log_times``, ``installs`` ``[{"job", "installed", "packages"}]`` (the uv shim; filled when the job ends),
``mounts`` ``[{"job", "repo", "revision": commit oid, "files": N}]``, ``downloads`` (``Counter`` of GETs of file
bytes keyed ``(repo_id, path)``), ``buckets`` ``{bucket_id: {"private", "folder"}}``, ``repos``, ``fail``.
Leaving the ``with`` block kills every job still running and waits for it.

What a job sees (``job_init.py``): its own mount namespace; the host's top-level folders as a private
writable layer (overlayfs; writes never reach the host), fresh ``/tmp`` and ``/root``, the host's /proc, /dev,
/sys; the test Python, its prefixes and the repo at their paths; ``/.standin/bin`` (``uv`` = ``uv_shim.py``,
``python``/``python3`` = the test Python) and ``/.standin/job`` (where the shim reports); its volumes; a seccomp
filter (no ``unshare``/``setns``/``clone`` with CLONE_NEW*, ``clone3`` → ENOSYS). It needs root, or unprivileged
user namespaces (then job_init maps the user to root in one first).

Shapes not in hf-apis.md, and the client code (huggingface_hub 2.4) they follow:
- ``whoami-v2``'s ``auth.accessToken`` (``role``, ``displayName``, ``fineGrained.scoped[].entity`` /
  ``permissions``): huggingface_hub reads ``name``, ``auth.accessToken.role`` and ``displayName`` (``_login.py``);
  the fineGrained block follows the Hub's token payload (entity ``{type, name}`` + permissions such as
  ``repo.write``, ``job.write``).
- ``/api/jobs/hardware``'s fields come from ``JobHardwareInfo.__init__``.
- Repos (``hub_repos.py``): ``/api/{models,datasets,spaces}/{repo}[/revision/{rev}]`` → ``id, sha, private,
  lastModified, siblings[].rfilename`` (+ ``size``/``blobId`` with ``blobs=true``; ``model_info``/``dataset_info``);
  a revision is ``main``, a commit oid or a tag, else 404 ``X-Error-Code: RevisionNotFound`` (missing repo:
  ``RepoNotFound``). ``GET …/tree/{rev}[/{path}]`` (``_iter_repo_tree_pages``: ``recursive`` / ``expand`` sent as
  ``true``/``false``, rev and path percent-quoted with ``safe=""``) → one page (no ``Link`` header) of
  ``{"type": "file", path, size, oid}`` / ``{"type": "directory", path, oid}`` entries, folders first, directories
  included when recursive; ``expand=true`` adds ``lastCommit {id, title, date}`` (``RepoFile.__init__``), the last
  commit up to that revision that changed the entry; a path that is no folder at that revision is 404
  ``EntryNotFound`` (``HfFileSystem.ls`` then lists the parent). ``POST …/paths-info/{rev}`` (``get_paths_info``:
  form-encoded ``paths`` repeated + ``expand``) → the same entries for the paths that exist. Resolve
  (``/{repo}``, ``/datasets/{repo}``, ``/spaces/{repo}`` ``/resolve/{rev}/{path}``, HEAD and GET) answers that
  revision's bytes with ``X-Repo-Commit`` = its commit, ``ETag`` = the git blob id, ``Content-Length``; every GET
  counts in ``state.downloads``. Commits (``_prepare_commit_payload`` in ``_commit_api.py``): ``header``,
  ``file`` (inline base64), ``deletedFile``, ``deletedFolder`` ({"path"}; deleting a missing path is a no-op);
  ``lfsFile`` answers 400 since preupload always says ``regular``; only ``main`` takes commits (else 404
  ``RevisionNotFound``). Commit oids are ``sha1(f"{repo}:{n}")``.
- Buckets (``create_bucket`` / ``bucket_info``): ``POST /api/buckets/{ns}/{name}`` (``ns`` = ``me`` means the user;
  body ``{"visibility"}``, public by default) → 200 ``{"url": "{endpoint}/buckets/{ns}/{name}", "id"}`` (``BucketUrl``
  parses the url), 409 ``{"error", "url"}`` if it exists (``exist_ok=True`` still reads ``url``), 403 for a
  foreign namespace; ``GET /api/buckets/{ns}/{name}`` → ``{id, private, createdAt, size, totalFiles}``
  (``BucketInfo.__init__``), 404 with ``X-Error-Code: RepoNotFound`` (what
  ``hf_raise_for_status`` maps to ``BucketNotFoundError`` on a bucket URL).
- Jobs (``hub_jobs.py``, ``jobs_runner.py``; ``run_job`` / ``_create_job_spec`` in ``_jobs_api.py``): the job JSON
  echoes ``volumes`` (``Volume.to_dict`` shape, read back by ``JobInfo``); ``dockerImage`` is recorded but the
  job runs on this machine's own userland (its Python is the test environment's; ``python``/``python3`` and
  ``uv`` on PATH are the stand-in's, in ``/.standin/bin``). The process runs ``command + arguments`` (Docker's
  entrypoint + cmd; ``run_job`` always sends ``arguments: []``) through execve in its own mount namespace and
  filesystem view, working directory ``/`` (the uv image sets no WORKDIR), with exactly ``HF_ENDPOINT``, ``PATH``,
  ``HOME=/root`` (and the host's ``OMP_NUM_THREADS`` when set: a real job has its machine's cores to itself, a job
  here shares them with the other test worker, and torch threads that wait on a busy core ran 15 times slower, measured),
  then the job's ``environment``, then its ``secrets`` (later ones win). Stage messages (HF's exact
  wording is not documented): ``exit code N`` (``exit code 137 (killed by signal 9)`` for a signal); ``Job timed
  out: it ran past its timeout of N seconds and was killed``; an execve failure → ``the job's command could not be
  started: exec "bash": Argument list too long (…)`` (also printed in the logs); a volume that cannot be found →
  ``Volume error: model repository alice/x not found (mount /m)`` / ``Volume error: revision R not found in …`` /
  ``Volume error: bucket alice/b not found (…)`` (logged too); ``kill_job`` → ``the machine running the job was
  lost (node failure): infrastructure error, …``. Cancel answers ``{}`` and shows CANCELED at once (message None);
  the processes get SIGTERM, then SIGKILL after 2 s. ``createdAt`` is 5 s in the past, as before. Volumes: repos
  are materialised at the asked revision (``state.mounts``; no download counted) and bound read-only, buckets
  bound read-write unless ``readOnly``; ``path`` mounts a subfolder; a mount point inside a host folder that lacks
  it (``/usr/x``) ends the job ERROR (creating it would write to the host), new top-level paths and /tmp, /root
  are fine. The uv shim (``uv_shim.py``): its "index" is the installed packages; every failure exits 2 with a
  uv-like message; ``packages`` counts the script's own requirements (uv would count the whole resolution).
- Scheduled jobs (``hub_schedules.py``; ``create_scheduled_job`` … ``trigger_scheduled_job`` in ``hf_api.py``,
  ``ScheduledJobInfo`` in ``_jobs_api.py``): ``POST /api/scheduled-jobs/{ns}`` (body ``{jobSpec, schedule, suspend?,
  concurrency?}``; the schedule is ``@hourly`` … or five CRON fields, else 400) → ``{id, createdAt, schedule, suspend,
  concurrency, jobSpec, status: {lastJob, nextJobRunAt}, owner}`` (secrets shown as ``<encrypted>``; nextJobRunAt an
  hour ahead, None while suspended); ``GET`` the list (``label=k=v``) or one; ``DELETE`` one; ``POST …/suspend``,
  ``…/resume``, ``…/schedule`` (``{schedule}``) and ``PUT …/labels`` (``{labels}``; the ``name`` label is kept).
  Nothing fires by time: ``POST …/run`` starts one job from the stored spec and secrets now (the runner executes it)
  and answers its job JSON, or 409 while the last run still runs and concurrency is off. ``state.schedules``,
  ``state.schedule_events`` ``[{"id", "event", "at"}]``. Tags: ``POST /api/{type}s/{repo}/tag/{revision}``
  (``{"tag"}``; 409 if it exists) and ``DELETE …/tag/{tag}`` (``create_tag`` / ``delete_tag``); a tag is a revision.
- Job logs (``_stream_sse_events``, ``fetch_job_logs``): ``data: {"timestamp": ISO-8601 with ms, "data": line}``
  events, the first ``===== Job started at <createdAt> =====`` (the client drops it); ``tail=N`` replays the last
  N lines; the response has no Content-Length (HTTP/1.0, it ends when the connection closes) and carries the
  server's ``Date`` header (the no-follow client stops at the first event after Date + 1 s). While the runner
  still runs the job the stream stays open and sends ``: keep-alive`` every ``keepalive_s`` (default 8 s: more
  than the 5 s read timeout of a no-follow client, so on a silent job it returns after 5 s; HF sends them every
  30 s), closing once the job has ended and every line was sent. With ``run_jobs=False`` the stream ends after
  the history, as before.
- Hub search (public: answered without a token, 401 only for a wrong one), as huggingface_hub 2.4 calls it:
  ``GET /api/models`` and ``/api/datasets`` (``search``, ``author``, ``filter`` repeated — every tag must match —
  ``pipeline_tag``, ``sort`` = downloads | likes | trendingScore | createdAt | lastModified, descending, ``limit``,
  ``expand`` repeated: only those properties plus ``_id``/``id`` come back); ``GET /api/papers/search?q=&limit=``
  (``list_papers``: a list of ``{"paper": {id, authors[{_id, name, hidden}], publishedAt, title, summary, upvotes,
  discussionId, ai_summary, ai_keywords, githubRepo, githubStars}, publishedAt, title, summary, numComments,
  thumbnail}``; ``PaperInfo`` reads ``title`` from the outer object) and ``GET /api/papers/{arxiv_id}`` (``paper_info``,
  sent without auth: the flat paper object plus ``projectPage``, ``linkedModels``/``linkedDatasets`` (repo objects
  with ``id``), ``numTotalModels``/``numTotalDatasets``). Any other query parameter answers 400, so a client change
  shows up in the tests.
"""

from __future__ import annotations

import collections
import copy
import json
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from .hub_jobs import JobRoutes
from .hub_repos import RepoRoutes, apply_commit, new_repo
from .hub_schedules import ScheduleRoutes
from .hub_search import DATASETS, MODELS, PAPERS, SEARCH_PARAMS, SearchRoutes
from .jobs_runner import TERMINAL, JobRunner, iso

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



REPO = r"(models|datasets|spaces)/([^/]+/[^/]+)"
SCHEDULED = r"/api/scheduled-jobs/([^/]+)"
ROUTES = {  # method -> [(path regex, handler method)]; the groups are the method's arguments
    "GET": [(r"/api/jobs/([^/]+)/([^/]+)/logs", "_job_logs"), (r"/api/jobs/([^/]+)/([^/]+)", "_inspect_job"),
            (SCHEDULED, "_list_schedules"), (rf"{SCHEDULED}/([^/]+)", "_inspect_schedule"),
            (r"/api/jobs/([^/]+)", "_list_jobs"), (r"/api/buckets/([^/]+)/([^/]+)", "_bucket_info"),
            (rf"/api/{REPO}(?:/revision/(.+))?", "_repo_info_route"),
            (rf"/api/{REPO}/tree/([^/]+)(?:/(.+))?", "_tree_route"),
            (r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", "_resolve_get")],
    "HEAD": [(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", "_resolve_head")],
    "POST": [(r"/api/repos/create", "_create_repo"), (rf"/api/{REPO}/preupload/([^/]+)", "_preupload_route"),
             (rf"/api/{REPO}/commit/([^/]+)", "_commit_route"), (rf"/api/{REPO}/paths-info/([^/]+)", "_paths_route"),
             (r"/api/buckets/([^/]+)/([^/]+)", "_create_bucket"), (r"/api/jobs/([^/]+)/([^/]+)/cancel", "_cancel_job"),
             (r"/api/jobs/([^/]+)", "_submit_job"), (SCHEDULED, "_create_schedule"),
             (rf"{SCHEDULED}/([^/]+)/(suspend|resume)", "_suspend_schedule"),
             (rf"{SCHEDULED}/([^/]+)/schedule", "_reschedule"), (rf"{SCHEDULED}/([^/]+)/run", "_trigger_schedule"),
             (rf"/api/{REPO}/tag/([^/]+)", "_create_tag_route")],
    "PUT": [(rf"{SCHEDULED}/([^/]+)/labels", "_relabel_schedule")],
    "DELETE": [(rf"{SCHEDULED}/([^/]+)", "_delete_schedule"), (rf"/api/{REPO}/tag/([^/]+)", "_delete_tag_route")],
}

SELF_LOCKING = {"_job_logs", "_resolve_get", "_resolve_head"}


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
    logs: dict = field(default_factory=dict)  # job_id -> [line]
    log_times: dict = field(default_factory=dict)  # job_id -> [time.time() the line was read], parallel to logs
    installs: list = field(default_factory=list)  # [{"job", "installed": bool, "packages": N}] from the uv shim
    mounts: list = field(default_factory=list)  # [{"job", "repo", "revision": oid, "files": N}] repo volumes
    repos: dict = field(default_factory=dict)  # repo_id -> see hub_repos.py
    downloads: collections.Counter = field(default_factory=collections.Counter)  # (repo_id, path) -> GETs
    buckets: dict = field(default_factory=dict)  # bucket_id -> {"private": bool, "folder": Path}
    schedules: dict = field(default_factory=dict)  # scheduled job id -> its JSON (+ "secretValues"): hub_schedules.py
    schedule_events: list = field(default_factory=list)  # [{"id", "event", "at"}]: created, triggered, suspended, …
    requests: list = field(default_factory=list)
    fail: dict = field(default_factory=dict)  # (method, path regex) -> status code
    models: list = field(default_factory=lambda: [dict(m) for m in MODELS])
    datasets: list = field(default_factory=lambda: [dict(d) for d in DATASETS])
    papers: list = field(default_factory=lambda: [dict(p) for p in PAPERS])
    counter: int = 0
    prefix: str = field(default_factory=lambda: secrets.token_hex(3))
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    changed: threading.Condition = field(init=False, repr=False)  # notified on new log lines and stage changes

    def __post_init__(self):
        self.changed = threading.Condition(self.lock)


class Handler(RepoRoutes, JobRoutes, ScheduleRoutes, SearchRoutes, BaseHTTPRequestHandler):
    state: State
    endpoint: str
    standin: "HubStandIn"

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

    def _coded_error(self, status: int, code: str, message: str) -> None:
        """An error with the ``X-Error-Code`` header huggingface_hub maps to its typed errors."""
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Type", "application/json")
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
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = Request(self.command, url.path, parse_qs(url.query), headers, body)
        self.state.requests.append(req)
        for (method, pattern), status in list(self.state.fail.items()):
            if method == self.command and re.fullmatch(pattern, url.path):
                self._error(status, f"stand-in error {status}")
                return None
        auth = self.headers.get("Authorization", "")
        public = self.command == "GET" and (url.path in SEARCH_PARAMS or url.path.startswith("/api/papers/"))
        if public and not auth:
            return req
        if auth != f"Bearer {self.state.token}":
            self._error(401, "Invalid credentials in Authorization header")
            return None
        return req

    def _dispatch(self) -> None:
        req = self._record()
        if req is None:
            return
        fixed = {("GET", "/api/whoami-v2"): self._whoami,
                 ("GET", "/api/jobs/hardware"): lambda r: self._send(200, HARDWARE),
                 ("POST", "/api/validate-yaml"): lambda r: self._send(200, {"warnings": [], "errors": []})}
        if (req.method, req.path) in fixed:
            return fixed[(req.method, req.path)](req)
        if req.method == "GET" and (req.path in SEARCH_PARAMS or req.path.startswith("/api/papers/")):
            return self._search(req)
        for pattern, name in ROUTES[req.method]:
            m = re.fullmatch(pattern, req.path)
            if m:
                if name in SELF_LOCKING:  # they stream or send file bodies: the lock only while they read state
                    return getattr(self, name)(req, *m.groups())
                with self.state.lock:
                    return getattr(self, name)(req, *m.groups())
        self._error(404, f"no route {req.method} {req.path}")

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _dispatch

    # --- small routes ----------------------------------------------------------------------

    def _whoami(self, req) -> None:
        s = self.state
        token = {"displayName": "standin", "role": s.role}
        if s.fine_grained is not None:
            token["fineGrained"] = s.fine_grained
        self._send(200, {"type": "user", "name": s.user, "orgs": s.orgs,
                         "auth": {"type": "access_token", "accessToken": token}})

    def _repo_info_route(self, req, kind, repo_id, revision):
        self._repo_info(req, repo_id, revision)

    def _tree_route(self, req, kind, repo_id, revision, path):
        self._tree(req, repo_id, revision, path or "")

    def _paths_route(self, req, kind, repo_id, revision):
        self._paths_info(req, repo_id, revision)

    def _preupload_route(self, req, kind, repo_id, revision):
        self._preupload(req, repo_id)

    def _commit_route(self, req, kind, repo_id, revision):
        self._commit(req, kind, repo_id, revision)

    def _create_tag_route(self, req, kind, repo_id, revision):
        self._create_tag(req, kind, repo_id, revision)

    def _delete_tag_route(self, req, kind, repo_id, tag):
        self._delete_tag(req, kind, repo_id, tag)

    def _resolve_get(self, req, kind, repo_id, revision, path):
        self._resolve(repo_id, revision, path, head=False)

    def _resolve_head(self, req, kind, repo_id, revision, path):
        self._resolve(repo_id, revision, path, head=True)

    def _create_bucket(self, req, namespace: str, name: str) -> None:
        s = self.state
        namespace = s.user if namespace == "me" else namespace
        if namespace not in (s.user, *[o["name"] for o in s.orgs]):
            return self._error(403, f"You don't have write permission on {namespace}")
        bucket_id = f"{namespace}/{name}"
        if bucket_id in s.buckets:
            return self._send(409, {"error": "A bucket with this name already exists",  # create_bucket(exist_ok=True)
                                    "url": f"{self.endpoint}/buckets/{bucket_id}"})   # reads its url
        folder = self.standin.root / "buckets" / namespace / name
        folder.mkdir(parents=True, exist_ok=True)
        s.buckets[bucket_id] = {"private": (req.body or {}).get("visibility") == "private", "folder": folder}
        self._send(200, {"url": f"{self.endpoint}/buckets/{bucket_id}", "id": bucket_id})

    def _bucket_info(self, req, namespace: str, name: str) -> None:
        bucket_id = f"{self.state.user if namespace == 'me' else namespace}/{name}"
        bucket = self.state.buckets.get(bucket_id)
        if bucket is None:
            return self._coded_error(404, "RepoNotFound", f"Bucket {bucket_id} not found")
        folder = Path(bucket["folder"])
        files = [p for p in folder.rglob("*") if p.is_file()]
        self._send(200, {"id": bucket_id, "private": bool(bucket["private"]), "createdAt": iso(folder.stat().st_ctime),
                         "size": sum(p.stat().st_size for p in files), "totalFiles": len(files)})


def seed_public_models(state: State) -> None:
    """The public models the search lists exist as repos too (a config.json and a card each, one commit), as on
    the Hub: a client that pins a model's revision finds it. Seeded without requests, so none are recorded."""
    for model in MODELS:
        if model.get("library_name") != "transformers":
            continue
        repo = state.repos[model["id"]] = new_repo("model", private=False)
        body = {"model_type": next((t for t in model["tags"] if t in ("qwen3", "llama")), "unknown")}
        apply_commit(repo, model["id"], [
            {"key": "file", "value": {"path": "config.json", "content": _b64(json.dumps(body))}},
            {"key": "file", "value": {"path": "README.md", "content": _b64(f"# {model['id']}\n")}}])


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


class HubStandIn:
    """Run with ``with HubStandIn() as hub: ...``; ``hub.endpoint`` is the base URL. ``run_jobs=False``: jobs are
    only recorded (they stay SCHEDULING until ``set_stage``)."""

    def __init__(self, run_jobs: bool = True, keepalive_s: float = 8.0):
        self.state = State()
        seed_public_models(self.state)
        self.root = Path(tempfile.mkdtemp(prefix="hub-standin-"))
        self.keepalive_s = keepalive_s
        handler = type("BoundHandler", (Handler,), {"state": self.state, "standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        handler.endpoint = self.endpoint
        self.runner = JobRunner(self.state, self.endpoint, self.root) if run_jobs else None
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "HubStandIn":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.runner is not None:
                self.runner.shutdown()
        finally:
            self.server.shutdown()
            self.server.server_close()
            shutil.rmtree(self.root, ignore_errors=True)

    # helpers for tests
    def set_stage(self, job_id: str, stage: str, message: str | None = None) -> None:
        with self.state.changed:
            job = self.state.jobs[job_id]
            job["status"] = {"stage": stage, "message": message}
            if stage == "RUNNING":
                job["startedAt"] = iso(time.time() - 5)
            if stage in TERMINAL:
                job.setdefault("startedAt", iso(time.time() - 5))
                job["finishedAt"] = iso(time.time() - 4)
            self.state.changed.notify_all()

    def requests(self, method: str | None = None, path: str | None = None) -> list[Request]:
        return [r for r in self.state.requests
                if (method is None or r.method == method) and (path is None or re.fullmatch(path, r.path))]

    def wait_job(self, job_id: str, timeout: float = 60.0) -> dict:
        """The job's JSON once it has ended (and, when it ran here, once its processes and logs are done)."""
        deadline = time.monotonic() + timeout
        with self.state.changed:
            while True:
                job = self.state.jobs[job_id]
                running = self.runner is not None and self.runner.is_live(job_id)
                if job["status"]["stage"] in TERMINAL and not running:
                    return copy.deepcopy(job)
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = "\n".join(self.state.logs.get(job_id, [])[-20:])
                    raise TimeoutError(f"job {job_id} still {job['status']['stage']} after {timeout} s; logs:\n{tail}")
                self.state.changed.wait(min(left, 0.5))

    def job_log(self, job_id: str) -> list[str]:
        with self.state.lock:
            return list(self.state.logs.get(job_id, []))

    def kill_job(self, job_id: str) -> None:
        """SIGKILL the job's processes as if its machine died: it ends ERROR with an infrastructure message."""
        if self.runner is None or not self.runner.is_live(job_id):
            raise ValueError(f"job {job_id} is not running here")
        self.runner.kill(job_id)
