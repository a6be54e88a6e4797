"""The local registry: versions are numbered, never overwritten, never half-written."""

import threading

import pytest

from mcp_server.errors import RegistryError
from mcp_server.registry import LocalRegistry


def adapter(tmp_path, name="adapter", weight=b"w1"):
    d = tmp_path / name
    d.mkdir()
    (d / "adapter_config.json").write_text('{"r": 8}')
    (d / "adapter_model.safetensors").write_bytes(weight)
    (d / "training_args.bin").write_bytes(b"skip me")
    (d / "checkpoints").mkdir()
    return d


def test_push_numbers_versions_and_never_overwrites(tmp_path):
    reg = LocalRegistry(tmp_path / "reg")
    v1 = reg.push(adapter(tmp_path, "a", b"first"), "demo", card="# v1", run_name="r1")
    v2 = reg.push(adapter(tmp_path, "b", b"second"), "demo", card=lambda n: f"# card for v{n}")
    assert (v1.version, v2.version) == (1, 2)
    assert (tmp_path / "reg/demo/v1/adapter_model.safetensors").read_bytes() == b"first"
    assert (tmp_path / "reg/demo/v2/adapter_model.safetensors").read_bytes() == b"second"
    assert (tmp_path / "reg/demo/v2/README.md").read_text() == "# card for v2"
    assert not (tmp_path / "reg/demo/v1/training_args.bin").exists()
    assert not (tmp_path / "reg/demo/v1/checkpoints").exists()
    assert [v.version for v in reg.list("demo")] == [1, 2]
    assert reg.get("demo").version == 2 and reg.get("demo", 1).run_name == "r1"


def test_missing_adapter_files_leave_nothing(tmp_path):
    reg = LocalRegistry(tmp_path / "reg")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RegistryError, match="adapter_config.json, adapter_model.safetensors missing"):
        reg.push(empty, "demo")
    assert reg.list() == []


def test_a_failing_push_leaves_no_version_and_no_staging(tmp_path):
    reg = LocalRegistry(tmp_path / "reg")

    def broken_card(version):
        raise RuntimeError("card failed")

    with pytest.raises(RuntimeError):
        reg.push(adapter(tmp_path), "demo", card=broken_card)
    assert reg.list("demo") == []
    assert [p.name for p in (tmp_path / "reg/demo").iterdir() if p.name != ".lock"] == []


def test_concurrent_pushes_get_distinct_versions(tmp_path):
    reg = LocalRegistry(tmp_path / "reg")
    sources = [adapter(tmp_path, f"a{i}", bytes([i])) for i in range(6)]
    threads = [threading.Thread(target=reg.push, args=(s, "demo")) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    versions = reg.list("demo")
    assert sorted(v.version for v in versions) == [1, 2, 3, 4, 5, 6]
    contents = {(tmp_path / f"reg/demo/v{v.version}/adapter_model.safetensors").read_bytes() for v in versions}
    assert len(contents) == 6


def test_unknown_names_and_versions(tmp_path):
    reg = LocalRegistry(tmp_path / "reg")
    reg.push(adapter(tmp_path), "demo")
    with pytest.raises(RegistryError, match="no adapter named 'other'.*names: demo"):
        reg.get("other")
    with pytest.raises(RegistryError, match="no version 9"):
        reg.get("demo", 9)
    with pytest.raises(RegistryError, match="not allowed"):
        reg.push(adapter(tmp_path, "x"), "../escape")
