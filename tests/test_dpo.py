"""DPO's pieces without training: the config's rules, the pairs built from a GRPO run's rollouts (a verified one
against a failed one of the same problem, never a held-out rollout), the checks on a user's pairs, and the loss
mask: with the real tokenizer and training template, a tool result inside the chosen answer carries no loss, and
TRL's preference collator, multiplied by that mask, trains only the assistant's tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server.config.load import parse_config as load_config_dict
from mcp_server.errors import ConfigError, DataError
from mcp_server.methods import method_of
from mcp_server.methods.dpo.pairs import collated_loss_masks, cut_pair, pair_problems, pair_tokens
from mcp_server.methods.dpo.rollouts import rollout_pairs
from support.common import run_cli
from support.dpo import env_rollouts


def _config(**changes) -> dict:
    raw = {"model": {"name": "tiny:qwen3"}, "data": {"path": "pairs.jsonl"}, "training": {"method": "dpo"}}
    for key, value in changes.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


def test_a_dpo_config_takes_preference_rows_and_names_its_runs():
    cfg = load_config_dict(_config(dpo={"beta": 0.2, "loss_type": "ipo"}))
    assert cfg.data.format == "preference" and method_of(cfg).name == "dpo"
    assert cfg.registry_name == "tiny-qwen3-dpo" and cfg.run_name.endswith("-dpo-b0.2")
    assert method_of(cfg).selection_metric(cfg) == "rewards/margins"
    held = load_config_dict(_config(data={"eval_fraction": 0.2}))
    assert method_of(held).selection_metric(held) == "eval/dpo/margin"


@pytest.mark.parametrize(("changes", "named"), [
    ({"data": {"format": "messages"}}, "training.method dpo needs preference rows"),
    ({"training": {"packing": True}}, "training.packing: true does not apply to DPO"),
    ({"data": {"eval_sessions": ["s1"]}}, "holds out prompts: use data.eval_fraction (pairs are held out by prompt)"),
    ({"training": {"method": "sft"}, "dpo": {"beta": 0.5}}, "the dpo section applies only to training.method: dpo"),
    ({"training": {"method": "sft"}, "data": {"format": "preference"}}, "trains only with training.method: dpo"),
    ({"dpo": {"loss_type": "kto"}}, "dpo.loss_type"),
])
def test_bad_dpo_combinations_are_one_error_naming_the_key(changes, named):
    with pytest.raises(ConfigError) as caught:
        load_config_dict(_config(**changes))
    assert named in str(caught.value)


def test_a_users_pairs_are_checked_row_by_row():
    user = [{"role": "user", "content": "hi"}]
    good = {"prompt": user, "chosen": [{"role": "assistant", "content": "hello"}],
            "rejected": [{"role": "assistant", "content": "go away"}]}
    assert pair_problems(good) == []
    assert pair_problems({**good, "rejected": good["chosen"]}) == ["chosen and rejected are the same answer (no "
                                                                   "preference to learn)"]
    assert pair_problems({**good, "chosen": "hello"})[0].startswith("chosen is str, not a non-empty list")
    assert pair_problems({**good, "prompt": [{"role": "assistant", "content": "x"}]}) == [
        "the prompt holds no user message"]
    cfg = load_config_dict(_config())
    with pytest.raises(DataError) as caught:
        method_of(cfg).check_rows(cfg, [good, {**good, "chosen": [{"role": "tool", "content": "x"}]}])
    assert "1 of 2 preference rows cannot train (row 1: chosen holds no assistant message" in caught.value.problem
    assert "tunepack dpo pairs" in caught.value.fix


def test_a_pair_is_cut_where_its_answers_part():
    user = {"role": "user", "content": "q"}
    call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
        "name": "run_python", "arguments": {"code": "1"}}}]}
    result = {"role": "tool", "name": "run_python", "content": "1"}
    row = cut_pair({"prompt": [user], "chosen": [call, result, {"role": "assistant", "content": "good"}],
                    "rejected": [call, result, {"role": "assistant", "content": "bad"}]})
    assert row["prompt"] == [user, call, result]
    assert row["chosen"] == [{"role": "assistant", "content": "good"}]


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("dpo-pairs")
    run_dir = env_rollouts(folder, problems=4)
    rows, report = rollout_pairs([str(run_dir)])
    return {"folder": folder, "run_dir": run_dir, "rows": rows, "report": report}


def test_rollouts_pair_a_verified_answer_with_a_failed_one_of_the_same_problem(rollouts):
    rows, report = rollouts["rows"], rollouts["report"]
    assert report == {"rollouts": 9, "not_rollouts": 0, "heldout": 1, "verified": 4, "failed": 4, "repeats": 0,
                      "problems": 4, "problems_paired": 4, "pairs": 4}
    assert len({r["problem"] for r in rows}) == 4
    for row in rows:
        assert pair_problems(row) == []
        assert [m["role"] for m in row["prompt"]][-1] == "user"
        assert row["chosen"][0]["tool_calls"][0]["function"]["name"] == "run_python"  # the passing one ran code
        assert "tool_calls" not in row["rejected"][0] or not row["rejected"][0]["tool_calls"]


def test_the_pairs_command_writes_pairs_and_refuses_a_folder_without_rollouts(rollouts):
    out = rollouts["folder"] / "pairs.jsonl"
    done = run_cli("dpo", "pairs", str(rollouts["run_dir"]), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["pairs"] == 4 and len(out.read_text().splitlines()) == 4
    empty = rollouts["folder"] / "empty"
    empty.mkdir()
    refused = run_cli("dpo", "pairs", str(empty), "-o", str(rollouts["folder"] / "none.jsonl"))
    assert refused.returncode == 1 and "No training rollouts found" in refused.stderr
    assert "environment.save_rollouts" in refused.stderr


def test_the_pairs_tool_takes_the_same_path_as_the_command(rollouts):
    """An agent without a shell: dpo_pairs (toolset ladder) writes the same rows the command does."""
    from test_server import ok, session

    out = rollouts["folder"] / "pairs-tool.jsonl"

    async def call(client):
        return ok(await client.call_tool("dpo_pairs", {"paths": [str(rollouts["run_dir"])], "output": str(out)}))

    made = session(call, extra=("--toolsets", "core,ladder"))
    assert (made["pairs"], made["problems_paired"], made["verified"], made["failed"], made["heldout"]) == (4, 4, 4, 4, 1)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["chosen"] for r in written] == [r["chosen"] for r in rollouts["rows"]]


def _tokenizer(folder: Path, data: Path):
    from transformers import AutoTokenizer

    from mcp_server.train.maskcheck import resolve_chat_template

    built = run_cli("tiny-model", "--data", str(data), "-o", str(folder / "tiny"), "--family", "qwen3")
    assert built.returncode == 0, built.stderr[-2000:]
    tokenizer = AutoTokenizer.from_pretrained(str(folder / "tiny"))
    template, _ = resolve_chat_template(tokenizer, "model", "prompt_completion", "tiny:qwen3")
    return tokenizer, template


def test_tool_results_inside_an_answer_carry_no_loss(rollouts):
    """The chosen answer runs code, reads the tool's result, runs the test, reads its result, then answers: the
    two results' tokens have loss mask 0 in the tokenized pair and in the collated batch TRL's loss reads."""
    import torch
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    folder, row = rollouts["folder"], rollouts["rows"][0]
    data = folder / "pairs-for-tokenizer.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rollouts["rows"]))
    tokenizer, template = _tokenizer(folder, data)
    tokens = pair_tokens(tokenizer, row, template)
    ids, mask = tokens["prompt_ids"] + tokens["chosen_ids"], [0] * len(tokens["prompt_ids"]) + tokens["chosen_mask"]
    results = [m["content"] for m in row["chosen"] if m["role"] == "tool"]
    assert len(results) == 2 and "PASS" in results[1]

    def positions(text: str) -> list[int]:
        """The token positions whose decoded text lies inside ``text``'s occurrence in the sequence."""
        target = tokenizer(text, add_special_tokens=False)["input_ids"]
        for start in range(len(ids) - len(target) + 1):
            if ids[start:start + len(target)] == target:
                return list(range(start, start + len(target)))
        raise AssertionError(f"{text!r} not found as tokens")

    tool_positions = [p for text in results for p in positions(text)]
    assert tool_positions and all(mask[p] == 0 for p in tool_positions)
    answer = positions(row["chosen"][-1]["content"].split("\n")[0])  # the final answer's first line is trained
    assert all(mask[p] == 1 for p in answer)
    assert sum(tokens["rejected_mask"]) > 0 and 0 not in mask[len(tokens["prompt_ids"]):][:3]

    collator = DataCollatorForPreference(pad_token_id=tokenizer.pad_token_id or 0, max_length=None)
    batch = collator.torch_call([tokens])
    loss = torch.zeros_like(batch["completion_mask"])
    for i, m in enumerate(collated_loss_masks([tokens], None)):
        loss[i, :len(m)] = torch.tensor(m)
    trained = (batch["completion_mask"] * loss)[0].tolist()  # what the script's collator hands to DPOTrainer
    assert batch["input_ids"][0].tolist()[:len(ids)] == ids
    assert all(trained[p] == 0 for p in tool_positions) and all(batch["completion_mask"][0][p] == 1
                                                                for p in tool_positions)  # TRL alone would train them
    labels = batch["input_ids"].masked_fill((batch["completion_mask"] * loss) == 0, -100)  # as DPOTrainer builds them
    assert all(labels[0][p] == -100 for p in tool_positions)
