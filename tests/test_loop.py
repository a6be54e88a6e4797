"""[28] The continual-learning loop's CPU twin, through `tunepack loop cycle` as a user types it: Pi sessions arrive
between cycles (fixtures of the tutorial's shape), a tiny Qwen3 replica trains on each cycle's new sessions from the
adapter in use, and the decision is read back from `tunepack loop status`:

1. the first cycle freezes 2 sessions, trains on the new ones and, better on the held-out rows, is promoted;
2. with no new sessions the next cycle is refused, naming the threshold;
3. a cycle whose training barely moves the model is kept: its gain is not significant;
4. a cycle whose training diverges is kept, first of all because the retention set (sessions no cycle sees)
   got worse past the margin (test_the_promotion_rule: retention alone keeps a significant gain out);
5. a cycle stopped by a crash right after its training job started resumes: one job, one version, one decision;
and no cycle's training rows hold a frozen session (by key and by content hash)."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import yaml
from support.common import REPO, run_cli
from support.loop import arrive as _arrive
from support.loop import retention_set as _retention_set
from support.loop import train_config as _config

from mcp_server.evals.kit.heldout import group_key, group_sha256

pytestmark = pytest.mark.slow


def _cycle(spec) -> dict:
    done = run_cli("loop", "cycle", str(spec), "--json")
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}


def _decided(spec) -> dict:
    done = _cycle(spec)
    assert done["rc"] == 0, done["err"][-2000:]
    return json.loads(done["out"])


def _status(name: str) -> dict:
    done = run_cli("loop", "status", name, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_loop_promotes_only_a_better_adapter_and_resumes_after_a_crash(tmp_path, monkeypatch):
    sessions, config = tmp_path / "sessions", tmp_path / "train.yaml"
    _retention_set(tmp_path)
    spec = tmp_path / "loop.yaml"
    name = f"twin-{uuid.uuid4().hex[:6]}"
    spec.write_text(yaml.safe_dump({"name": name, "config": "train.yaml", "sources": ["sessions"],
                                    "frozen_sessions": 2, "recent_fraction": 0.25, "min_new_sessions": 3,
                                    "retention": {"path": "general.jsonl", "margin": 0.05}}))
    _arrive(sessions, 0, 8)
    _config(config)

    first = _cycle(spec)
    assert first["rc"] == 0, first["err"]
    one = json.loads(first["out"])
    assert one["decision"] == "promote", one
    assert one["scores"]["heldout"]["gain"] > 0 and "better on the held-out rows" in one["reason"]

    refused = _cycle(spec)  # nothing arrived since
    assert refused["rc"] == 1 and "Only 0 new session(s) since the last cycle" in refused["err"]
    assert "min_new_sessions = 3" in refused["err"]

    _arrive(sessions, 8, 4)
    _config(config, learning_rate=1e-7, max_steps=1)
    flat = _decided(spec)
    assert flat["decision"] == "keep" and flat["reason"].startswith("the gain is not significant"), flat

    _arrive(sessions, 12, 4)
    _config(config, learning_rate=0.5, max_steps=8)  # far too large a step: the model falls apart
    overfit = _decided(spec)
    retention = overfit["scores"]["retention"]
    assert overfit["decision"] == "keep" and overfit["reason"].startswith("retention dropped past the margin"), (
        overfit["reason"], overfit["scores"])
    assert retention["candidate"] - retention["current"] > 0.05

    _arrive(sessions, 16, 4)
    _config(config)
    monkeypatch.setenv("TUNEPACK_LOOP_CRASH_AFTER", "training")
    crashed = _cycle(spec)
    monkeypatch.delenv("TUNEPACK_LOOP_CRASH_AFTER")
    assert crashed["rc"] != 0 and "stopped after phase training" in crashed["err"]
    assert _status(name)["cycles"][-1]["phase"] == "training"
    resumed = _decided(spec)
    assert resumed["number"] == 4 and resumed["job_id"] == _status(name)["cycles"][-1]["job_id"]
    versions = json.loads(run_cli("registry", "list", name, "--json").stdout)
    assert len(versions) == 4  # four cycles ran (the refused one trained nothing): one version each, none twice

    state = _status(name)
    assert [c["phase"] for c in state["cycles"]] == ["decided"] * 4
    assert state["current"] == (resumed["candidate"] if resumed["decision"] == "promote" else one["candidate"])
    frozen = state["frozen"]
    for cycle in state["cycles"]:
        train = cycle["rows_path"]
        groups: dict[str, list[dict]] = {}
        for line in open(train, encoding="utf-8"):
            row = json.loads(line)
            groups.setdefault(group_key(row), []).append(row)
        assert not set(groups) & set(frozen)
        assert not {group_sha256(g) for g in groups.values()} & set(frozen.values())

    readme = tmp_path / "README.md"  # the cycle table, as the results writer keeps it
    written = run_cli("results", "readme", "--loop", name, "--readme", str(readme), "--no-curves")
    assert written.returncode == 0, written.stderr
    table = [line for line in readme.read_text().splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in table] == ["| 1", "| 2", "| 3", "| 4"]
    assert "promote: better on the held-out rows" in table[0] and "keep: the gain is not significant" in table[1]
    assert "keep: retention dropped past the margin" in table[2]

    from mcp_server.tracking.store import TrackioStore

    store = TrackioStore()  # a Trackio group per cycle: its training run and its decision run
    for cycle in state["cycles"]:
        group = f"{name}-cycle-{cycle['number']}"
        assert store.config("loop-twin", group)["_Group"] == group
        decision = store.config("loop-twin", f"{group}-decision")
        assert decision["_Group"] == group and decision["decision"] == cycle["decision"]
        logged = store.history("loop-twin", f"{group}-decision")[-1].values
        assert logged["loop/promoted"] == (1.0 if cycle["decision"] == "promote" else 0.0)
        assert logged["loop/heldout_gain"] == pytest.approx(cycle["scores"]["heldout"]["gain"])


def test_the_promotion_rule_in_words_and_numbers():
    from mcp_server.loop.decide import decide, paired

    better = paired([2.0, 2.1, 1.9, 2.2], [1.0, 1.2, 0.9, 1.1])
    assert better["n"] == 4 and better["gain"] == 1.0 and better["z"] > 10
    assert decide(better, 1.50, 1.52, z=1.96, margin=0.05)[0] == "promote"
    # significant on the held-out rows, but the retention set got worse past the margin: kept, and it says why
    kept, why = decide(better, 1.50, 1.60, z=1.96, margin=0.05)
    assert kept == "keep" and why == ("retention dropped past the margin: the retention set's loss rose +0.1000 nats "
                                      "(1.5000 -> 1.6000) > 0.05")
    noisy = paired([2.0, 1.0, 2.0, 1.0], [1.5, 1.5, 1.4, 1.6])
    kept, why = decide(noisy, None, None, z=1.96, margin=0.05)
    assert kept == "keep" and why.startswith("the gain is not significant: mean paired gain")
    assert decide(paired([2.0], [1.0]), None, None, z=1.96, margin=0.05)[1].startswith("only 1 held-out row")
    assert paired([1.0, None, 2.0], [0.5, 0.4, None])["n"] == 1  # a row counts only when both scored it


def test_loop_cycle_as_a_tool_says_how_many_new_sessions_it_needs(tmp_path):
    """An agent's way in: loop_cycle starts the cycle as a job, jobs_wait follows it, and a cycle with too few
    sessions ends with the threshold named and nothing trained; loop_status shows no cycle."""
    from test_server import ok, session, text

    _arrive(tmp_path / "sessions", 0, 3)
    _config(tmp_path / "train.yaml")
    _retention_set(tmp_path)
    name = f"few-{uuid.uuid4().hex[:6]}"
    spec = tmp_path / "loop.yaml"
    spec.write_text(yaml.safe_dump({"name": name, "config": "train.yaml", "sources": ["sessions"],
                                    "frozen_sessions": 2, "min_new_sessions": 3,
                                    "retention": {"path": "general.jsonl"}}))

    async def run(client):
        relative = os.path.relpath(spec, REPO)  # as an agent names it: from the server's folder; the job runs elsewhere
        started = ok(await client.call_tool("loop_cycle", {"spec_path": relative}))
        assert started["next_step"].startswith(f"jobs_wait('{started['job']['id']}')")
        done = await client.call_tool("jobs_wait", {"job_id": started["job"]["id"], "timeout_s": 120})
        status = ok(await client.call_tool("loop_status", {"name": name}))
        return done, status

    done, status = session(run, extra=("--toolsets", "core,loop"))
    assert done.is_error and "ended ERROR: The first cycle needs 2 sessions to freeze for evaluation and 3 new ones" \
        in text(done), text(done)
    assert "the sources hold 3" in text(done) and "Fix: collect more sessions" in text(done)
    assert status["cycles"] == [] and status["current"] is None
