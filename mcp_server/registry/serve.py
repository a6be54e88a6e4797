"""How coding agents talk to an exported model: a vLLM command and each harness's provider config.

vLLM serves an OpenAI-compatible API on ``http://127.0.0.1:PORT/v1``: the adapter on top of its base
(``--enable-lora --lora-modules NAME=ADAPTER``, no merge) or a merged folder (``--served-model-name NAME``);
either way the harnesses ask for the model ``NAME``.

- OpenCode: a ``provider`` block in ``opencode.json`` on ``@ai-sdk/openai-compatible`` (checked with
  ``opencode debug config``).
- Codex: ``[model_providers.ID]`` in ``~/.codex/config.toml`` with ``wire_api = "responses"`` — Codex 0.17x
  refuses ``"chat"`` — plus the top-level ``model`` / ``model_provider`` keys (vLLM serves ``/v1/responses``).
- Claude Code speaks only Anthropic's Messages API (``/v1/messages``): ``ANTHROPIC_BASE_URL`` must point at a
  server that answers it — recent vLLM releases do on the same port; otherwise an Anthropic-compatible proxy
  such as LiteLLM in front of vLLM.
"""

from __future__ import annotations

import json
import shlex

from pydantic import BaseModel, Field

PROVIDER_ID = "tunepack-vllm"
# vLLM's tool-call parser per family (`--enable-auto-tool-choice --tool-call-parser P`); harnesses send
# tool_choice "auto", which vLLM refuses without them
TOOL_PARSERS = {"qwen3": "hermes", "llama": "llama3_json", "gemma4": "gemma4"}
CLASS_FAMILY = {"Qwen3ForCausalLM": "qwen3", "LlamaForCausalLM": "llama", "Gemma4ForConditionalGeneration": "gemma4",
                "Gemma4ForCausalLM": "gemma4"}
LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)  # the --max-lora-rank values vLLM accepts (default 16)


class ServeConfig(BaseModel):
    model: str = Field(description="the model id the harnesses ask for (the registry name)")
    vllm_command: str
    base_url: str
    opencode: dict = Field(description="opencode.json fragment: the provider block and the model to use")
    codex_toml: str = Field(description="~/.codex/config.toml lines")
    claude_code_env: str = Field(description="shell lines that point Claude Code at the server")
    notes: list[str] = []

    def text(self) -> str:
        """What the CLI prints: one block per harness, ready to paste."""
        parts = [f"# 1. Serve it (OpenAI-compatible API on {self.base_url}; the model id is '{self.model}')",
                 self.vllm_command, "",
                 "# 2a. OpenCode: merge into opencode.json (project) or ~/.config/opencode/opencode.json",
                 json.dumps(self.opencode, indent=2), "",
                 "# 2b. Codex: ~/.codex/config.toml (the two top-level keys go above any [table])",
                 self.codex_toml.rstrip(), "",
                 "# 2c. Claude Code: Anthropic's Messages API only (see the note below)",
                 self.claude_code_env.rstrip()]
        parts += ["", *[f"# note: {n}" for n in self.notes]] if self.notes else []
        return "\n".join(parts) + "\n"


def family_of(model_class: str | None, base: str) -> str | None:
    if model_class in CLASS_FAMILY:
        return CLASS_FAMILY[model_class]
    lowered = base.lower()
    for needle, family in (("qwen3", "qwen3"), ("llama", "llama"), ("gemma-4", "gemma4"), ("gemma4", "gemma4")):
        if needle in lowered:
            return family
    return None


def max_lora_rank(rank: int) -> int | None:
    """The --max-lora-rank an adapter of this rank needs (None: vLLM's default 16 is enough)."""
    if rank <= 16:
        return None
    return next((r for r in LORA_RANKS if r >= rank), rank)


def vllm_command(name: str, *, base: str | None = None, revision: str | None = None, adapter: str | None = None,
                 rank: int = 0, merged: str | None = None, family: str | None = None, port: int = 8000) -> str:
    """``vllm serve`` for an adapter on its base (``base`` + ``adapter``) or for a merged folder."""
    if merged:
        args = ["vllm", "serve", merged, "--served-model-name", name]
    else:
        args = ["vllm", "serve", str(base)] + (["--revision", revision] if revision else [])
        args += ["--enable-lora", "--lora-modules", f"{name}={adapter}"]
        needed = max_lora_rank(rank)
        args += ["--max-lora-rank", str(needed)] if needed else []
    parser = TOOL_PARSERS.get(family or "")
    args += ["--enable-auto-tool-choice", "--tool-call-parser", parser] if parser else []
    args += ["--host", "127.0.0.1", "--port", str(port)]
    return " ".join(shlex.quote(a) for a in args)


def opencode_config(name: str, base_url: str, label: str) -> dict:
    return {"$schema": "https://opencode.ai/config.json",
            "provider": {PROVIDER_ID: {"npm": "@ai-sdk/openai-compatible", "name": "tunepack (local vLLM)",
                                       "options": {"baseURL": base_url},
                                       "models": {name: {"name": label, "tool_call": True}}}},
            "model": f"{PROVIDER_ID}/{name}"}


def codex_config(name: str, base_url: str) -> str:
    return (f'model = "{name}"\nmodel_provider = "{PROVIDER_ID}"\n\n'
            f"[model_providers.{PROVIDER_ID}]\n"
            f'name = "tunepack (local vLLM)"\nbase_url = "{base_url}"\nwire_api = "responses"\n')


def claude_code_env(name: str, port: int) -> str:
    return (f"export ANTHROPIC_BASE_URL=http://127.0.0.1:{port}   # no /v1: Claude Code appends /v1/messages\n"
            "export ANTHROPIC_AUTH_TOKEN=local   # any value: vLLM checks it only when started with --api-key\n"
            "unset ANTHROPIC_API_KEY   # it would take precedence over the token\n"
            f"export ANTHROPIC_MODEL={shlex.quote(name)}\n"
            f"export ANTHROPIC_DEFAULT_HAIKU_MODEL={shlex.quote(name)}   # background tasks use the 'haiku' slot\n"
            "claude\n")


def serve_config(name: str, version: int, *, base: str, revision: str | None = None, adapter: str | None = None,
                 rank: int = 0, merged: str | None = None, family: str | None = None, port: int = 8000
                 ) -> ServeConfig:
    base_url = f"http://127.0.0.1:{port}/v1"
    label = f"{name} v{version} ({'merged' if merged else 'LoRA on ' + base})"
    notes = ["Claude Code needs a server that answers Anthropic's Messages API (/v1/messages): recent vLLM "
             "releases serve it on the same port; with an older vLLM put an Anthropic-compatible proxy such as "
             "LiteLLM in front and point ANTHROPIC_BASE_URL at the proxy. Its system prompt and tool list are "
             "long: give vLLM a --max-model-len that holds them."]
    if TOOL_PARSERS.get(family or "") is None:
        notes.append("unknown model family: add `--enable-auto-tool-choice --tool-call-parser P` with the vLLM "
                     "tool parser of this family, or the harnesses' tool calls are refused")
    return ServeConfig(model=name, base_url=base_url,
                       vllm_command=vllm_command(name, base=base, revision=revision, adapter=adapter, rank=rank,
                                                 merged=merged, family=family, port=port),
                       opencode=opencode_config(name, base_url, label), codex_toml=codex_config(name, base_url),
                       claude_code_env=claude_code_env(name, port), notes=notes)
