"""Tools that read a local path never show a secret back (issue [18], item 6, and the Viewer half of item 7).

- credential files (the Codex login, the Hugging Face token, AWS keys, ``.env``, SSH keys, ``.netrc``, …, and a
  link to any of them) are refused by every tool that reads a path — the viewer, ``data_inspect``, the config
  loader (``pipeline_validate`` and everything that loads a config) — before anything is read or cached;
- what the tools do show of a file (rows, search hits, statistics' values, the trace view, ``data_inspect``'s
  first row, DuckDB's error text) goes through the redactor;
- a config error names at most a key that looks like a key, never a line of the file;
- the Viewer twin's ``where`` / ``orderby`` have a nesting and a length bound with one clear error;
- the read-only researcher role has no tool that reads a local file.

A fake home (``HOME``) holds the credential files; nothing outside ``tmp_path`` is touched.
"""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from support.common import write_jsonl

from mcp_server.config import load_config
from mcp_server.errors import ConfigError, TunepackError
from mcp_server.harness.catalog import role
from mcp_server.server import data_tools, viewer_tools
from mcp_server.viewer.backend import INVALID_PARAMETER, ViewerError
from mcp_server.viewer.hf import HfViewer
from mcp_server.viewer.twin import TwinViewer

_RNG = random.Random(18)  # fake secrets, random-looking (a scanner skips low-entropy ones), never in the source


def _fake(prefix: str, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return prefix + "".join(_RNG.choice(alphabet) for _ in range(n))


OPENAI_KEY = _fake("sk-proj-", 48)
HF_TOKEN = _fake("hf_", 34)
AWS_KEY = _fake("AKIA", 16, string.ascii_uppercase + string.digits)
REFUSAL = "is a credential file"

# (path under the fake home, content): JSON-bearing ones would be read as data by the twin and data_inspect
CREDENTIALS = {
    ".codex/auth.json": json.dumps({"OPENAI_API_KEY": OPENAI_KEY, "tokens": None}),
    ".cache/huggingface/token": HF_TOKEN,
    ".cache/huggingface/stored_tokens": f"[default]\nhf_token = {HF_TOKEN}\n",
    "hfh/token": HF_TOKEN,  # HF_HOME's token
    ".aws/credentials": f"[default]\naws_access_key_id = {AWS_KEY}\n",
    "project/.env": f"OPENAI_API_KEY: {OPENAI_KEY}\n",
    "project/.env.local": f"HF_TOKEN: {HF_TOKEN}\n",
    ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    ".ssh/keys.jsonl": json.dumps({"key": OPENAI_KEY}) + "\n",
    ".netrc": f"machine huggingface.co login me password {HF_TOKEN}\n",
    ".config/gh/hosts.yml": f"github.com:\n  oauth_token: {OPENAI_KEY}\n  user: me\n",
    ".docker/config.json": json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": OPENAI_KEY}}}),
    ".git-credentials": f"https://me:{OPENAI_KEY}@github.com\n",
    ".kube/config": f"users:\n- name: me\n  user: {{token: {OPENAI_KEY}}}\n",
    "tp/approval/quotes.json": json.dumps({"token": OPENAI_KEY}),  # the tunepack home's approval folder
}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fake home with every credential file, tunepack's home and HF_HOME inside it."""
    root = tmp_path / "home"
    for rel, text in CREDENTIALS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("HF_HOME", str(root / "hfh"))
    monkeypatch.setenv("TUNEPACK_HOME", str(root / "tp"))
    monkeypatch.setattr(viewer_tools, "_backends", {})  # a twin created now, with its index in this home
    return root


def _shown(call) -> str:
    """What a tool answers (its JSON), or its error text."""
    try:
        return call().model_dump_json()
    except TunepackError as exc:
        return str(exc)
    except Exception as exc:  # an internal error reaches the agent as its text too
        return f"{type(exc).__name__}: {exc}"


def _readers(path: str):
    return {
        "viewer_rows": lambda: viewer_tools.viewer_rows("local", path),
        "viewer_splits": lambda: viewer_tools.viewer_splits("local", path),
        "viewer_statistics": lambda: viewer_tools.viewer_statistics("local", path),
        "viewer_traces": lambda: viewer_tools.viewer_traces("local", path),
        "data_inspect": lambda: data_tools.data_inspect(path),
        "pipeline_validate": lambda: load_config(path),
    }


def _cached_files(home: Path) -> list[Path]:
    index = home / "tp" / "viewer-index"
    return [p for p in index.rglob("*") if p.is_file()] if index.is_dir() else []


def test_every_reader_refuses_every_credential_file_and_caches_nothing(home):
    got_through = []
    for rel in CREDENTIALS:
        for tool, call in _readers(str(home / rel)).items():
            answer = _shown(call)
            if REFUSAL not in answer:
                got_through.append((rel, tool, answer[:120]))
            assert OPENAI_KEY not in answer and HF_TOKEN not in answer and AWS_KEY not in answer, (rel, tool)
    assert not got_through, got_through
    assert _cached_files(home) == []  # no Parquet export, no index, no stats of a refused file


@pytest.mark.parametrize("path", ["/etc/shadow", "/proc/self/environ", "/proc/<pid>/environ", "/proc/self/mem"])
def test_system_secrets_are_refused_too(home, path):
    path = path.replace("<pid>", str(os.getpid()))  # this process by number (the id stays stable across workers)
    for tool, call in _readers(path).items():
        assert REFUSAL in _shown(call), (path, tool)


def test_the_refusal_names_the_file_and_the_fix(home):
    with pytest.raises(ToolError) as err:
        viewer_tools.viewer_rows("local", str(home / ".codex/auth.json"))
    text = str(err.value)
    assert f"{home / '.codex/auth.json'}" in text and "tunepack does not read credential files" in text
    assert "Fix:" in text


def test_links_and_folders_are_resolved_before_deciding(home):
    data = home / "data"
    write_jsonl(data / "train.jsonl", [{"text": "hello"}])
    (data / "more.json").symlink_to(home / ".codex/auth.json")  # a link inside a dataset folder: skipped
    (home / "innocent.json").symlink_to(home / ".codex/auth.json")  # a link named directly: refused
    (home / "keys").symlink_to(home / ".ssh", target_is_directory=True)  # a link to the SSH folder: refused
    os.link(home / ".codex/auth.json", home / "hard.json")  # a hard link under another name: same inode, refused
    for path in (home / "innocent.json", home / "keys", home / "keys" / "keys.jsonl", home / ".ssh",
                 home / "hard.json", home / ".SSH" / "keys.jsonl"):
        for tool, call in _readers(str(path)).items():
            assert REFUSAL in _shown(call), (path, tool)
    rows = viewer_tools.viewer_rows("local", str(data)).model_dump_json()
    assert "hello" in rows and OPENAI_KEY not in rows and "OPENAI_API_KEY" not in rows
    report = data_tools.data_inspect(str(data))
    assert report.files == [str(data / "train.jsonl")]


def test_a_config_pointing_at_a_credential_file_is_refused(home):
    config = home / "cfg.yaml"
    config.write_text(f"model: {{name: tiny:qwen3}}\ndata: {{path: [{home / '.codex/auth.json'}]}}\n")
    with pytest.raises(TunepackError, match=REFUSAL):
        load_config(config)


@pytest.fixture
def secret_data(tmp_path) -> Path:
    rows = []
    for i in range(12):
        rows.append({"text": f"row {i}: my key is {OPENAI_KEY}", "label": HF_TOKEN if i % 2 else "plain",
                     "messages": [{"role": "user", "content": f"use {AWS_KEY}"},
                                  {"role": "assistant", "content": "", "tool_calls": [
                                      {"type": "function", "function": {"name": "login",
                                                                        "arguments": {OPENAI_KEY: i}}}]},
                                  {"role": "tool", "name": "login", "content": f"ok {HF_TOKEN}"},
                                  {"role": "assistant", "content": "done"}]})
    return write_jsonl(tmp_path / "secret" / "train.jsonl", rows)


def test_what_the_tools_show_of_a_file_is_redacted(secret_data, monkeypatch, tmp_path):
    monkeypatch.setenv("TUNEPACK_HOME", str(tmp_path / "tp"))
    monkeypatch.setattr(viewer_tools, "_backends", {})
    path = str(secret_data)
    answers = {
        "viewer_rows": lambda: viewer_tools.viewer_rows("local", path, length=5),
        "viewer_search": lambda: viewer_tools.viewer_search("local", path, "key"),
        "viewer_filter": lambda: viewer_tools.viewer_filter("local", path, where=f"\"label\" = '{HF_TOKEN}'"),
        "viewer_filter_error": lambda: viewer_tools.viewer_filter("local", path, where="\"label\" > 3"),
        "viewer_statistics": lambda: viewer_tools.viewer_statistics("local", path),
        "viewer_traces": lambda: viewer_tools.viewer_traces("local", path),
        "data_inspect": lambda: data_tools.data_inspect(path),
    }
    leaked = []
    for tool, call in answers.items():
        answer = _shown(call)
        assert "Internal error" not in answer and "RecursionError" not in answer, (tool, answer[:300])
        leaked += [(tool, s[:6]) for s in (OPENAI_KEY, HF_TOKEN, AWS_KEY) if s in answer]
        if tool != "viewer_filter_error":
            assert "[REDACTED_" in answer, tool
    assert not leaked, leaked
    page = viewer_tools.viewer_filter("local", path, where=f"\"label\" = '{HF_TOKEN}'")
    assert page.num_rows_total == 6  # the filter still runs on the real values; only what is shown is redacted


# --- config errors ------------------------------------------------------------------------------------------

SHADOW = "".join(f"{user}:$6$saltsalt$4f9a2b7c1d0e3f5a6b8c9d:20228:0:99999:7::\n"
                 for user in ("root", "daemon", "bin", "sys"))


@pytest.mark.parametrize("content, must_say", [
    (SHADOW, "not a tunepack config"),
    ("root:x:0:0:root:/root:/bin/bash\nhf_token=" + HF_TOKEN + "\n", "not a YAML mapping"),
    (f"- {OPENAI_KEY}\n- second\n", "not a YAML mapping"),
    (b"\xff\xfe\x00binary" + HF_TOKEN.encode(), "not UTF-8 text"),
    (f"model: {{name: tiny:qwen3}}\ndata: {{path: x.jsonl}}\n'{OPENAI_KEY}': 1\n", "not shown"),
    (f"model: {OPENAI_KEY}\ndata: {{path: x.jsonl}}\n", "model"),
    (f"model: {{name: tiny:qwen3\n  broken: [{OPENAI_KEY}\n", "not valid YAML"),
])
def test_a_config_error_never_echoes_the_file(tmp_path, content, must_say):
    path = tmp_path / "config.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert must_say in text
    for secret in (OPENAI_KEY, HF_TOKEN, "$6$saltsalt", "root:", "/bin/bash"):
        assert secret not in text, (secret, text[:300])


def test_an_unknown_key_that_looks_like_a_key_is_still_named(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("model: {name: tiny:qwen3}\ndata: {path: x.jsonl}\ntraining: {lr: 0.001}\n")
    with pytest.raises(ConfigError, match=r"unknown key 'training.lr' — did you mean 'learning_rate'"):
        load_config(path)


# --- the twin's where / orderby bounds ----------------------------------------------------------------------


@pytest.fixture
def twin_data(tmp_path) -> tuple[TwinViewer, str]:
    path = write_jsonl(tmp_path / "flat" / "train.jsonl", [{"a": i, "b": f"v{i}"} for i in range(20)])
    return TwinViewer(index_root=tmp_path / "index"), str(path)


@pytest.mark.parametrize("param, text, limit", [
    ("where", "(" * 3000 + "\"a\" = 1" + ")" * 3000, "the limit is"),
    ("where", "(" * 1000 + "\"a\" = 1" + ")" * 1000, "64 levels"),
    ("where", "(" * 3000, "the limit is"),
    ("where", "NOT " * 3000 + "\"a\" = 1", "the limit is"),
    ("where", "NOT " * 1000 + "\"a\" = 1", "64 levels"),
    ("where", "NOT (" * 500 + "\"a\" = 1" + ")" * 500, "64 levels"),
    ("where", " OR ".join(["\"a\" = 1"] * 3000), "4096 characters"),
    ("where", " AND ".join(["(\"a\" = 1 OR \"b\" IS NULL)"] * 400), "4096 characters"),
    ("orderby", ", ".join(["\"a\" DESC"] * 2000), "4096 characters"),
    ("orderby", ", ".join(["\"a\""] * 100), "64 columns"),
])
def test_where_and_orderby_are_bounded_with_one_clear_error(twin_data, param, text, limit):
    twin, path = twin_data
    with pytest.raises(ViewerError) as err:
        twin.filter(path, "default", "train", **{param: text})
    assert err.value.code == INVALID_PARAMETER and limit in str(err.value)
    assert "Fix:" in str(err.value) and len(str(err.value)) < 2500  # the text itself is not echoed whole


def test_the_hub_backend_applies_the_same_bounds_before_sending_anything():
    hub = HfViewer(base_url="http://127.0.0.1:9", token="")  # nothing listens there: a request would fail otherwise
    try:
        for where in ("(" * 1000 + "\"a\" = 1" + ")" * 1000, "x" * 5000):
            with pytest.raises(ViewerError, match="the limit is") as err:
                hub.filter("owner/name", "default", "train", where=where)
            assert err.value.code == INVALID_PARAMETER
    finally:
        hub.close()


def test_deep_but_bounded_conditions_still_work(twin_data):
    twin, path = twin_data
    deep = "(" * 60 + "\"a\" < 5" + ")" * 60
    assert twin.filter(path, "default", "train", where=deep).num_rows_total == 5
    assert twin.filter(path, "default", "train", where="NOT " * 10 + "\"a\" < 5").num_rows_total == 5
    chain = " OR ".join(f"\"a\" = {i}" for i in range(200))
    assert twin.filter(path, "default", "train", where=chain, orderby="\"a\" DESC, \"b\"").num_rows_total == 20


# --- the researcher role ------------------------------------------------------------------------------------

LOCAL_READERS = {"data_inspect", "data_mask_preview", "pipeline_validate", "pipeline_render", "pipeline_preflight",
                 "traces_convert", "sweep_plan", "registry_push", "viewer_splits", "viewer_rows", "viewer_search",
                 "viewer_filter", "viewer_statistics", "viewer_size", "viewer_traces"}


def test_the_researcher_has_no_tool_that_reads_a_local_file():
    researcher = role("researcher")
    assert researcher.tools and not set(researcher.tools) & LOCAL_READERS
    assert not researcher.edit and not researcher.shell
    assert "datasets-server.huggingface.co" in researcher.prompt  # how it sees a Hub dataset's shape instead
