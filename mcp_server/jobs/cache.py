"""What an HF job mounts so that a sweep does not fetch the same material again and again.

With ``job.cache: auto`` (the default) a remote training job gets:
- the base model's repo mounted read-only at ``/tunepack/model``, at the commit its revision pointed at
  when the job was submitted (the script loads the weights from the mount: no download at all);
- the private data repo tunepack uploaded the rows to, read-only at ``/tunepack/data``, at the pinned
  commit (the script reads the files from the mount);
- one private bucket, ``{user}/tunepack-cache``, read-write at ``/tunepack/cache``: uv's package cache,
  the datasets cache (converted windows, tokenized rows) and compiled kernels (Triton, Inductor) live
  there, so the second job of a sweep reuses what the first built.
``job.cache: none`` mounts nothing: each job downloads the model and the data and installs its packages.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .. import hf_auth

MOUNT_ROOT = "/tunepack"
MODEL_MOUNT = f"{MOUNT_ROOT}/model"
DATA_MOUNT = f"{MOUNT_ROOT}/data"
CACHE_MOUNT = f"{MOUNT_ROOT}/cache"
CACHE_BUCKET = "tunepack-cache"
CACHE_ENV = {
    "UV_CACHE_DIR": f"{CACHE_MOUNT}/uv",
    "HF_DATASETS_CACHE": f"{CACHE_MOUNT}/datasets",
    "TRITON_CACHE_DIR": f"{CACHE_MOUNT}/triton",
    "TORCHINDUCTOR_CACHE_DIR": f"{CACHE_MOUNT}/inductor",
}


class Mount(BaseModel):
    """One volume of an HF job (huggingface_hub's ``Volume``): a repo read-only at a revision, or a bucket."""

    type: Literal["model", "dataset", "bucket"]
    source: str = Field(description="ns/name of the repo or bucket")
    mount_path: str = Field(pattern=r"^/[A-Za-z0-9._/-]+$")
    revision: str | None = Field(None, description="the pinned commit (repos only)")
    read_only: bool = True

    def to_volume(self):
        from huggingface_hub import Volume

        return Volume(type=self.type, source=self.source, mount_path=self.mount_path, revision=self.revision,
                      read_only=self.read_only)


class CachePlan(BaseModel):
    """The mounts and environment of one remote job, and what the script should read from where."""

    mounts: list[Mount] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    bucket: str | None = None

    def paths(self) -> dict[str, str]:
        """{"model": path, "data": path, "cache": path} for the mounts present (the script reads this)."""
        names = {MODEL_MOUNT: "model", DATA_MOUNT: "data", CACHE_MOUNT: "cache"}
        return {names[m.mount_path]: m.mount_path for m in self.mounts if m.mount_path in names}


def pinned_commit(repo_id: str, revision: str | None, repo_type: str = "model") -> str:
    """The commit a repo's revision points at now (so every job of a sweep mounts the same files)."""
    api = hf_auth.api()
    try:
        info = api.repo_info(repo_id, repo_type=repo_type, revision=revision or "main")
    except Exception as exc:
        raise hf_auth.http_error(exc, action=f"Reading {repo_type} {repo_id}@{revision or 'main'}",
                                 repo_id=repo_id) from None
    return info.sha


def ensure_bucket(user: str) -> str:
    """The private cache bucket of this user, created if missing."""
    bucket = f"{user}/{CACHE_BUCKET}"
    try:
        hf_auth.api().create_bucket(bucket, private=True, exist_ok=True)
    except Exception as exc:
        raise hf_auth.http_error(exc, action=f"Creating the cache bucket {bucket}") from None
    return bucket


def plan_cache(mode: str, user: str, *, model: str | None, model_revision: str | None,
               data_repo: str | None, data_revision: str | None) -> CachePlan:
    """The mounts for ``job.cache`` (auto | none); ``model`` None when the model is not a Hub repo."""
    if mode == "none":
        return CachePlan()
    mounts = []
    if model:
        mounts.append(Mount(type="model", source=model, mount_path=MODEL_MOUNT,
                            revision=pinned_commit(model, model_revision)))
    if data_repo:
        mounts.append(Mount(type="dataset", source=data_repo, mount_path=DATA_MOUNT, revision=data_revision))
    bucket = ensure_bucket(user)
    mounts.append(Mount(type="bucket", source=bucket, mount_path=CACHE_MOUNT, read_only=False))
    return CachePlan(mounts=mounts, env=dict(CACHE_ENV), bucket=bucket)
