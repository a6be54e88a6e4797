"""Secrets planted in every kind of text are replaced before anything is written."""

import json
import os
import random
import string
from collections import Counter

from support.traces import rows_of

from mcp_server.redact import redact_text

SECRETS = {
    "hf_token": "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3",
    "anthropic_key": "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "openai_key": "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "github_token": "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345",
    "aws_access_key": "AKIA" + "Q3EXAMPLE7KEY2ID",
}
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig-n4ture"


def planted_session(tmp_path):
    s = SECRETS
    lines = [
        {"type": "session", "version": 3, "id": "secrets", "timestamp": "t", "cwd": "/x"},
        {"type": "message", "id": "m1", "parentId": None, "message": {"role": "user", "content": [
            {"type": "text", "text": f"My HF token is {s['hf_token']} and the AWS key {s['aws_access_key']}."}]}},
        {"type": "message", "id": "m2", "parentId": "m1", "message": {"role": "assistant", "stopReason": "toolUse",
         "content": [{"type": "thinking", "thinking": f"Use {s['anthropic_key']} for the call."},
                     {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {
                         "command": f"curl -H 'Authorization: Bearer {BEARER}' -H \"authorization: bearer $TOKEN\" api",
                         "env": {"OPENAI_API_KEY": s["openai_key"]}, "argv": ["git", "clone", s["github_token"]]}}]}},
        {"type": "message", "id": "m3", "parentId": "m2", "message": {"role": "toolResult", "toolCallId": "c1",
         "toolName": "bash", "content": [{"type": "text", "text": f"echo {s['github_token']}"}]}},
        {"type": "message", "id": "m4", "parentId": "m3", "message": {"role": "assistant", "stopReason": "stop",
         "content": [{"type": "text", "text": f"Done. Rotate {s['hf_token']}; task-list and sk-short stay."}]}},
    ]
    path = tmp_path / "secrets.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_planted_secrets_never_reach_the_output(tmp_path):
    rows, report = rows_of(planted_session(tmp_path), tmp_path)
    written = (tmp_path / "out.jsonl").read_text() + (tmp_path / "out.stats.json").read_text()
    for secret in list(SECRETS.values()) + [BEARER]:
        assert secret not in written
    assert report.redactions == {"hf_token": 2, "aws_access_key": 1, "anthropic_key": 1, "bearer_token": 1,
                                 "openai_key": 1, "github_token": 2}
    call = rows[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert call["command"] == ("curl -H 'Authorization: Bearer [REDACTED_BEARER_TOKEN]' "
                               "-H \"authorization: bearer $TOKEN\" api")
    assert call["env"] == {"OPENAI_API_KEY": "[REDACTED_OPENAI_KEY]"} and call["argv"][2] == "[REDACTED_GITHUB_TOKEN]"
    assert rows[0]["messages"][1]["reasoning_content"] == "Use [REDACTED_ANTHROPIC_KEY] for the call."
    assert "task-list and sk-short stay" in rows[0]["messages"][-1]["content"]


def test_redaction_can_be_turned_off(tmp_path):
    _, report = rows_of(planted_session(tmp_path), tmp_path, redact=False)
    assert SECRETS["hf_token"] in (tmp_path / "out.jsonl").read_text() and report.redactions == {}


def test_lookalikes_are_left_alone():
    counts = Counter()
    text = "sk-learn, hf_hub_download, AKIAshort, ghp_x, Bearer of news, github_pat_, mask-ant-value"
    assert redact_text(text, counts) == text and not counts


def test_a_pi_session_is_redacted_by_value_and_in_ids_names_and_keys(tmp_path):
    """A Pi session: a key named in the reasoning is gone where a tool's result shows it bare; a token used as a
    call id (and the result's toolCallId), as a tool name and as an argument key is gone too, the call still
    paired. Fresh values each run, from a printed seed (TUNEPACK_CORPUS_SEED replays it)."""
    seed = int(os.environ.get("TUNEPACK_CORPUS_SEED") or random.SystemRandom().randrange(2**32))
    print(f"seed {seed}")
    rng, b62 = random.Random(f"{seed}:pi"), string.ascii_letters + string.digits
    key = "".join(rng.choice(b62 + "+/") for _ in range(39)) + rng.choice(string.digits)
    call_id, tool, arg = ("ghp_" + "".join(rng.choice(b62) for _ in range(36)),
                          "hf_" + "".join(rng.choice(b62) for _ in range(33)) + "7",
                          "glpat-" + "".join(rng.choice(b62) for _ in range(19)) + "Q")
    lines = [
        {"type": "session", "version": 3, "id": "by-value", "timestamp": "t", "cwd": "/x"},
        {"type": "message", "id": "m1", "parentId": None, "message": {"role": "user", "content": [
            {"type": "text", "text": "Upload the backup."}]}},
        {"type": "message", "id": "m2", "parentId": "m1", "message": {"role": "assistant", "stopReason": "toolUse",
         "content": [{"type": "thinking", "thinking": f"AWS_SECRET_ACCESS_KEY={key} is set."},
                     {"type": "toolCall", "id": call_id, "name": tool, "arguments": {arg: True, "path": "b.tar"}}]}},
        {"type": "message", "id": "m3", "parentId": "m2", "message": {"role": "toolResult", "toolCallId": call_id,
         "toolName": tool, "content": [{"type": "text", "text": f"signed with {key}"}]}},
        {"type": "message", "id": "m4", "parentId": "m3", "message": {"role": "assistant", "stopReason": "stop",
         "content": [{"type": "text", "text": "Uploaded."}]}},
    ]
    path = tmp_path / "by-value.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows, report = rows_of(path, tmp_path)
    written = (tmp_path / "out.jsonl").read_text() + (tmp_path / "out.stats.json").read_text()
    for secret in (key, call_id, tool, arg):
        assert secret not in written, (f"seed {seed}", secret)
    call = rows[0]["messages"][1]["tool_calls"][0]
    assert call["id"] == rows[0]["messages"][2]["tool_call_id"] == "[REDACTED_GITHUB_TOKEN]", f"seed {seed}"
    assert call["function"] == {"name": "[REDACTED_HF_TOKEN]",
                                "arguments": {"[REDACTED_GITLAB_TOKEN]": True, "path": "b.tar"}}, f"seed {seed}"
    assert rows[0]["messages"][2]["content"] == "signed with [REDACTED_AWS_SECRET_KEY]", f"seed {seed}"
    assert report.redactions["aws_secret_key"] == 2, (f"seed {seed}", report.redactions)
