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
  last checkpoint, and to fetch a dataset repo of agent sessions): the fields huggingface_hub 2.4 reads —
  ``sha`` and ``siblings[].rfilename`` (``/api/datasets/{repo}`` alone is the main revision); a revision that
  is neither ``main``, a commit nor one of the repo's
  ``tags`` answers 404 with ``X-Error-Code: RevisionNotFound``;
  tree entries ``type/path/size/oid``; resolve headers ``X-Repo-Commit``, ``ETag``, ``Content-Length``.
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

import base64
import hashlib
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
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


MODELS = [
    {"_id": "m1", "id": "Qwen/Qwen3-0.6B", "author": "Qwen", "downloads": 912000, "likes": 610,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 40,
     "tags": ["transformers", "safetensors", "qwen3", "text-generation", "license:apache-2.0"],
     "createdAt": "2025-04-27T03:40:08.000Z", "lastModified": "2025-07-26T03:46:27.000Z"},
    {"_id": "m2", "id": "Qwen/Qwen3-1.7B", "author": "Qwen", "downloads": 540000, "likes": 330,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 25,
     "tags": ["transformers", "safetensors", "qwen3", "text-generation", "license:apache-2.0"],
     "createdAt": "2025-04-27T03:41:00.000Z", "lastModified": "2025-07-26T03:47:00.000Z"},
    {"_id": "m3", "id": "alice/qwen3-0.6b-agent-lora", "author": "alice", "downloads": 120, "likes": 3,
     "pipeline_tag": "text-generation", "library_name": "peft", "trendingScore": 1,
     "tags": ["peft", "safetensors", "lora", "base_model:Qwen/Qwen3-0.6B", "dataset:alice/agent-traces"],
     "createdAt": "2026-01-10T10:00:00.000Z", "lastModified": "2026-01-11T10:00:00.000Z"},
    {"_id": "m4", "id": "meta-llama/Llama-3.2-1B", "author": "meta-llama", "downloads": 1500000, "likes": 2000,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 10,
     "tags": ["transformers", "safetensors", "llama", "text-generation", "license:llama3.2"],
     "createdAt": "2024-09-18T15:03:14.000Z", "lastModified": "2024-10-24T15:07:51.000Z"},
]
DATASETS = [
    {"_id": "d1", "id": "alice/agent-traces", "author": "alice", "downloads": 800, "likes": 12, "trendingScore": 2,
     "tags": ["task_categories:text-generation", "size_categories:1K<n<10K", "format:parquet", "language:en"],
     "description": "Coding-agent sessions with tool calls, converted to TRL messages rows.",
     "createdAt": "2026-01-05T09:00:00.000Z", "lastModified": "2026-01-06T09:00:00.000Z"},
    {"_id": "d2", "id": "openai/openai_humaneval", "author": "openai", "downloads": 90000, "likes": 300,
     "trendingScore": 5, "tags": ["task_categories:text-generation", "size_categories:n<1K", "format:parquet",
                                  "language:en", "license:mit"],
     "description": "The HumanEval dataset: 164 handwritten Python programming problems.",
     "createdAt": "2022-01-01T00:00:00.000Z", "lastModified": "2024-01-04T16:22:08.000Z"},
    {"_id": "d3", "id": "bob/tool-calls-small", "author": "bob", "downloads": 45, "likes": 40, "trendingScore": 9,
     "tags": ["task_categories:text-generation", "size_categories:n<1K", "format:json", "language:en"],
     "description": "Small tool-calling SFT set.", "createdAt": "2026-02-01T00:00:00.000Z",
     "lastModified": "2026-02-02T00:00:00.000Z"},
]
PAPERS = [
    {"id": "2305.14314", "title": "QLoRA: Efficient Finetuning of Quantized LLMs",
     "summary": "We present QLoRA, an efficient finetuning approach that reduces memory usage enough to finetune a "
                "65B parameter model on a single 48GB GPU while preserving full 16-bit finetuning task performance.",
     "publishedAt": "2023-05-23T17:50:33.000Z", "upvotes": 58, "discussionId": "p1",
     "authors": [{"_id": "a1", "name": "Tim Dettmers", "hidden": False},
                 {"_id": "a2", "name": "Artidoro Pagnoni", "hidden": False}],
     "ai_summary": "4-bit NormalFloat quantisation plus LoRA adapters match 16-bit finetuning.",
     "ai_keywords": ["QLoRA", "4-bit NormalFloat", "LoRA", "paged optimizers"],
     "githubRepo": "https://github.com/artidoro/qlora", "githubStars": 10500, "projectPage": None,
     "linkedModels": [{"id": "alice/qwen3-0.6b-agent-lora"}], "numTotalModels": 1,
     "linkedDatasets": [{"id": "alice/agent-traces"}], "numTotalDatasets": 1},
    {"id": "2106.09685", "title": "LoRA: Low-Rank Adaptation of Large Language Models",
     "summary": "We propose Low-Rank Adaptation, or LoRA, which freezes the pre-trained model weights and injects "
                "trainable rank decomposition matrices into each layer of the Transformer architecture.",
     "publishedAt": "2021-06-17T17:37:18.000Z", "upvotes": 40, "discussionId": "p2",
     "authors": [{"_id": "a3", "name": "Edward J. Hu", "hidden": False}],
     "ai_summary": "Low-rank update matrices adapt large models with few trainable parameters.",
     "ai_keywords": ["LoRA", "low-rank adaptation"], "githubRepo": "https://github.com/microsoft/LoRA",
     "githubStars": 11000, "projectPage": None, "linkedModels": [], "numTotalModels": 0, "linkedDatasets": [],
     "numTotalDatasets": 0},
]
SEARCH_PARAMS = {
    "/api/models": {"search", "author", "filter", "pipeline_tag", "sort", "limit", "expand", "full", "config",
                    "cardData", "gated", "apps", "inference", "inference_provider", "num_parameters"},
    "/api/datasets": {"search", "author", "filter", "sort", "limit", "expand", "full", "gated"},
    "/api/papers/search": {"q", "limit"},
}
SORT_KEYS = {"downloads", "likes", "trendingScore", "createdAt", "lastModified"}


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
    models: list = field(default_factory=lambda: [dict(m) for m in MODELS])
    datasets: list = field(default_factory=lambda: [dict(d) for d in DATASETS])
    papers: list = field(default_factory=lambda: [dict(p) for p in PAPERS])
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
        req = Request(self.command, url.path, parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, body)
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
        if path in SEARCH_PARAMS or path.startswith("/api/papers/"):
            return self._search(req)
        m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if m:
            repo = s.repos.get(m.group(2))
            if repo is None or not repo["commits"]:
                return self._coded_error(404, "RepoNotFound", "Repository not found")
            if (m.group(3) or "main") not in ("main", *repo["commits"], *repo.get("tags", ())):
                return self._coded_error(404, "RevisionNotFound", f"Invalid rev id: {m.group(3)}")
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

    def _search(self, req: Request) -> None:
        """Hub search: models / datasets listings, paper search and one paper (shapes in the module doc)."""
        path, q, s = req.path, req.query, self.state
        if path not in SEARCH_PARAMS:  # /api/papers/{id}
            if q:
                return self._error(400, f"unexpected query parameters {sorted(q)}")
            found = next((p for p in s.papers if p["id"] == path.rsplit("/", 1)[1]), None)
            return self._send(200, found) if found else self._error(404, "Paper not found")
        unknown = set(q) - SEARCH_PARAMS[path]
        if unknown:
            return self._error(400, f"unknown query parameters {sorted(unknown)}")
        limit = int(q.get("limit", ["1000"])[0])
        if path == "/api/papers/search":
            words = q.get("q", [""])[0].lower().split()
            hits = [p for p in s.papers if all(w in (p["title"] + " " + p["summary"]).lower() for w in words)]
            inner = ("id", "authors", "publishedAt", "title", "summary", "upvotes", "discussionId", "ai_summary",
                     "ai_keywords", "githubRepo", "githubStars")
            return self._send(200, [{"paper": {k: p[k] for k in inner}, "publishedAt": p["publishedAt"],
                                     "title": p["title"], "summary": p["summary"], "numComments": 0,
                                     "thumbnail": f"{self.endpoint}/thumbnails/{p['id']}.png"} for p in hits][:limit])
        items = s.models if path == "/api/models" else s.datasets
        for needle in q.get("search", []):
            items = [i for i in items if needle.lower() in i["id"].lower()]
        if "author" in q:
            items = [i for i in items if i["author"] == q["author"][0]]
        if "pipeline_tag" in q:
            items = [i for i in items if i.get("pipeline_tag") == q["pipeline_tag"][0]]
        for tag in q.get("filter", []):
            items = [i for i in items if tag in i["tags"] or tag == i.get("library_name")]
        if "sort" in q:
            key = q["sort"][0]
            if key not in SORT_KEYS:
                return self._error(400, f"cannot sort by {key}")
            items = sorted(items, key=lambda i: i[key], reverse=True)
        keep = set(q.get("expand", [])) or {"downloads", "likes", "tags", "createdAt", "trendingScore", "private",
                                            "pipeline_tag", "library_name"}
        rows = [{k: v for k, v in i.items() if k in keep or k in ("_id", "id")} for i in items[:limit]]
        return self._send(200, rows)

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
