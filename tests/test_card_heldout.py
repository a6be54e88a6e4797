"""Every method, with and without held-out data, through registration: the pipeline job's own finalize step (the
card rendered, the adapter pushed to the registry) fed what a real run's job hands it (the manifest its training
script wrote and the Trackio summary of the run, tests/fixtures/cards/, see support/card_fixtures.py). The card in
the registered folder says what was measured on held-out data, or plainly that nothing was. A real distillation run
without held-out rows, the case that used to end ERROR, is in test_distill_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.card_fixtures import METHODS, load

from mcp_server.config import TrainConfig
from mcp_server.pipeline import job
from mcp_server.pipeline.records import RunRecord
from mcp_server.registry import LocalRegistry
from mcp_server.registry.card import _fmt
from mcp_server.tracking import RunSummary

UNIT = {"sft": "rows", "distill": "rows", "grpo": "prompts", "env": "prompts"}


def _register(tmp_path: Path, monkeypatch, method: str, held_out: bool, **changed) -> tuple[dict, dict, dict]:
    """finalize() on an adapter folder holding the real run's manifest (with ``changed`` keys replaced):
    (manifest, summary, REGISTERED payload)."""
    manifest, summary = load(method, held_out)
    manifest = {**manifest, **changed}
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "tunepack_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (adapter / "adapter_config.json").write_text("{}", encoding="utf-8")  # the registry copies, never loads, them
    (adapter / "adapter_model.safetensors").write_bytes(b"")
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "home"))
    store = SimpleNamespace(summary=lambda project, run: RunSummary(**summary))  # the run's Trackio summary
    monkeypatch.setattr(job, "TrackioStore", lambda directory: store)
    name = f"card-{method}-{'heldout' if held_out else 'none'}"
    run = RunRecord(config=TrainConfig.model_validate(manifest["config"]), run_name=manifest["run_name"],
                    script=str(tmp_path / "train.py"), output_dir=str(adapter), default_output=False,
                    registry_name=name, trackio_dir=str(tmp_path / "trackio"))
    return manifest, summary, job.finalize(run)


def _line(card: str, start: str) -> str:
    found = [line for line in card.splitlines() if line.startswith(start)]
    assert len(found) == 1, (start, card)
    return found[0]


def _read_back(payload: dict) -> tuple[str, dict]:
    """What a user looks at: the registry's entry for the version, and the card in its folder."""
    entry = LocalRegistry().get(payload["registry_name"], payload["registry_version"])
    assert Path(payload["card_path"]) == Path(entry.path) / "README.md"
    listed = json.loads((Path(entry.path) / "registry.json").read_text())
    return (Path(entry.path) / "README.md").read_text(encoding="utf-8"), listed


@pytest.mark.parametrize("method", METHODS)
def test_without_held_out_data_every_method_registers_and_the_card_says_nothing_was_held_out(
        tmp_path, monkeypatch, method):
    manifest, _, payload = _register(tmp_path, monkeypatch, method, held_out=False)
    card, listed = _read_back(payload)
    assert listed["name"] == f"card-{method}-none" and listed["version"] == 1
    assert listed["run_name"] == manifest["run_name"] and "README.md" in listed["files"]
    line = _line(card, "- Held-out evaluation:")
    assert line.startswith(f"- Held-out evaluation: none. No {UNIT[method]} were held out, so the run measured "
                           "nothing on data it did not train on"), line
    assert "data.eval_fraction" in line and ("grpo.heldout_path" in line) == (UNIT[method] == "prompts")
    # and no line reads as if something had been measured on held-out data
    for absent in ("| eval_loss |", "Held-out (eval rows", "Held-out reward", "measured on them"):
        assert absent not in card, absent


def test_with_held_out_rows_sft_shows_the_eval_loss_it_measured(tmp_path, monkeypatch):
    manifest, summary, payload = _register(tmp_path, monkeypatch, "sft", held_out=True)
    card, _ = _read_back(payload)
    rows = manifest["dataset"]["eval_rows"]
    assert rows > 0 and f"{rows} evaluation rows" in card
    assert _line(card, "- Held-out evaluation:") == (f"- Held-out evaluation: {rows} held-out rows; measured on them: "
                                                     "the eval loss (the eval_* rows of the Training table)")
    first, last = summary["first"]["eval_loss"], summary["last"]["eval_loss"]
    assert _line(card, "| eval_loss |").startswith(f"| eval_loss | {_fmt(first)} | {_fmt(last)} |")


def test_with_held_out_rows_distillation_shows_the_kl_to_the_teacher_before_and_after(tmp_path, monkeypatch):
    manifest, _, payload = _register(tmp_path, monkeypatch, "distill", held_out=True)
    card, _ = _read_back(payload)
    before, after = manifest["distillation"]["heldout"]["before"], manifest["distillation"]["heldout"]["after"]
    assert _line(card, "- Held-out evaluation:") == (
        f"- Held-out evaluation: {manifest['dataset']['eval_rows']} held-out rows; measured on them: the student's "
        f"KL to the teacher and NLL of the recorded turns on their {before['tokens']} trained tokens, before and "
        "after training")
    assert _line(card, "- Held-out (eval rows, trained tokens):").startswith(
        f"- Held-out (eval rows, trained tokens): KL to the teacher {_fmt(before['kl'])} → {_fmt(after['kl'])}; "
        f"NLL of the recorded turns {_fmt(before['nll'])} → {_fmt(after['nll'])}")


@pytest.mark.parametrize("method", ["grpo", "env"])
def test_with_held_out_prompts_grpo_shows_the_reward_curve(tmp_path, monkeypatch, method):
    manifest, _, payload = _register(tmp_path, monkeypatch, method, held_out=True)
    card, _ = _read_back(payload)
    curve, prompts = manifest["grpo"]["curve"], manifest["mask_check"]["heldout_prompts"]
    assert curve and prompts > 0
    assert _line(card, "- Held-out evaluation:") == (
        f"- Held-out evaluation: {prompts} held-out prompts; measured on them: the reward on {curve[0]['n']} of them, "
        f"{len(curve)} times from step {curve[0]['step']} to step {curve[-1]['step']} (one sample per prompt)")
    assert _line(card, "- Held-out reward").startswith(
        f"- Held-out reward (one sample per held-out prompt, fixed seed): {_fmt(curve[0]['reward'])} ± "
        f"{_fmt(curve[0]['stderr'])} at step {curve[0]['step']} → {_fmt(curve[-1]['reward'])}")
    assert ("Environment: coding" in card) == (method == "env")


@pytest.mark.parametrize("recorded", [{}, None], ids=["measured-nothing", "older-manifest"])
def test_held_out_rows_with_nothing_measured_on_them_are_said_so(recorded):
    """Eval rows whose measurement found no trained token ({}), or a manifest from before distillation.heldout."""
    from mcp_server.registry import render_card

    manifest, summary = load("distill", held_out=True)
    if recorded is None:
        del manifest["distillation"]["heldout"]
    else:
        manifest["distillation"]["heldout"] = recorded
    card = render_card(manifest, RunSummary(**summary), name="x", version=1)
    assert _line(card, "- Held-out evaluation:") == (f"- Held-out evaluation: none. {manifest['dataset']['eval_rows']} "
                                                     "rows were held out, but nothing was measured on them during training")
    assert "Held-out (eval rows" not in card


def test_a_card_that_cannot_render_still_registers_the_adapter_with_a_short_card(tmp_path, monkeypatch, capsys):
    """A manifest shape the template does not know (here: a mask check without its counts) must not lose the
    trained adapter: it is registered with a short card that names the failure and points at the manifest."""
    _, _, payload = _register(tmp_path, monkeypatch, "sft", True, mask_check={})
    card, listed = _read_back(payload)
    assert "Its full card could not be rendered (UndefinedError" in card and "`tunepack_manifest.json` in this folder" in card
    assert "tunepack:results:start" in card and listed["version"] == payload["registry_version"]
    assert "the model card did not render" in capsys.readouterr().out
