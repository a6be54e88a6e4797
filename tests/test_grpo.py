"""GRPO, the first slice of the third rung: the config rules, the built-in rewards, and `tunepack run` on the Qwen3
replica with a learnable reward (length), whose held-out curve must rise by more than two standard errors.
About 30 s on one core."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from mcp_server.config import parse_config
from mcp_server.errors import ConfigError
from mcp_server.methods.grpo.rewards import format_reward, length_reward, mean_and_stderr
from support.common import run_cli, write_jsonl


def _raw(tmp_path: Path, **extra) -> dict:
    data = write_jsonl(tmp_path / "prompts.jsonl", [{"id": f"p{i}", "prompt": f"Write add{i}(a, b)."} for i in range(96)])
    raw = {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(data), "eval_fraction": 0.25},
           "training": {"method": "grpo", "per_device_train_batch_size": 16}, "grpo": {"num_generations": 4}}
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


def test_a_grpo_config_reads_prompt_rows_and_names_its_method(tmp_path):
    cfg = parse_config(_raw(tmp_path))
    assert cfg.data.format == "prompts" and cfg.registry_name == "tiny-qwen3-grpo" and "-grpo-g4" in cfg.run_name


@pytest.mark.parametrize(("change", "message"), [
    ({"training": {"method": "grpo", "per_device_train_batch_size": 6}}, "is not a multiple of grpo.num_generations"),
    ({"grpo": {"rewards": {"tests_typo": 1.0}}}, "unknown reward tests_typo"),
    ({"grpo": {"rewards": {"length": 0.0}}}, "every reward weight is 0"),
    ({"data": {"format": "messages"}}, "training.method grpo needs prompt-only rows"),
    ({"training": {"method": "sft"}}, "the grpo section applies only to training.method: grpo"),
])
def test_impossible_grpo_configs_are_refused(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_raw(tmp_path, **change))


def test_the_built_in_rewards_score_what_they_say():
    assert format_reward("```python\ndef f():\n    return 1\n```") == 1.0
    assert format_reward("Here:\n```python\nx = 1\n```\nDone.") == 0.5
    assert format_reward("```\nx\n```\n```\ny\n```") == 0.0 and format_reward("no code") == 0.0
    assert length_reward(8, 8) == 1.0 and length_reward(12, 8) == 0.5 and length_reward(40, 8) == 0.0
    mean, stderr = mean_and_stderr([0.0, 1.0, 0.0, 1.0])
    assert mean == 0.5 and math.isclose(stderr, 0.5 / math.sqrt(4) * math.sqrt(4 / 3))


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("grpo")
    raw = _raw(folder, training={"method": "grpo", "learning_rate": 0.02, "max_steps": 20, "logging_steps": 4,
                                 "seed": 0, "warmup_ratio": 0.0, "per_device_train_batch_size": 16},
               grpo={"rewards": {"length": 1.0}, "length_target": 16, "num_generations": 8,
                     "max_completion_length": 32},
               lora={"r": 16, "alpha": 32, "dropout": 0.0}, tracking={"project": "grpo-e2e"},
               output={"name": "grpo-length"}, eval={"tasks": []})
    path = folder / "grpo.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_held_out_reward_rises_by_more_than_two_standard_errors(grpo_run):
    manifest = json.loads((Path(grpo_run["adapter_path"]) / "tunepack_manifest.json").read_text())
    assert manifest["grpo"]["signal"]["mixed_share"] >= 0.10  # the signal check passed: some groups disagree
    curve = manifest["grpo"]["curve"]
    assert [c["step"] for c in curve] == [0, 4, 8, 12, 16, 20] and all(c["n"] > 10 for c in curve)
    first, last = curve[:3], curve[-3:]
    gain = sum(c["reward"] for c in last) / 3 - sum(c["reward"] for c in first) / 3
    stderr = math.sqrt(sum(c["stderr"] ** 2 for c in first + last)) / 3  # of the difference of the two means
    assert gain > 2 * stderr, curve


def test_the_card_and_trackio_carry_the_curve_and_each_reward(grpo_run):
    from mcp_server.tracking import TrackioStore

    card = Path(grpo_run["card_path"]).read_text()
    assert "trained with GRPO" in card and "Held-out reward" in card and "length (1.0)" in card
    assert "16 completions per step = 2 prompt(s) x 8 generations" in card
    summary = TrackioStore(str(Path(grpo_run["trackio_dir"]))).summary("grpo-e2e", grpo_run["trackio_run"])
    assert "eval/reward" in summary.last and "rewards/length/mean" in summary.last
    assert grpo_run["registry_name"] == "grpo-length"


def _mbpp_file(tmp_path: Path) -> Path:
    rows = [
        {"task_id": 601, "text": "Double a number.", "code": "def twice(x):\n    return 2 * x", "test_setup_code": "",
         "test_list": ["assert twice(2) == 4", "assert twice(0) == 0", "assert twice(-3) == -6"]},
        {"task_id": 602, "text": "Last character.", "code": "def last(s):\n    return s[-1]", "test_setup_code": "",
         "test_list": ["assert last('ab') == 'b'", "assert last('x') == 'x'", "assert last('ab') == 'b'"]},
        {"task_id": 603, "text": "Add one (the reference is wrong).", "code": "def inc(x):\n    return x",
         "test_setup_code": "", "test_list": ["assert inc(1) == 2", "assert inc(2) == 3"]},
        {"task_id": 512, "text": "A validation task.", "code": "def neg(x):\n    return -x", "test_setup_code": "",
         "test_list": ["assert neg(1) == -1", "assert neg(-2) == 2"]},
    ]
    return write_jsonl(tmp_path / "mbpp.jsonl", rows)


def test_mbpp_prompts_show_one_test_score_the_rest_and_report_the_ceiling(tmp_path):
    done = run_cli("grpo-prompts", "--mbpp", str(_mbpp_file(tmp_path)), "--split", "train", "-o",
                   str(tmp_path / "train.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["rows"] == 3 and report["ceiling"]["ceiling"] == round(2 / 3, 4)
    assert report["dropped"] == ["mbpp/603"] and report["written"] == 2  # its reference fails its own tests
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    first = rows[0]
    assert "def twice(x):" in first["prompt"] and "assert twice(2) == 4" in first["prompt"]
    assert first["tests"] == ["assert twice(0) == 0", "assert twice(-3) == -6"]  # the shown test is not scored
    assert rows[1]["tests"] == ["assert last('x') == 'x'"]  # a repeat of the shown test is no test either
    assert report["leaked_tests"] == []
    # beside them, the same prompts answered by their reference solutions: the SFT warm start a start that never
    # earns the reward needs, ready as an SFT config's data
    warm = [json.loads(line) for line in Path(report["sft_rows"]).read_text().splitlines()]
    assert report["sft_rows"].endswith("train.sft.jsonl") and len(warm) == report["written"] == 2
    assert warm[0]["messages"][0] == {"role": "user", "content": first["prompt"]}
    assert warm[0]["messages"][1]["content"] == "```python\ndef twice(x):\n    return 2 * x\n```"
    sft = parse_config({"model": {"name": "tiny:qwen3"}, "data": {"path": report["sft_rows"]}})
    assert sft.data.path == [report["sft_rows"]]


def test_a_file_that_is_not_mbpp_is_refused_by_name_and_nothing_is_written(tmp_path):
    """JSON lines that are not MBPP tasks (a sweep spec, found by the fuzz test) get one error naming the line, not a
    KeyError, and no prompt file is left behind."""
    spec = write_jsonl(tmp_path / "sweep.jsonl", [{"name": "s", "base": "c.yaml"}])
    done = run_cli("grpo-prompts", "--mbpp", str(spec), "--split", "train", "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode != 0 and "is not MBPP's jsonl: line 1 is not an MBPP task" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out.jsonl").exists()


def test_train_prompts_that_near_duplicate_a_test_problem_are_left_out_before_any_training(tmp_path):
    """MBPP's train split repeats some test problems; trained on, the eval would withhold the adapter's MBPP
    score as contaminated, so the prompts leave them out and say which, and the eval's own check then passes."""
    from mcp_server.evals.kit.contamination import check_contamination, iter_training_texts
    from mcp_server.evals.kit.problems import load_problems

    source = _mbpp_file(tmp_path)
    twin = {"task_id": 11, "text": "Write a function that doubles a number given as its only argument and returns "
            "the result.", "code": "def twice(x):\n    return 2 * x", "test_setup_code": "",
            "test_list": ["assert twice(2) == 4", "assert twice(0) == 0", "assert twice(-3) == -6"]}
    other = {"task_id": 12, "text": "Write a function to reverse the words of a sentence given as a string and "
             "return the new sentence.", "code": "def rev(s):\n    return ' '.join(s.split()[::-1])",
             "test_setup_code": "", "test_list": ["assert rev('a b c') == 'c b a'", "assert rev('x') == 'x'"]}
    source.write_text(source.read_text() + json.dumps(twin) + "\n" + json.dumps(other) + "\n")
    out = tmp_path / "train.jsonl"
    done = run_cli("grpo-prompts", "--mbpp", str(source), "--split", "train", "-o", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["test_overlap"]["dropped"] == ["mbpp/601"] and report["test_overlap"]["test_problems"] == ["mbpp/11"]
    assert "withhold" in report["test_overlap"]["why"]
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["mbpp/602"]  # 603 fails its tests
    assert not check_contamination(load_problems("mbpp", str(source)), iter_training_texts([str(out)])).contaminated_ids
    # the same rows kept in are what the eval would flag: the check is the eval's own
    kept_in = tmp_path / "all.jsonl"
    kept_in.write_text(out.read_text() + json.dumps({"prompt": twin["text"], "solution": twin["code"],
                                                     "tests": twin["test_list"]}) + "\n")
    flagged = check_contamination(load_problems("mbpp", str(source)), iter_training_texts([str(kept_in)]))
    assert flagged.contaminated_ids == ["mbpp/11"]


def test_the_tests_reward_pays_for_passing_asserts_and_not_for_tampering():
    from mcp_server.evals.kit.sandbox import Sandbox
    from mcp_server.evals.kit.testreward import tests_fraction

    row = {"id": "t", "prompt": "", "setup": "", "tests": ["assert twice(2) == 4", "assert twice(0) == 0",
                                                          "assert twice(-3) == -6"]}
    box = Sandbox("auto", workers=2).start()
    try:
        assert tests_fraction(box, row, "```python\ndef twice(x):\n    return 2 * x\n```") == 1.0
        assert tests_fraction(box, row, "```python\ndef twice(x):\n    return 4\n```") == pytest.approx(1 / 3)
        assert tests_fraction(box, row, "def nothing():\n    pass") == 0.0
        # answers that try to get paid without solving: leave early, or swap the assertion machinery
        assert tests_fraction(box, row, "def twice(x):\n    return 0\nimport sys\nsys.exit(0)") == 0.0
        # tampering with the assertion machinery scores 0, even on the assert its answer would pass (twice(0) == 0)
        assert tests_fraction(box, row, "import builtins\nbuiltins.AssertionError = type('N', (Exception,), {})\n"
                                        "def twice(x):\n    return 0") == 0.0
    finally:
        box.close()


def test_a_grpo_run_with_the_tests_reward_runs_the_code_in_the_sandbox(tmp_path):
    done = run_cli("grpo-prompts", "--mbpp", str(_mbpp_file(tmp_path)), "--split", "train", "-o",
                   str(tmp_path / "train.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    run_cli("grpo-prompts", "--mbpp", str(tmp_path / "mbpp.jsonl"), "--split", "validation", "-o",
            str(tmp_path / "val.jsonl"))
    raw = {"model": {"name": "tiny:qwen3"}, "quantization": "none", "data": {"path": str(tmp_path / "train.jsonl")},
           "training": {"method": "grpo", "max_steps": 2, "per_device_train_batch_size": 4, "logging_steps": 1,
                        "learning_rate": 0.01},
           "grpo": {"rewards": {"tests": 1.0, "format": 0.2}, "num_generations": 4, "max_completion_length": 24,
                    "heldout_path": str(tmp_path / "val.jsonl"), "signal_check": False},
           "tracking": {"project": "grpo-e2e"}, "output": {"name": "grpo-tests"}, "eval": {"tasks": []}}
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = run_cli("run", str(path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    log = Path(result["log_path"]).read_text()
    assert "[tunepack] sandbox:" in log and "programs get an empty environment" in log
    manifest = json.loads((Path(result["adapter_path"]) / "tunepack_manifest.json").read_text())
    curve = manifest["grpo"]["curve"]
    assert curve and set(curve[-1]["components"]) == {"tests", "format"} and curve[-1]["n"] == 1
    assert manifest["heldout"]["by"] == "file"
    # with the signal check on, the random replica's groups all score 0: refused before training, with the fix
    raw["grpo"]["signal_check"] = True
    path.write_text(yaml.safe_dump(raw))
    refused = run_cli("run", str(path), "--json")
    assert refused.returncode != 0
    assert "groups from the starting model have mixed rewards" in refused.stderr
    # both ways out: warm the start up on the task's answers, or (already warmed) say the model is too weak
    for words in ("never earns the reward", "fine-tuned on this task's own answers", "too weak for the task"):
        assert words in refused.stderr
    # trial (b): on a replica, say first that no warm-up on this machine can help, and what can be shown here
    assert "is a CPU replica with random weights: no SFT on this machine makes it pass these tests" in refused.stderr
    assert "grpo.rewards: {format: 1.0}" in refused.stderr and "tunepack rl-check CONFIG" in refused.stderr


def _logs(train, clipped=None, flat=None, evals=()):
    records = []
    for step, reward in enumerate(train, start=1):
        record = {"step": step, "reward": reward}
        if clipped is not None:
            record["completions/clipped_ratio"] = clipped[step - 1]
        if flat is not None:
            record["frac_reward_zero_std"] = flat[step - 1]
        records.append(record)
    for step, mean, stderr in evals:
        records.append({"step": step, "eval/reward": mean, "eval/reward_stderr": stderr})
    return sorted(records, key=lambda r: r["step"])


def test_reward_hacking_signs_are_named_and_a_healthy_run_has_none():
    from mcp_server.methods.grpo.rewards import hacking_signs

    rising = [0.1, 0.1, 0.2, 0.4, 0.6, 0.8]
    gamed = hacking_signs(_logs(rising, evals=[(0, 0.50, 0.03), (6, 0.30, 0.03)]))
    assert gamed and "held-out reward fell from 0.5 to 0.3" in gamed
    assert hacking_signs(_logs(rising, evals=[(0, 0.50, 0.03), (6, 0.62, 0.03)])) is None  # both rose: learning
    assert hacking_signs(_logs(rising, evals=[(0, 0.50, 0.10), (6, 0.40, 0.10)])) is None  # within the noise
    pinned = hacking_signs(_logs(rising, clipped=[0.5, 0.6, 0.8, 1.0, 1.0, 0.96]))
    assert pinned and "pinned at max_completion_length" in pinned
    assert hacking_signs(_logs(rising, clipped=[1.0] * 6)) is None  # pinned from the start: not something learnt
    flat = hacking_signs(_logs(rising, flat=[0.2, 0.3, 0.5, 0.95, 1.0, 1.0]))
    assert flat and "zero reward variance" in flat



def test_sweeps_of_grpo_select_on_the_held_out_reward_and_distillation_on_its_kl(tmp_path):
    from mcp_server.sweeps.plan import _metric
    from mcp_server.sweeps.spec import SweepSpec

    base = parse_config(_raw(tmp_path))
    spec = SweepSpec.model_validate({"name": "s", "base": "x.yaml", "grid": {"training.learning_rate": [0.01, 0.02]}})
    assert _metric(spec, base) == {"name": "eval/reward", "direction": "max", "reduce": "last"}
    spec = SweepSpec.model_validate({"name": "s", "base": "x.yaml", "grid": {"distill.lmbda": [0.0, 1.0]},
                                     "metric": {"name": "eval/distill/kl"}})
    assert _metric(spec, base)["direction"] == "min"


def test_the_generation_path_is_chosen_with_its_reason():
    from mcp_server.train.speed import generation_plan

    gpu = generation_plan("auto", cuda=True, vllm_installed=True, use_4bit=False)
    assert gpu["use_vllm"] and gpu["vllm_mode"] == "colocate" and gpu["vllm_gpu_memory_utilization"] == 0.3
    qlora = generation_plan("auto", cuda=True, vllm_installed=True, use_4bit=True)
    assert not qlora["use_vllm"] and "QLoRA with vLLM breaks" in qlora["reason"]
    assert generation_plan("vllm", cuda=True, vllm_installed=True, use_4bit=True)["error"]
    assert not generation_plan("auto", cuda=False, vllm_installed=True, use_4bit=False)["use_vllm"]
    assert "not installed" in generation_plan("auto", cuda=True, vllm_installed=False, use_4bit=False)["reason"]


def test_grpo_with_vllm_renders_vllm_into_the_script_dependencies(tmp_path):
    from mcp_server.methods import render_script

    script = render_script(parse_config(_raw(tmp_path, grpo={"generation": "vllm", "num_generations": 4})))
    header = script.split("# ///", 2)[1]
    assert '"vllm>=0.22.0,<=0.31.0"' in header and "torch==" not in header  # TRL's own vllm range, not any vllm
    # the range is the pinned TRL's vllm extra (an unbounded vllm resolved to 0.19.1 with torch 2.10 under pip)
    import importlib.metadata

    from packaging.requirements import Requirement

    from mcp_server.methods.grpo import VLLM_FOR_TRL

    extra = [Requirement(r) for r in importlib.metadata.requires("trl") or [] if 'extra == "vllm"' in r]
    assert str(next(r.specifier for r in extra if r.name == "vllm")) == str(Requirement(VLLM_FOR_TRL).specifier)
    assert "class GrpoRun(Run)" in script and "def generation_plan(" in script


def test_a_grpo_sweep_of_two_runs_completes_and_selects_on_the_held_out_reward(tmp_path):
    base = _raw(tmp_path, training={"method": "grpo", "learning_rate": 0.02, "max_steps": 6, "logging_steps": 2,
                                    "seed": 0, "warmup_ratio": 0.0, "per_device_train_batch_size": 16},
                grpo={"rewards": {"length": 1.0}, "length_target": 16, "num_generations": 8,
                      "max_completion_length": 32, "eval_steps": 3, "signal_check": False},
                lora={"r": 16, "alpha": 32, "dropout": 0.0}, tracking={"project": "grpo-sweep"},
                output={"name": "grpo-sweep"}, eval={"tasks": []})
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    spec = {"name": "grpo-lr", "base": "base.yaml", "grid": {"training.learning_rate": [0.01, 0.02]},
            "max_concurrent": 2, "canary": {"enabled": False}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    done = run_cli("sweep", "submit", str(tmp_path / "sweep.yaml"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    view = json.loads(done.stdout)
    assert view["status"] == "done", view
    chosen = run_cli("sweep", "select", view["sweep_id"], "--json")
    assert chosen.returncode == 0, chosen.stderr[-2000:]
    selection = json.loads(chosen.stdout)
    assert selection["metric"]["name"] == "eval/reward" and selection["metric"]["direction"] == "max"
    ranked = sorted(selection["ranking"], key=lambda r: r["rank"])
    assert [r["status"] for r in ranked] == ["completed", "completed"]
    assert ranked[0]["metric_value"] >= ranked[1]["metric_value"] and selection["best"]["run"] == ranked[0]["run"]


def test_a_reward_file_runs_in_the_sandbox_and_only_its_return_value_counts(monkeypatch):
    from mcp_server.evals.kit.sandbox import Sandbox
    from mcp_server.evals.kit.testreward import file_reward

    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)  # in the parent's environment, never in the program's
    row = {"id": "r1", "prompt": "Say hi.", "tests": ["assert True"], "extra": object()}
    box = Sandbox("auto", workers=2).start()
    try:
        def score(source: str, completion: str = "```python\nx = 1\n```"):
            return file_reward(box, source, completion, row, timeout_s=3.0)

        assert score("def reward(completion, row):\n    return completion.count('```') / 2") == (1.0, None)
        assert score("def reward(completion, row):\n    return len(row['prompt']) + len(row['tests'])") == (8.0, None)
        value, why = score("import os\ndef reward(completion, row):\n    return 1.0 if 'HF_TOKEN' in os.environ else 0.5")
        assert (value, why) == (0.5, None)  # the program's environment is empty: no token to read or send
        value, why = score("def reward(completion, row):\n    raise ValueError('bad row')")
        assert value == 0.0 and "ValueError" in why and "bad row" in why
        value, why = score("def reward(completion, row):\n    return 'high'")
        assert value == 0.0 and "not a finite number" in why
        value, why = score("def reward(completion, row):\n    return float('nan')")
        assert value == 0.0 and "not a finite number" in why
        value, why = score("def reward(completion, row):\n    while True:\n        pass")
        assert value == 0.0 and "stopped (timeout)" in why
        # printing a number (or a result line) is output, not a score
        value, why = score("print('1.0')\nimport sys\nsys.stdout.write('{\"probes\": [5]}\\n')\n"
                           "def reward(completion, row):\n    return 0.25")
        assert (value, why) == (0.25, None)
        value, why = score("import sys\ndef reward(completion, row):\n    sys.exit(0)")
        assert value == 0.0 and why
    finally:
        box.close()


@pytest.mark.parametrize(("change", "message"), [
    ({"grpo": {"rewards": {"mine": 1.0}}}, "unknown reward mine.*add your own as grpo.reward_files"),
    ({"grpo": {"rewards": {"length": 1.0}, "reward_files": {"format": "f.py"}}}, "not a built-in reward"),
    ({"grpo": {"rewards": {"length": 1.0}, "reward_files": {"mine": "f.txt"}}}, "is not a .py file"),
    ({"grpo": {"rewards": {"length": 1.0}, "reward_files": {"mine": "f.py"}}}, "neither trained .* nor logged"),
    ({"grpo": {"rewards": {"length": 1.0}, "monitor": ["length"]}}, "is also a trained reward"),
    ({"grpo": {"rewards": {"length": 1.0}, "monitor": ["speed"]}}, "grpo.monitor 'speed' is no reward"),
    ({"model": {"name": "tiny:qwen3", "adapter": "bad name!"}}, "is not a registry reference"),
])
def test_reward_files_monitors_and_starting_adapters_are_checked(tmp_path, change, message):
    raw = _raw(tmp_path, **change)
    with pytest.raises(ConfigError, match=message):
        parse_config(raw)


def test_a_missing_reward_file_or_one_without_reward_is_refused_before_any_job(tmp_path):
    from mcp_server.config import load_config
    from mcp_server.methods.grpo.plan import reward_sources

    raw = _raw(tmp_path, grpo={"rewards": {"length": 1.0, "mine": 0.5}, "reward_files": {"mine": "mine.py"}})
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="grpo.reward_files mine 'mine.py'"):
        load_config(path)
    (tmp_path / "mine.py").write_text("def score(text):\n    return 1\n")
    with pytest.raises(ConfigError, match=r"defines no reward\(completion, row\)"):
        reward_sources(load_config(path))
    (tmp_path / "mine.py").write_text("def reward(completion, row):\n    return 1 +\n")
    with pytest.raises(ConfigError, match="cannot be read as Python"):
        reward_sources(load_config(path))


def test_the_vllm_header_resolves_for_the_job_and_an_incompatible_one_is_refused_before_spending(tmp_path):
    """GRPO with vLLM, resolved as the HF job's `uv run` will (Linux x86_64, Python 3.12), on the index as it
    was on a fixed day: the header gets a vLLM inside TRL's range under the pinned transformers; a vLLM that needs
    other versions than the pins does not resolve, and the reason names it."""
    from mcp_server.jobs.resolve import resolve_header
    from mcp_server.methods import render_script
    from mcp_server.methods.grpo import VLLM_FOR_TRL
    from packaging.requirements import Requirement

    script = render_script(parse_config(_raw(tmp_path, grpo={"generation": "vllm", "num_generations": 4})))
    env = resolve_header(script, exclude_newer="2026-12-05T00:00:00Z")
    assert env.ok, env.problem
    assert env.versions["vllm"] in Requirement(VLLM_FOR_TRL).specifier
    assert env.versions["transformers"] == "5.25.0" and env.versions["trl"] == "1.16.0"
    bad = resolve_header(script.replace(VLLM_FOR_TRL, "vllm==0.33.0"), exclude_newer="2026-12-05T00:00:00Z")
    assert bad.ok is False and "vllm==0.33.0" in bad.problem and "No solution found" in bad.problem
    # what preflight asks of every header: a vLLM that resolves, but outside the pinned TRL's range, is refused
    from mcp_server.jobs.resolve import resolve

    old = resolve(["vllm==0.19.1"], within={"vllm": VLLM_FOR_TRL.removeprefix("vllm")},
                  exclude_newer="2026-12-05T00:00:00Z")
    assert old.ok is False and old.versions["vllm"] == "0.19.1", old
    assert "vllm 0.19.1 (needs >=0.22.0,<=0.31.0)" in old.problem and "trl[vllm]" in old.fix


def test_render_for_a_flavor_prints_the_grpo_plan_and_refuses_qlora_with_vllm(tmp_path):
    def render(flavor: str, **grpo_extra):
        raw = _raw(tmp_path, model={"name": "Qwen/Qwen3-0.6B"}, grpo={"num_generations": 4, **grpo_extra})
        raw["quantization"] = grpo_extra.pop("quantization", "none")
        raw["grpo"].pop("quantization", None)
        path = tmp_path / "gpu.yaml"
        path.write_text(yaml.safe_dump(raw))
        out = tmp_path / f"train-{flavor}-{raw['quantization']}.py"
        done = run_cli("render", str(path), "--flavor", flavor, "-o", str(out))
        return done, out

    done, out = render("a10g-large", generation="vllm")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout[:done.stdout.rindex("}") + 1])["grpo_plan"]
    assert plan["generation"]["use_vllm"] and plan["generation"]["vllm_mode"] == "colocate"
    assert plan["generation"]["vllm_gpu_memory_utilization"] == 0.3 and plan["precision"] == "bf16 weights, LoRA in bf16"
    assert plan["sizing"]["prompts_per_step"] == 4 and '"vllm>=' in out.read_text().split("# ///", 2)[1]
    done, _ = render("t4-small", generation="vllm")
    assert "fp16 weights" in done.stdout  # no bf16 before compute capability 8.0
    done, out = render("a10g-large", generation="vllm", quantization="4bit")
    assert done.returncode != 0 and "QLoRA" in done.stderr and "quantization: none" in done.stderr
    assert not out.exists()  # refused before anything was written
    done, _ = render("a10g-large", quantization="4bit")
    assert "transformers generate on the 4-bit weights" in done.stdout
