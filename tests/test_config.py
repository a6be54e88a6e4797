from pathlib import Path

import pytest

from mcp_server.config import dump_config, load_config, parse_config, read_yaml
from mcp_server.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[1]


def base(**overrides) -> dict:
    cfg = {"model": {"name": "Qwen/Qwen3-0.6B"}, "data": {"path": "rows.jsonl"}}
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


def test_demo_config_loads_with_defaults_and_absolute_paths():
    cfg = load_config(REPO / "examples" / "demo.yaml")
    assert cfg.model.is_tiny
    assert Path(cfg.data.path[0]).is_absolute() and Path(cfg.data.path[0]).is_file()
    assert cfg.lora.r == 16 and cfg.quantization == "auto"
    assert cfg.registry_name == "tiny-qwen3-agent-sft"
    # the dumped YAML round-trips to the same config
    assert parse_config(__import__("yaml").safe_load(dump_config(cfg))) == cfg


def test_unknown_key_names_the_key_and_suggests_the_right_one():
    with pytest.raises(ConfigError) as err:
        parse_config(base(training={"lr": 1e-4}))
    text = str(err.value)
    assert "unknown key 'training.lr'" in text and "did you mean 'learning_rate'" in text
    assert "Fix:" in text


def test_wrong_type_names_key_value_and_allowed():
    with pytest.raises(ConfigError) as err:
        parse_config(base(quantization="8bit", training={"learning_rate": "fast"}))
    text = str(err.value)
    assert "'quantization' = '8bit'" in text and "'auto', '4bit' or 'none'" in text
    assert "'training.learning_rate' = 'fast'" in text


@pytest.mark.parametrize("cfg, needle", [
    (base(data={"path": "a.jsonl", "hub_id": "org/data"}), "give exactly one source"),
    (base(data={}), "give exactly one source"),
    (base(data={"hub_id": "org/data", "eval_split": "test", "eval_fraction": 0.1}), "set at most one"),
    (base(training={"eval_steps": 10}), "there is no eval data"),
    (base(data={"path": "a.jsonl", "eval_split": "test"}), "needs a Hub dataset"),
    (base(training={"max_steps": 0}), "trains nothing"),
    (base(chat_template="chatml"), "allowed are 'model', 'trl:<name>'"),
    (base(model={"name": "tiny:gpt2"}), "allowed: tiny:qwen3, tiny:llama"),
    (base(lora={"target_modules": []}), "trains nothing"),
    (base(output={"hub_repo_id": "no-namespace"}), "namespace/name"),
    (base(data={"path": "a.jsonl", "eval_fraction": 0.9}), "less than 0.5"),
])
def test_impossible_combinations_are_one_clear_error(cfg, needle):
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert needle in str(err.value)


def test_not_a_mapping():
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        parse_config(["model"])


def test_malformed_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  name: x/y\ndata:\n  path: [a.jsonl\n")
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert "not valid YAML at line" in str(err.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def write_cfg(tmp_path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_missing_dataset_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="data.path 'missing.jsonl' does not exist"):
        load_config(write_cfg(tmp_path, "model: {name: tiny:qwen3}\ndata: {path: missing.jsonl}\n"))


def test_empty_dataset_file_is_a_data_error(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DataError, match="is empty"):
        load_config(write_cfg(tmp_path, "model: {name: tiny:qwen3}\ndata: {path: empty.jsonl}\n"))


def test_folder_of_data_files_expands(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_text("{}\n")
    (tmp_path / "d" / "b.parquet").write_bytes(b"PAR1")
    (tmp_path / "d" / "notes.txt").write_text("x")
    cfg = load_config(write_cfg(tmp_path, "model: {name: tiny:qwen3}\ndata: {path: d}\n"))
    assert [Path(p).name for p in cfg.data.path] == ["a.jsonl", "b.parquet"]


def test_model_path_that_does_not_exist(tmp_path):
    (tmp_path / "a.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="neither an existing model folder"):
        load_config(write_cfg(tmp_path, "model: {name: ./models/mine}\ndata: {path: a.jsonl}\n"))


def test_model_folder_without_config_json(tmp_path):
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "m").mkdir()
    with pytest.raises(ConfigError, match="without config.json"):
        load_config(write_cfg(tmp_path, "model: {name: ./m}\ndata: {path: a.jsonl}\n"))


def test_hub_id_model_is_kept_as_is(tmp_path):
    (tmp_path / "a.jsonl").write_text("{}\n")
    cfg = load_config(write_cfg(tmp_path, "model: {name: Qwen/Qwen3-0.6B}\ndata: {path: a.jsonl}\n"))
    assert cfg.model.name == "Qwen/Qwen3-0.6B"


def test_chat_template_file_must_exist(tmp_path):
    (tmp_path / "a.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="chat_template file"):
        load_config(write_cfg(tmp_path, "model: {name: tiny:qwen3}\ndata: {path: a.jsonl}\nchat_template: t.jinja\n"))


def test_job_section_defaults_and_validation():
    cfg = parse_config(base(job={"backend": "hf", "flavor": "a10g-small", "timeout_s": 7200}))
    assert (cfg.job.backend, cfg.job.flavor, cfg.job.timeout_s) == ("hf", "a10g-small", 7200)
    assert parse_config(base()).job.backend == "local"
    with pytest.raises(ConfigError, match="'job.backend' = 'moon'"):
        parse_config(base(job={"backend": "moon"}))
