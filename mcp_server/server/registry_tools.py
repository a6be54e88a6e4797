"""MCP tools of the registry room: push an adapter folder, list versions, publish one to the Hub."""

from __future__ import annotations

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from ..approval import Decision
from ..errors import RegistryError
from ..registry import AdapterVersion, LocalRegistry
from ..registry.hub import HubPush, publish_approved
from ..registry.push import push_adapter
from .common import Approval, ApprovalToken, can_elicit, consent_from, guarded


class PublishResult(BaseModel):
    status: str = Field(description="published | approval_required")
    decision: Decision
    push: HubPush | None = None
    next_step: str


def ask_to_publish(ctx: Context, repo_id: str, private: bool = True):
    """Resolver: publishing a PUBLIC repo — ask the human when the client can; None = nobody was asked."""
    if private or not can_elicit(ctx):
        return None
    return Elicit(f"tunepack wants to publish an adapter as the PUBLIC repo {repo_id}. Approve?", Approval)


@guarded
def registry_push(adapter_dir: Annotated[str, Field(description="Folder with adapter_config.json and "
                                                                "adapter_model.safetensors.")],
                  name: Annotated[str, Field(description="Registry name of the adapter line.")]) -> AdapterVersion:
    """Copy an adapter into the local registry as a new version (never overwrites); writes its model card
    when the folder holds a tunepack manifest."""
    return push_adapter(adapter_dir, name)


class VersionList(BaseModel):
    result: list[AdapterVersion] = Field(description="The 15 newest, oldest first.")
    total: int
    next_step: str


@guarded
def registry_list(name: Annotated[str | None, Field(description="Only this adapter line.")] = None) -> VersionList:
    """Adapter versions in the local registry (the 15 newest; name an adapter line to narrow it)."""
    registry = LocalRegistry()
    versions = registry.list(name)
    if name and not versions:
        raise RegistryError(f"The registry has no adapter named '{name}'.", "call registry_list without a name.")
    if not versions:
        return VersionList(result=[], total=0, next_step=(
            f"the registry ({registry.root}) is empty: a finished pipeline_run or sweep run registers its adapter; "
            "start one with pipeline_preflight, then pipeline_run"))
    shown = sorted(versions, key=lambda v: v.created_at)[-15:]
    kept = [v for v in shown if not v.withdrawn]
    if not kept:
        return VersionList(result=shown, total=len(versions), next_step=(
            "every version shown is withdrawn (it did not beat the base): nothing here to publish; eval_results "
            f"(name='{shown[-1].name}', version={shown[-1].version}) shows its scores"))
    return VersionList(result=shown, total=len(versions), next_step=(
        f"evaluate one with eval_start(name='{kept[-1].name}', version={kept[-1].version}), "
        "or publish a version that is not withdrawn with registry_publish"))


@guarded
def registry_publish(ctx: Context, name: Annotated[str, Field(description="Registry name of the adapter line.")],
                     repo_id: Annotated[str, Field(description="Hub model repo, namespace/name.")],
                     approval: Annotated[ElicitationResult[Approval], Resolve(ask_to_publish)],
                     version: Annotated[int | None, Field(description="Version (default the newest).", ge=1)]
                     = None,
                     private: Annotated[bool, Field(description="Private repo (default). Public needs human "
                                                                "approval.")] = True,
                     approval_token: ApprovalToken = None) -> PublishResult:
    """Push a registry version to the Hugging Face Hub: adapter, manifest and a model card with model-index.
    Re-publishing the same version to the same repo returns the same commit."""
    done = publish_approved(name, version, repo_id, private=private, consent=consent_from(approval, approval_token, ctx))
    if done.push is None:
        return PublishResult(status="approval_required", decision=done.decision, next_step=done.decision.message)
    return PublishResult(status="published", decision=done.decision, push=done.push,
                         next_step=f"the adapter is at {done.push.url} (commit {done.push.commit[:12]})")


TOOLS = [registry_push, registry_list, registry_publish]
