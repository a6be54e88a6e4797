"""Publishing a registry version to the Hub (stand-in): repo, upload, ModelCard metadata, idempotence."""

import json

import pytest
import yaml

from mcp_server.errors import TunepackError
from mcp_server.registry import LocalRegistry
from mcp_server.registry.hub import hub_card, publish, upload_dataset


@pytest.fixture
def version(tmp_path):
    src = tmp_path / "adapter"
    src.mkdir()
    (src / "adapter_config.json").write_text('{"r": 8}')
    (src / "adapter_model.safetensors").write_bytes(b"\0weights" * 64)
    (src / "tunepack_manifest.json").write_text(json.dumps({"config": {
        "model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"hub_id": "alice/traces"}}}))
    return LocalRegistry(tmp_path / "reg").push(src, "agent-sft", card="---\nlibrary_name: peft\n---\n# agent-sft\n\nbody\n")


def card_meta(text: str) -> dict:
    return yaml.safe_load(text.split("---")[1])


def test_publish_creates_a_private_repo_with_card_and_manifest(hub, version):
    pushed = publish(version, "alice/agent-sft")
    assert pushed.private and not pushed.reused and pushed.url.endswith("/alice/agent-sft")
    repo = hub.state.repos["alice/agent-sft"]
    assert repo["private"] is True and repo["commits"] == [pushed.commit]
    assert set(repo["files"]) == {"README.md", "adapter_config.json", "adapter_model.safetensors",
                                  "tunepack_manifest.json"}
    assert repo["files"]["adapter_model.safetensors"] == b"\0weights" * 64
    meta = card_meta(repo["files"]["README.md"].decode())
    assert meta["base_model"] == "Qwen/Qwen3-0.6B" and meta["library_name"] == "peft"
    assert meta["datasets"] == ["alice/traces"] and set(meta["tags"]) == {"peft", "trl", "sft", "tunepack"}
    (create,) = hub.requests("POST", "/api/repos/create")
    assert create.body["name"] == "agent-sft" and create.headers["authorization"] == f"Bearer {hub.state.token}"
    (commit,) = hub.requests("POST", r"/api/models/alice/agent-sft/commit/main")
    assert commit.body[0]["key"] == "header" and "agent-sft v1" in commit.body[0]["value"]["summary"]


def test_republishing_the_same_version_is_idempotent(hub, version):
    first = publish(version, "alice/agent-sft")
    again = publish(version, "alice/agent-sft")
    assert again.reused and again.commit == first.commit
    assert len(hub.state.repos["alice/agent-sft"]["commits"]) == 1


def test_model_index_from_eval_results(version):
    text = hub_card("# x\n", {"config": {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {}}}, "agent-sft",
                    [{"dataset_type": "openai_humaneval", "dataset_name": "HumanEval", "metric_type": "pass@1",
                      "metric_value": 0.42}])
    result = card_meta(text)["model-index"][0]["results"][0]
    assert result["metrics"][0] == {"type": "pass@1", "value": 0.42} and result["dataset"]["name"] == "HumanEval"


@pytest.mark.parametrize("status, needle", [(401, "token was rejected"), (403, "lacks repo.write permission on 'alice'")])
def test_publish_errors(hub, version, status, needle):
    hub.state.fail[("POST", "/api/repos/create")] = status
    with pytest.raises(TunepackError, match=needle):
        publish(version, "alice/agent-sft")


def test_upload_dataset_to_a_private_dataset_repo(hub, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.parquet"
    a.write_text('{"messages": []}\n')
    b.write_bytes(b"PAR1")
    revision = upload_dataset([str(a), str(b)], "alice/tunepack-data-x")
    repo = hub.state.repos["alice/tunepack-data-x"]
    assert repo["type"] == "dataset" and repo["private"] and repo["commits"] == [revision]
    assert set(repo["files"]) == {"data/train-00000.jsonl", "data/train-00001.parquet"}
