"""The held-out split by session (mcp_server/evals/kit/heldout.py) and its use in the rendered training script."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.common import short_conversation, write_jsonl
from support.tutorial import write_sessions

from mcp_server.evals.kit import heldout
from mcp_server.evals.kit.heldout import HeldoutError, group_key, group_sha256, select, split


def turn_rows(tmp_path, sessions: int = 5) -> list[dict]:
    """Real converted traces: Pi sessions cut into one prompt/completion row per assistant turn (3 each)."""
    from mcp_server.traces.convert import convert
    from mcp_server.traces.model import ConvertOptions

    out = tmp_path / "rows.jsonl"
    convert([write_sessions(tmp_path / "sessions", sessions)], out, ConvertOptions(rows="turn"))
    return [json.loads(line) for line in out.read_text().splitlines()]


def sessions_of(rows, indices) -> set:
    return {rows[i]["session"] for i in indices}


def test_turn_rows_of_a_session_stay_on_one_side(tmp_path):
    rows = turn_rows(tmp_path)
    assert len(rows) == 15 and len({r["session"] for r in rows}) == 5
    train, held, record = split(rows, 0.4, seed=3)
    assert sorted(train + held) == list(range(15))
    assert not sessions_of(rows, train) & sessions_of(rows, held)
    assert record["by"] == "session" and len(record["groups"]) == 2 and record["rows"] == len(held) == 6
    assert record["total_groups"] == 5 and record["fraction"] == 0.4 and record["seed"] == 3
    for group in record["groups"]:
        members = [r for r in rows if group_key(r) == group["id"]]
        assert group["rows"] == len(members) == 3 and group["sha256"] == group_sha256(members[::-1])
        assert "/" not in group["id"] and group["id"].endswith('.jsonl", "' + members[0]["session"] + '"]')


def test_the_split_is_deterministic_and_the_seed_matters(tmp_path):
    rows = turn_rows(tmp_path, sessions=10)
    first = split(rows, 0.3, seed=42)
    assert split(rows, 0.3, seed=42) == first
    reordered = rows[::-1]
    again = split(reordered, 0.3, seed=42)
    assert sessions_of(reordered, again[1]) == sessions_of(rows, first[1])  # row order does not matter
    draws = {frozenset(sessions_of(rows, split(rows, 0.3, seed=s)[1])) for s in range(8)}
    assert len(draws) > 1


def test_select_returns_the_held_out_rows_and_refuses_changed_data(tmp_path):
    rows = turn_rows(tmp_path)
    _, held, record = split(rows, 0.2, seed=0)
    assert select(rows, json.loads(json.dumps(record))) == [rows[i] for i in held]
    changed = [dict(r) for r in rows]
    changed[held[0]]["completion"] = [{"role": "assistant", "content": "edited later"}]
    with pytest.raises(HeldoutError) as caught:
        select(changed, record)
    assert record["groups"][0]["id"] in caught.value.problem and "retrain" in caught.value.fix
    gone = [r for i, r in enumerate(rows) if i not in held]
    with pytest.raises(HeldoutError, match="not in the data any more"):
        select(gone, record)


def test_one_session_cannot_be_split():
    rows = [{"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": str(i)}],
             "source": "/x/a.jsonl", "session": "s1", "turn": i} for i in range(6)]
    with pytest.raises(HeldoutError) as caught:
        split(rows, 0.2, seed=1)
    assert "a single session (6 rows)" in caught.value.problem and "data.eval_fraction" in caught.value.fix


def test_plain_conversations_group_by_their_opening():
    rows = []
    for i in range(4):  # each conversation as a whole row, and as its two turn rows (prompt/completion)
        chat = short_conversation(i)
        rows.append({"messages": chat})
        rows += [{"prompt": chat[:j], "completion": [chat[j]]} for j in (2, 4)]
    keys = [group_key(r) for r in rows]
    assert len(set(keys)) == 4 and all(k.startswith("conversation:") for k in keys)
    assert all(keys[i] == keys[i + 1] == keys[i + 2] for i in range(0, 12, 3))
    train, held, record = split(rows, 0.25, seed=5)
    assert record["by"] == "conversation" and len(held) == 3 and len({keys[i] for i in held}) == 1
    assert not {keys[i] for i in train} & {keys[i] for i in held}
    assert heldout.heldout_line(record) == "held out 1 conversation (3 rows) for evaluation"


def test_rows_read_through_datasets_hash_like_json_rows(tmp_path):
    """Parquet rows come back from Arrow with missing message fields as None; rows read with json do not:
    the hashes agree, so an eval reading the rows another way finds the same groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import load_dataset

    rows = [{"messages": short_conversation(i), "session": f"s{i % 3}", "source": "/home/a/x.jsonl"} for i in range(6)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    loaded = load_dataset("parquet", data_files=str(tmp_path / "rows.parquet"), split="train")
    assert loaded[0]["messages"][0]["tool_calls"] is None  # the Arrow view differs from the json rows
    record = split(rows, 0.34, seed=2)[2]
    assert split(iter(loaded), 0.34, seed=2)[2] == record
    assert len(select(iter(loaded), record)) == record["rows"] == 2


@pytest.mark.slow
def test_the_training_script_holds_out_whole_sessions(tmp_path, tiny_model_dir):
    """A real (one-step) run on converted turn rows: the manifest records the held-out sessions."""
    from mcp_server.config import parse_config
    from mcp_server.methods import write_script

    rows = turn_rows(tmp_path)
    data = write_jsonl(tmp_path / "turns.jsonl", rows)
    cfg = parse_config({"model": {"name": str(tiny_model_dir)}, "data": {"path": str(data), "eval_fraction": 0.4},
                        "training": {"max_length": 1024, "max_steps": 1, "logging_steps": 1,
                                     "gradient_checkpointing": False, "per_device_train_batch_size": 2},
                        "tracking": {"project": "heldout-tests", "run_name": "heldout"}})
    script, out = write_script(cfg, tmp_path / "train.py"), tmp_path / "adapter"
    done = subprocess.run([sys.executable, str(script), "--output-dir", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    manifest = json.loads((out / "tunepack_manifest.json").read_text())
    record = manifest["heldout"]
    assert record["by"] == "session" and len(record["groups"]) == 2 and record["rows"] == 6
    assert manifest["dataset"]["eval_rows"] == 6 and manifest["dataset"]["train_rows"] == 9
    assert "held out 2 sessions (6 rows) for evaluation" in done.stdout
    held = select(rows, record)
    kept = [r for r in rows if r not in held]
    assert len(held) == 6 and not {r["session"] for r in held} & {r["session"] for r in kept}


def _session_row(name: str, turns: int) -> dict:
    messages = [{"role": "user", "content": f"task {name}"}]
    for k in range(turns):
        messages += [{"role": "assistant", "content": f"step {k} of {name}"}, {"role": "user", "content": "go on"}]
    return {"source": f"/sessions/{name}.jsonl", "session": name, "messages": messages[:-1]}


def test_a_draw_that_takes_most_turns_is_balanced_by_turns():
    """Trial (a): 2 of 6 sessions drawn held out 79 % of the model turns (one long session). When a plain draw
    of sessions takes more than max(50 %, 2 x eval_fraction) of the assistant turns, sessions are taken in the same
    seeded order while the held-out turns stay within the fraction; an even draw is left as it was."""
    rows = [_session_row("long", 40)] + [_session_row(f"short{i}", 2) for i in range(5)]
    seed = next(s for s in range(200) if "long" in str(split([_session_row("long", 2)] + rows[1:], 0.3, s)[2]))
    train, held, record = split(rows, 0.3, seed)
    assert record.get("balanced") is True and "long" not in json.dumps(record["groups"])
    held_turns = sum(len([m for m in rows[i]["messages"] if m["role"] == "assistant"]) for i in held)
    assert 0 < held_turns <= 0.3 * 50 and sorted(train + held) == list(range(6))
    assert split(rows, 0.3, seed)[2] == record  # the same rows and seed, the same split
    even = [_session_row("long", 2)] + rows[1:]
    assert "balanced" not in split(even, 0.3, seed)[2]
