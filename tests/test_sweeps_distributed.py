"""Beyond one GPU: TRL's accelerate configs (vendored verbatim, loaded by accelerate's own classes and
launcher checks), the self-launching script (torchrun for ddp, accelerate launch for FSDP / ZeRO, 4-bit
storage in the compute dtype when sharded), and a real 2-process torchrun run on CPU with gloo in which
rank 0 alone writes: one Trackio run, one manifest, one registry version."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.jobs.markers import parse
from mcp_server.pipeline import run_pipeline
from mcp_server.registry import LocalRegistry, read_manifest
from mcp_server.tracking import TrackioStore
from mcp_server.train.distributed import (TRL_CONFIG, accelerate_config, check_placement, launch_command, launch_plan,
                                          trl_accelerate_configs)
from mcp_server.methods import render_script, write_script
from support.sweeps import tiny_base, unique


def cfg(short_data, **distributed):
    body = tiny_base(short_data, "dist")
    body["distributed"] = distributed
    return parse_config(body)


def test_the_vendored_configs_are_trls():
    trl = pytest.importorskip("trl")
    folder = Path(trl.__file__).parent / "accelerate_configs"
    for name in TRL_CONFIG.values():
        assert yaml.safe_load((folder / f"{name}.yaml").read_text()) == trl_accelerate_configs()[name], name


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "fsdp1", "zero1", "zero2", "zero3"])
def test_accelerate_loads_them_with_its_own_classes(strategy, tmp_path):
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DistributedType

    config = accelerate_config(strategy, 4)
    yaml_path, json_path = tmp_path / "a.yaml", tmp_path / "a.json"  # the script writes JSON
    yaml_path.write_text(yaml.safe_dump(config))
    json_path.write_text(json.dumps(config))
    for path in (yaml_path, json_path):
        loaded = load_config_from_file(str(path))
        assert isinstance(loaded, ClusterConfig) and loaded.num_processes == 4 and loaded.mixed_precision == "bf16"
    expected = {"ddp": DistributedType.MULTI_GPU, "fsdp": DistributedType.FSDP, "fsdp1": DistributedType.FSDP}
    assert loaded.distributed_type == expected.get(strategy, DistributedType.DEEPSPEED)
    if strategy == "fsdp":
        assert loaded.fsdp_config["fsdp_version"] == 2
    if strategy.startswith("zero"):
        assert loaded.deepspeed_config["zero_stage"] == int(strategy[-1])
    args = launch_command_parser().parse_args(["--config_file", str(json_path), "train.py"])
    args, _, _ = _validate_launch_command(args)  # what `accelerate launch` checks before starting anything
    assert args.num_processes == 4 and args.use_fsdp == strategy.startswith("fsdp")
    assert args.use_deepspeed == strategy.startswith("zero")


def test_the_script_launches_itself(short_data):
    single = cfg(short_data)
    assert launch_plan(single) is None and launch_command(single) == ["python", "train.py"]
    ddp = cfg(short_data, processes=2)
    assert launch_command(ddp) == ["torchrun", "--standalone", "--nproc_per_node", "2", "train.py"]
    fsdp = cfg(short_data, processes=4, strategy="fsdp")
    plan = launch_plan(fsdp)
    assert plan["launcher"] == "accelerate" and plan["sharded"] and plan["accelerate_config"]["num_processes"] == 4
    assert launch_command(fsdp)[:4] == ["accelerate", "launch", "--config_file", "accelerate_config.json"]
    text = render_script(fsdp, model_path="m")
    ast.parse(text)
    assert "'launcher': 'accelerate'" in text and "'sharded': True" in text
    assert "bnb_4bit_quant_storage" in text and "accelerate.commands.launch" in text
    assert "deepspeed" not in text.split("# ///")[1]  # only ZeRO needs DeepSpeed in the script's dependencies
    zero = render_script(cfg(short_data, processes=2, strategy="zero3"), model_path="m")
    assert '"deepspeed>=' in zero.split("# ///")[1]
    with pytest.raises(ConfigError, match="torchrun' runs ddp only"):
        cfg(short_data, processes=2, strategy="fsdp", launcher="torchrun")


def test_one_process_per_gpu_on_hf(short_data):
    body = {**tiny_base(short_data, "x"), "model": {"name": "Qwen/Qwen3-0.6B"}, "distributed": {"processes": 4}}
    four = parse_config(body)
    with pytest.raises(ConfigError, match="needs 4 GPUs, but flavor 'a10g-largex2' has 2 GPUs"):
        check_placement(four, "hf", "a10g-largex2")
    with pytest.raises(ConfigError, match="has no GPUs"):
        check_placement(four, "hf", "cpu-upgrade")
    check_placement(four, "hf", "a100x4")
    check_placement(four, "local", None)  # local: the script checks the GPUs it finds


def test_fsdp_without_cuda_is_refused_by_the_script(short_data, tiny_model_dir, tmp_path):
    script = write_script(cfg(short_data, processes=2, strategy="fsdp"), tmp_path / "train.py",
                          model_path=str(tiny_model_dir), run_name="no-cuda")
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 3
    (error,) = parse(done.stdout).get("ERROR", [])
    assert error["kind"] == "config" and "needs CUDA GPUs" in error["problem"] and "ddp" in error["fix"]


@pytest.mark.slow
def test_torchrun_two_cpu_processes_rank_zero_writes_once(short_data, tmp_path):
    project = unique("ddp")
    body = tiny_base(short_data, project, max_steps=6, per_device_train_batch_size=2)
    body["distributed"] = {"processes": 2}
    path = tmp_path / "ddp.yaml"
    path.write_text(json.dumps(body))
    result = run_pipeline(path)
    log = Path(result.log_path).read_text()
    assert "launching 2 processes (ddp, torchrun)" in log and "torch.distributed.run" in log
    metrics = [m for m in parse(log).get("METRIC", []) if "loss" in m]
    assert [m["step"] for m in metrics] == [1, 2, 3, 4, 5, 6]  # one line per step: rank 0 alone logs
    assert metrics[0]["epoch"] == pytest.approx(2 * 2 / 32)  # two processes × batch 2 per step over 32 rows
    assert len(parse(log).get("DONE", [])) == 1 and len(parse(log).get("MASK", [])) == 1
    assert TrackioStore(result.trackio_dir).runs(project) == [result.run_name]  # exactly one Trackio run
    versions = LocalRegistry().list(project)
    assert [v.version for v in versions] == [1]  # exactly one registry version
    manifest = read_manifest(versions[0].path)
    assert manifest["distributed"] == {"processes": 2, "strategy": "ddp", "launcher": "torchrun"}
    assert manifest["training"]["steps"] == 6
    assert len(list(Path(versions[0].path).glob("tunepack_manifest*.json"))) == 1
    assert os.path.basename(result.adapter_path) == "v1"
