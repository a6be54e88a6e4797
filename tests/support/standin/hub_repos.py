"""Repo storage of the Hub stand-in: one snapshot of the files per commit, and the routes that serve them.

A repo is the dict kept in ``State.repos[repo_id]``::

    {"type": "model" | "dataset" | "space", "private": bool,
     "files": {path: bytes},             # the files of the latest commit (main)
     "commits": [oid, ...],              # oldest first; main = the last one
     "snapshots": {oid: {path: bytes}},  # the files at each commit (optional: see below)
     "commit_info": {oid: {"title", "date"}},
     "tags": {name: oid} or [name, ...]} # optional; a listed tag without an oid means main

Tests may still build a repo by hand with only ``type/private/files/commits``: a commit without a snapshot
then serves ``files`` (as the stand-in did before it stored revisions).
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote

REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}


def new_repo(repo_type: str, private: bool) -> dict:
    return {"type": repo_type, "private": private, "files": {}, "commits": [], "snapshots": {}, "commit_info": {}}


def resolve_revision(repo: dict, revision: str | None) -> str | None:
    """The commit oid a revision names (``main``, a commit oid or a tag), or None."""
    commits = repo["commits"]
    if not commits:
        return None
    revision = revision or "main"
    if revision == "main":
        return commits[-1]
    if revision in commits:
        return revision
    tags = repo.get("tags") or {}
    if revision in tags:
        return tags[revision] if isinstance(tags, dict) else commits[-1]
    return None


def files_at(repo: dict, oid: str) -> dict[str, bytes]:
    if oid == repo["commits"][-1]:
        return repo["files"]
    return repo.get("snapshots", {}).get(oid, repo["files"])


def apply_commit(repo: dict, repo_id: str, operations: list[dict]) -> tuple[str | None, str | None]:
    """Apply the ndjson operations of ``POST …/commit/main``: (new oid, None) or (None, error message)."""
    files = dict(repo["files"])
    title = ""
    for item in operations:
        key, value = item.get("key"), item.get("value") or {}
        if key == "header":
            title = value.get("summary", "")
        elif key == "file":
            files[value["path"]] = base64.b64decode(value["content"])
        elif key == "deletedFile":
            files.pop(value["path"], None)
        elif key == "deletedFolder":
            prefix = value["path"].rstrip("/") + "/"
            files = {p: b for p, b in files.items() if not p.startswith(prefix)}
        elif key == "lfsFile":
            return None, "the stand-in never asks for LFS uploads (preupload answers 'regular'), yet got an lfsFile"
        else:
            return None, f"unknown commit operation {key!r}"
    oid = hashlib.sha1(f"{repo_id}:{len(repo['commits'])}".encode()).hexdigest()
    repo["files"] = files
    repo["commits"].append(oid)
    repo.setdefault("snapshots", {})[oid] = files
    repo.setdefault("commit_info", {})[oid] = {"title": title, "date": _iso(time.time())}
    return oid, None


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _oid(data: bytes) -> str:  # a git blob id, as the Hub reports for regular files
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _last_commit(repo: dict, oid: str, path: str, folder: bool) -> dict:
    """The last commit up to ``oid`` that changed ``path`` (a file, or anything under a folder)."""
    commits = repo["commits"][: repo["commits"].index(oid) + 1]

    def view(c: str):
        files = files_at(repo, c)
        if folder:
            return {p: b for p, b in files.items() if p.startswith(path + "/")}
        return files.get(path)

    found = commits[-1]
    for older, newer in zip(reversed(commits[:-1]), reversed(commits), strict=False):
        if view(older) != view(newer):
            break
        found = older
    info = repo.get("commit_info", {}).get(found) or {"title": "", "date": _iso(0)}
    return {"id": found, "title": info["title"], "date": info["date"]}


def _folders(files: dict) -> set[str]:
    out = set()
    for p in files:
        parent = posixpath.dirname(p)
        while parent:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return out


def _entry(repo: dict, oid: str, path: str, expand: bool) -> dict:
    files = files_at(repo, oid)
    if path in files:
        entry = {"type": "file", "path": path, "size": len(files[path]), "oid": _oid(files[path])}
    else:
        inner = b"".join(p.encode() + _oid(b).encode() for p, b in sorted(files.items()) if p.startswith(path + "/"))
        entry = {"type": "directory", "path": path, "oid": hashlib.sha1(inner).hexdigest()}
    if expand:
        entry["lastCommit"] = _last_commit(repo, oid, path, entry["type"] == "directory")
    return entry


def tree(repo: dict, oid: str, path: str, recursive: bool, expand: bool) -> list[dict] | None:
    """``list_repo_tree`` at a commit: the folder's entries (all below it when recursive), None if no such folder."""
    files = files_at(repo, oid)
    folders = _folders(files)
    path = path.strip("/")
    if path and path not in folders:
        return None
    prefix = path + "/" if path else ""
    names = [p for p in sorted(set(files) | folders) if p.startswith(prefix)]
    if not recursive:
        names = [p for p in names if "/" not in p[len(prefix):]]
    dirs = [p for p in names if p in folders]  # folders first, as the Hub lists them
    return [_entry(repo, oid, p, expand) for p in dirs + [p for p in names if p not in folders]]


def paths_info(repo: dict, oid: str, paths: list[str], expand: bool) -> list[dict]:
    files = files_at(repo, oid)
    known = set(files) | _folders(files)
    return [_entry(repo, oid, p.strip("/"), expand) for p in paths if p.strip("/") in known]


def materialise(files: dict[str, bytes], dest: Path, subpath: str = "") -> int:
    """Write a snapshot's files (those under ``subpath``, relative to it) into ``dest``; the file count."""
    prefix = subpath.strip("/") + "/" if subpath.strip("/") else ""
    count = 0
    dest.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        if not path.startswith(prefix):
            continue
        target = dest / path[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        count += 1
    return count


class RepoRoutes:
    """Handler methods for repo creation, commits, revision info, tree, paths-info and resolve (mixed into the
    stand-in's request handler, which provides ``state``, ``endpoint``, ``_send``, ``_error``, ``_coded_error``)."""

    def _repo_at(self, repo_id: str, revision: str):
        """(repo, oid) or None after answering 404 RepoNotFound / RevisionNotFound."""
        repo = self.state.repos.get(repo_id)
        if repo is None or not repo["commits"]:
            self._coded_error(404, "RepoNotFound", "Repository not found")
            return None
        oid = resolve_revision(repo, unquote(revision))
        if oid is None:
            self._coded_error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}")
            return None
        return repo, oid

    def _repo_info(self, req, repo_id: str, revision: str | None) -> None:
        found = self._repo_at(repo_id, revision or "main")
        if found is None:
            return
        repo, oid = found
        files = files_at(repo, oid)
        blobs = req.query.get("blobs", ["false"])[0].lower() == "true"
        siblings = [{"rfilename": p, **({"size": len(files[p]), "blobId": _oid(files[p])} if blobs else {})}
                    for p in sorted(files)]
        info = repo.get("commit_info", {}).get(oid)
        body = {"id": repo_id, "sha": oid, "private": repo["private"], "siblings": siblings}
        if info:
            body["lastModified"] = info["date"]
        self._send(200, body)

    def _tree(self, req, repo_id: str, revision: str, path: str) -> None:
        found = self._repo_at(repo_id, revision)
        if found is None:
            return
        flag = {k: req.query.get(k, ["false"])[0].lower() == "true" for k in ("recursive", "expand")}
        entries = tree(found[0], found[1], unquote(path or ""), flag["recursive"], flag["expand"])
        if entries is None:
            return self._coded_error(404, "EntryNotFound", f"{unquote(path)} does not exist on {revision}")
        self._send(200, entries)

    def _paths_info(self, req, repo_id: str, revision: str) -> None:
        found = self._repo_at(repo_id, revision)
        if found is None:
            return
        raw = req.body if isinstance(req.body, bytes) else b""
        form = parse_qs(raw.decode()) if raw else {}
        if isinstance(req.body, dict):  # a JSON body is accepted too
            form = {"paths": req.body.get("paths", []), "expand": [str(req.body.get("expand", False))]}
        expand = form.get("expand", ["false"])[0].lower() == "true"
        self._send(200, paths_info(found[0], found[1], form.get("paths", []), expand))

    def _resolve(self, repo_id: str, revision: str, file: str, head: bool) -> None:
        """Called without the state lock held: it takes it to look the bytes up, and sends them after."""
        file = unquote(file)
        with self.state.lock:
            repo = self.state.repos.get(repo_id)
            oid = resolve_revision(repo, unquote(revision)) if repo else None
            body = files_at(repo, oid).get(file) if oid else None
            if body is not None and not head:
                self.state.downloads[(repo_id, file)] += 1
        if body is None:
            code = "RepoNotFound" if not repo or not repo["commits"] else "EntryNotFound" if oid else "RevisionNotFound"
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", oid)
        self.send_header("ETag", '"' + _oid(body) + '"')
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _create_repo(self, req) -> None:
        body = req.body or {}
        s = self.state
        repo_id = f"{body.get('organization') or s.user}/{body['name']}"
        repo_type = body.get("type") or "model"
        if repo_id in s.repos:
            return self._send(409, {"error": "You already created this repo", "url": f"{self.endpoint}/{repo_id}"})
        private = body.get("visibility") == "private" or bool(body.get("private"))
        s.repos[repo_id] = new_repo(repo_type, private)
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        self._send(200, {"url": f"{self.endpoint}/{prefix}{repo_id}"})

    def _preupload(self, req, repo_id: str) -> None:
        if repo_id not in self.state.repos:
            return self._coded_error(404, "RepoNotFound", "Repository not found")
        repo = self.state.repos[repo_id]
        present = repo["files"]  # preupload is asked about the branch the commit goes to: main
        # the Hub reports the oid of a file already there; huggingface_hub then skips an unchanged file, and a commit
        # with nothing changed is not made at all (it answers with the head commit: "Skipping to prevent empty commit")
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                  **({"oid": _oid(present[f["path"]])} if f["path"] in present else {})} for f in req.body["files"]]
        self._send(200, {"files": files, "commitOid": None})

    def _commit(self, req, kind: str, repo_id: str, revision: str) -> None:
        repo = self.state.repos.get(repo_id)
        if repo is None:
            return self._coded_error(404, "RepoNotFound", "Repository not found")
        if unquote(revision) != "main":
            return self._coded_error(404, "RevisionNotFound", f"the stand-in only commits to main, not {revision}")
        oid, problem = apply_commit(repo, repo_id, req.body or [])
        if problem:
            return self._error(400, problem)
        prefix = "" if kind == "models" else f"{kind}/"
        self._send(200, {"commitUrl": f"{self.endpoint}/{prefix}{repo_id}/commit/{oid}", "commitOid": oid,
                         "pullRequestUrl": None})
