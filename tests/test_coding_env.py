"""The coding environment (evals/kit/coding_env.py) on its own: the session keeps its state, the tools do what they
say, the reward comes from the hidden tests outside the model's programs, the penalties, the scripted policies;
the agent loop with a scripted model in the family's own syntax; rollouts written as Pi sessions that `traces
convert` reads, and `--only-verified` keeping exactly the passing ones."""

from __future__ import annotations

import json

import pytest

from mcp_server.evals.kit.coding_env import NO_CODE_PENALTY, OVER_BUDGET_PENALTY, CodingEnv, split_tests
from support.common import run_cli, write_jsonl

ROW = {"id": "mbpp/601", "prompt": "Write add_one(x).", "visible_test": "assert add_one(1) == 2",
       "tests": ["assert add_one(2) == 3", "assert add_one(-1) == 0"], "solution": "def add_one(x):\n    return x + 1"}


@pytest.fixture(scope="module")
def box():
    from mcp_server.evals.kit.sandbox import Sandbox

    sandbox = Sandbox("auto", workers=2).start()
    CodingEnv.box, CodingEnv.timeout_s = sandbox, 3.0
    yield sandbox
    sandbox.close()


def env_for(row: dict = ROW, budget: int = 8) -> CodingEnv:
    env = CodingEnv()
    env.budget = budget
    env.reset(**row)
    return env


def test_the_session_keeps_state_and_files_and_a_failing_cell_is_not_kept(box):
    env = env_for(budget=12)
    assert env.run_python("x = 41\nprint('x is', x)") == "x is 41\n"
    assert env.run_python("print(x + 1)") == "42\n"  # state persists
    assert "ValueError: nope" in env.run_python("y = 1\nraise ValueError('nope')")
    assert "NameError" in env.run_python("print(y)")  # the failing cell is not part of the session
    assert env.write_file("lib/util.py", "K = 3\n").startswith("wrote lib/util.py")
    assert env.run_python("import sys; sys.path.insert(0, 'lib'); from util import K; print(K + x)") == "44\n"
    env.run_python("open('notes.txt', 'w').write('hi')")
    assert env.read_file("notes.txt") == "hi"  # a file a cell wrote is kept
    assert "not a relative path" in env.write_file("../escape", "x") and "no file" in env.read_file("nope")


def test_a_timeout_returns_an_error_and_the_session_continues(box):
    env = env_for()
    env.run_python("def add_one(x):\n    return x + 1")
    assert "stopped (timeout" in env.run_python("while True:\n    pass")
    assert env.timeouts == 1 and env.run_tests() == "PASS assert add_one(1) == 2"
    assert env.get_reward() == 1.0


def test_the_reward_is_the_hidden_tests_and_cannot_be_forged(box):
    reference = env_for()
    reference.run_python(ROW["solution"])
    assert reference.get_reward() == 1.0 and reference.reward["verified"]
    half = env_for()
    half.run_python("def add_one(x):\n    return 3")  # passes add_one(2) == 3 only
    assert half.get_reward() == 0.5 and not half.reward["verified"]
    # swapping the assertion machinery, or leaving early, earns nothing
    tamper = env_for()
    tamper.run_python("import builtins\nbuiltins.AssertionError = Exception\ndef add_one(x):\n    return 0")
    assert tamper.get_reward() == 0.0
    leave = env_for()
    leave.run_python("def add_one(x):\n    return 0\nimport os\nos._exit(0)")
    assert leave.get_reward() == 0.0


def test_the_penalties_never_running_code_and_runaway_calls(box):
    silent = env_for()
    assert silent.get_reward() == -NO_CODE_PENALTY and not silent.reached
    runaway = env_for(budget=2)
    for _ in range(4):
        result = runaway.run_python(ROW["solution"])
    assert "budget of 2 calls is spent" in result and runaway.refused == 2
    assert runaway.get_reward() == pytest.approx(1.0 - OVER_BUDGET_PENALTY)


def test_the_tools_are_the_public_methods_in_trls_order():
    """TRL turns every public method of an environment (reset and get_reward aside) into a tool, listed by name: the
    SFT rows, the eval loop and training must render the same tool list, or the model meets a prompt it never saw."""
    import inspect

    from mcp_server.evals.kit.coding_env import TOOLS

    public = [name for name, _ in inspect.getmembers(CodingEnv, predicate=inspect.isfunction)
              if not name.startswith("_") and name not in ("reset", "get_reward")]
    assert public == list(TOOLS)


def test_the_tests_of_a_row_are_split_into_visible_and_hidden():
    assert split_tests(ROW) == (["assert add_one(1) == 2"], ROW["tests"])
    own = {"prompt": "p", "tests": ["assert f(1) == 1"], "hidden_tests": ["assert f(2) == 2", "assert f(3) == 3"]}
    assert split_tests(own) == (["assert f(1) == 1"], ["assert f(2) == 2", "assert f(3) == 3"])
    assert split_tests({"tests": '["assert g() == 1"]', "hidden_tests": "assert g() == 1"}) == (
        ["assert g() == 1"], ["assert g() == 1"])


def test_scripted_policies_earn_the_reward_and_the_penalty(box, tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", [ROW, {**ROW, "id": "mbpp/602"}])
    done = run_cli("env-trajectories", str(rows), "-o", str(tmp_path / "warm.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["mean_reward"] == 1.0 and report["verified"] == 2 and report["tool_calls"] == 4
    warm = [json.loads(line) for line in (tmp_path / "warm.jsonl").read_text().splitlines()]
    roles = [m["role"] for m in warm[0]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert warm[0]["messages"][2]["content"] == "(no output)" and warm[0]["messages"][4]["content"].startswith("PASS")
    assert [t["function"]["name"] for t in warm[0]["tools"]] == ["read_file", "run_python", "run_tests", "write_file"]
    done = run_cli("env-trajectories", str(rows), "-o", str(tmp_path / "none.jsonl"), "--policy", "no-code")
    assert json.loads(done.stdout)["mean_reward"] == -NO_CODE_PENALTY


def _call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def test_the_agent_loop_runs_a_models_calls_in_its_environment(box):
    """A scripted 'model' writing Qwen3's own call syntax: its calls run, the results come back as tool messages,
    the episode ends at an answer; a message whose call does not parse is text and ends it too."""
    from mcp_server.evals.kit.agent_loop import run_episodes

    scripts = {"good": [_call("run_python", {"code": ROW["solution"]}), _call("run_tests", {}), "Done.<|im_end|>"],
               "broken": ['<tool_call>\n{"name": "run_python", "arguments": {"code": <|im_end|>']}

    def complete(batch, budgets):
        out = []
        for messages, tools in batch:
            assert [t["function"]["name"] for t in tools][:2] == ["read_file", "run_python"]
            key = "good" if "good" in messages[0]["content"] else "broken"
            out.append(scripts[key][sum(1 for m in messages if m["role"] == "assistant")])
        return out

    rows = [{**ROW, "id": "a", "prompt": "good: write add_one(x)."}, {**ROW, "id": "b", "prompt": "broken"}]
    good, broken = run_episodes(complete, rows, "hermes", max_turns=6, max_tokens=4096)
    assert good["reward"] == 1.0 and good["turns"] == 3 and good["env"]["calls"]["run_tests"] == 1
    assert [m["role"] for m in good["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert good["messages"][4]["content"] == "PASS assert add_one(1) == 2"
    assert "Use the tools" in good["messages"][0]["content"]  # the environment's note, as TRL appends it
    assert broken["reward"] == -NO_CODE_PENALTY and broken["turns"] == 1 and not broken["env"]["reached"]


def test_rollouts_are_pi_sessions_and_only_the_verified_ones_become_sft_rows(box, tmp_path):
    from mcp_server.evals.kit.agent_loop import tool_schemas
    from mcp_server.evals.kit.rollouts import meta_of, write_rollout
    from mcp_server.methods.env.trajectories import scripted_episode

    folder = tmp_path / "rollouts"
    written = {}
    for k, (policy, problem) in enumerate([("reference", "p1"), ("reference", "p1"), ("no-code", "p1"),
                                           ("reference", "p2"), ("no-code", "p3")]):
        episode = scripted_episode({**ROW, "id": problem}, policy)
        meta = {"problem": problem, "step": k, "reward": episode["reward"], "verified": episode["env"]["verified"],
                "lineage": [{"name": "code-sft", "method": "sft"}, {"name": "code-grpo", "method": "grpo"}]}
        written[k] = write_rollout(folder / f"step-{k}", episode["messages"], tool_schemas(), meta)
    assert meta_of(written[0])["verified"] and not meta_of(written[2])["verified"]
    header = json.loads(written[0].read_text().splitlines()[0])
    assert header["type"] == "session" and header["version"] == 3 and len(header["tools"]) == 4
    everything = run_cli("traces", "convert", str(folder), "-o", str(tmp_path / "all.jsonl"))
    assert everything.returncode == 0, everything.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and {t["function"]["name"] for t in rows[0]["tools"]} == {
        "run_python", "write_file", "read_file", "run_tests"}  # the header's schemas, not inferred ones
    calls = [c["function"] for m in rows[0]["messages"] for c in m.get("tool_calls") or []]
    assert calls[0] == {"name": "run_python", "arguments": {"code": ROW["solution"]}}
    from mcp_server.traces.writer import stats_path_for

    verified = run_cli("traces", "convert", str(folder), "-o", str(tmp_path / "verified.jsonl"), "--only-verified",
                       "--per-problem", "1")
    assert verified.returncode == 0, verified.stderr[-2000:]
    report = json.loads(stats_path_for(tmp_path / "verified.jsonl").read_text())["verified"]
    # p1's two passing rollouts are the same trajectory (a repeat); the two no-code ones failed
    assert (report["rollouts"], report["failed"], report["repeats"], report["kept"]) == (5, 2, 1, 2)
    assert report["lineage"][-1]["method"] == "grpo"
    kept = [json.loads(line) for line in (tmp_path / "verified.jsonl").read_text().splitlines()]
    assert len(kept) == 2 and all(r["messages"][-1]["content"].startswith("The function passes") for r in kept)
