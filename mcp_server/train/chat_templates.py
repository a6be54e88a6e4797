"""Training chat templates: recognise a model's stock chat template and pick one with generation markers.

Like ``maskcheck.py`` this module is embedded verbatim into every rendered training script, so it
imports only the standard library (TRL is imported lazily where its bundled templates are read).
tunepack's own training templates (``templates/chat/*.jinja``) reach it as a ``{name: text}`` dict:
read from the folder on the host, unpacked from the script's embedded copy in a job.

``chat_template: model`` is resolved like this:
1. the tokenizer's template already has ``{% generation %}`` markers: use it as it is;
2. recognise the stock template it is (TRL's copies of the models' templates, plus the stock
   revisions tunepack's templates name in their headers) by a structural fingerprint — comments,
   whitespace and whitespace-control dashes removed — so a revision that only moved whitespace is
   still known; a fingerprint match is confirmed by rendering probe conversations with both;
3. when the fingerprint is new but the family is clear (e.g. Gemma 4's ``<|turn>``), try the family's
   known revisions by rendering alone;
4. pick TRL's training variant of that stock template when one exists and keeps tool calls, else
   tunepack's, else TRL's variant for data without tool calls, else refuse naming the choices.
"""

import base64
import hashlib
import json
import lzma
import re

_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_HEADER = re.compile(r"^\{#-?(.*?)-?#\}", re.S)
_FIELD = re.compile(r"^\s*(stock|fingerprint|family):\s*(\S+)\s*$", re.M)

# What a template's text shows about its family (for messages and for trying known revisions).
FAMILY_SIGNS = (
    ("gemma4", "<|turn>"), ("gemma", "<start_of_turn>"), ("llama3", "<|start_header_id|>"),
    ("gptoss", "<|start|>"), ("deepseek", "<｜Assistant｜>"), ("phi3", "<|assistant|>"),
    ("cohere", "<|START_OF_TURN_TOKEN|>"), ("qwen", "<|im_start|>"),
)
PROBE_DATE = "26 Jul 2024"  # Llama 3.2 prints today's date unless told one: probes must render alike

_TOOLS = [{"type": "function", "function": {
    "name": "tp_lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string", "description": "The word."},
                                                    "limit": {"type": "integer"}}, "required": ["word"]}}}]


def _call(name: str, arguments: dict, call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# Conversations whose renderings must agree before two templates are taken to be the same.
PROBES = [
    ([{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi! How can I help?"}], None),
    ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Define cat."},
      {"role": "assistant", "content": "A small feline."}, {"role": "user", "content": "And dog?"},
      {"role": "assistant", "content": "A canine."}], None),
    ([{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Look up 'apple'."},
      {"role": "assistant", "content": "", "tool_calls": [_call("tp_lookup", {"word": "apple", "limit": 2}, "c1")]},
      {"role": "tool", "tool_call_id": "c1", "name": "tp_lookup", "content": "a fruit"},
      {"role": "assistant", "content": "An apple is a fruit."},
      {"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "You're welcome."}], _TOOLS),
    ([{"role": "user", "content": "Think, then look up 'pear'."},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "I should call the tool.",
       "tool_calls": [_call("tp_lookup", {"word": "pear"}, "c2")]},
      {"role": "tool", "tool_call_id": "c2", "name": "tp_lookup", "content": "another fruit"},
      {"role": "assistant", "content": "A pear is a fruit.", "reasoning_content": "Done."}], _TOOLS),
]


class TemplateChoiceError(Exception):
    """No training template can be picked for the model's chat template as configured."""

    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem} Fix: {fix}")


# --- recognition ---------------------------------------------------------------------------------

def normalise(template: str) -> str:
    """The template's structure: comments, whitespace-control dashes and whitespace runs removed."""
    text = _COMMENT.sub("", template)
    text = re.sub(r"\{([%{])-", r"{\1", text)
    text = re.sub(r"-([%}])\}", r"\1}", text)
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\s*(\{%|%\}|\{\{|\}\})\s*", r"\1", text).strip()


def fingerprint(template: str) -> str:
    return hashlib.sha256(normalise(template).encode("utf-8")).hexdigest()[:16]


def family_of(template: str) -> str | None:
    return next((family for family, sign in FAMILY_SIGNS if sign in template), None)


def header(template: str) -> dict:
    """The ``stock:``, ``fingerprint:`` and ``family:`` lines of a tunepack template's header comment."""
    match = _HEADER.match(template.lstrip())
    return dict(_FIELD.findall(match.group(1))) if match else {}


def has_generation_markers(template) -> bool:
    return bool(template) and re.search(r"\{%-?\s*generation\s*-?%\}", template) is not None


def render(tokenizer, template: str, messages, tools):
    """The text, or the error the template raised (two templates that raise alike agree)."""
    try:
        return tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False,
                                             date_string=PROBE_DATE)
    except Exception as exc:  # a template refusing a probe is part of its behaviour
        return f"<raised {type(exc).__name__}: {exc}>"


def renders_alike(tokenizer, first: str, second: str) -> bool:
    return all(render(tokenizer, first, m, t) == render(tokenizer, second, m, t) for m, t in PROBES)


def probe_tool_drops(tokenizer, template: str) -> list[str]:
    """What of a tool-calling conversation the template loses: assistant tool calls, tool results."""
    messages, tools = PROBES[2]
    text = render(tokenizer, template, messages, tools)
    if text.startswith("<raised"):
        return [f"tool messages (rendering {text[1:-1]})"]
    after_user = text.split("Look up 'apple'.", 1)[-1]
    dropped = []
    if "tp_lookup" not in after_user or "word" not in after_user:
        dropped.append("assistant tool calls")
    if "a fruit" not in after_user:
        dropped.append("tool results")
    return dropped


# --- the catalogue of stock templates and their training variants --------------------------------

def trl_templates() -> dict[str, str]:
    """TRL's bundled templates by file stem (stock ones and ``*_training`` variants); {} without TRL."""
    try:
        import trl
    except ImportError:
        return {}
    from pathlib import Path

    folder = Path(trl.__file__).parent / "chat_templates"
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jinja"))}


def stock_catalogue(packaged: dict[str, str], trl: dict[str, str]) -> dict[str, dict]:
    """{stock name: {fingerprint, text, family, trl_variant, tunepack}} over TRL's and tunepack's templates."""
    stocks: dict[str, dict] = {}
    for name, text in trl.items():
        if not name.endswith("_training"):
            stocks[name] = {"fingerprint": fingerprint(text), "text": text, "family": family_of(text),
                            "trl_variant": name if f"{name}_training" in trl else None, "tunepack": None}
    for name, text in packaged.items():
        fields = header(text)
        entry = stocks.setdefault(fields.get("stock", name), {
            "fingerprint": fields.get("fingerprint"), "text": None, "family": fields.get("family"),
            "trl_variant": None, "tunepack": None})
        entry["tunepack"] = name
        entry["fingerprint"] = entry["fingerprint"] or fields.get("fingerprint")
        entry["family"] = entry["family"] or fields.get("family")
    return stocks


def recognise(tokenizer, template: str, stocks: dict[str, dict], packaged: dict[str, str]):
    """(stock name, how) for a marker-less template, or (None, reason) when it is not known."""
    print_ = fingerprint(template)
    for name, entry in stocks.items():
        if entry["fingerprint"] == print_:
            reference = entry["text"] or packaged[entry["tunepack"]]
            if renders_alike(tokenizer, template, reference):
                return name, "fingerprint" if template != entry["text"] else "exact"
    family = family_of(template)
    for name, entry in stocks.items():
        if family and entry["family"] == family:
            reference = entry["text"] or packaged[entry["tunepack"]]
            if renders_alike(tokenizer, template, reference):
                return name, "rendering"
    return None, print_


def _choices(stocks: dict[str, dict], family: str | None) -> str:
    names = [f"tunepack:{e['tunepack']}" for e in stocks.values() if e["tunepack"] and e["family"] == family]
    names += [f"trl:{n}" for n, e in stocks.items() if e["trl_variant"] and e["family"] == family]
    return ", ".join(sorted(set(names))) or "a template of the model's own family"


def pick_training_template(tokenizer, template: str, model_label: str, *, needs_tools: bool,
                           packaged: dict[str, str], trl: dict[str, str] | None = None):
    """(training template text, label) for a marker-less model template, or TemplateChoiceError."""
    trl = trl_templates() if trl is None else trl
    stocks = stock_catalogue(packaged, trl)
    name, how = recognise(tokenizer, template, stocks, packaged)
    family = family_of(template)
    if name is None:
        known = ", ".join(f"{n} ({e['fingerprint']})" for n, e in sorted(stocks.items())
                          if family and e["family"] == family)
        raise TemplateChoiceError(
            f"The chat template of {model_label} has no {{% generation %}} markers and is not a stock template "
            f"tunepack or TRL knows (structural fingerprint {how}"
            + (f"; it looks like the {family} family, whose known revisions are: {known}" if known else "") + ").",
            f"set chat_template to a training template for this exact revision: one of {_choices(stocks, family)} "
            "if the model's template only differs in ways you have checked, or a .jinja file of the model's "
            "template with {% generation %}...{% endgeneration %} around the assistant's output and end-of-turn "
            "token (templates/chat/*.jinja show where the markers go).")
    entry = stocks[name]
    note = "" if how == "exact" else f", recognised by {how}"
    if entry["trl_variant"]:
        variant = trl[f"{name}_training"]
        if not probe_tool_drops(tokenizer, variant):
            return variant, f"model → trl:{name} (TRL training variant{note})"
    if entry["tunepack"]:
        return packaged[entry["tunepack"]], f"model → tunepack:{entry['tunepack']} (tunepack training variant{note})"
    if entry["trl_variant"] and not needs_tools:
        return trl[f"{name}_training"], f"model → trl:{name} (TRL training variant{note}; it drops tool calls)"
    stock_drops = probe_tool_drops(tokenizer, entry["text"] or template)
    raise TemplateChoiceError(
        f"The chat template of {model_label} is the stock '{name}' template"
        + (f", which itself drops {' and '.join(stock_drops)}," if stock_drops else "")
        + (" and TRL's training variant of it drops tool calls, but the data has tool calls."
           if entry["trl_variant"] else " and neither TRL nor tunepack has a training variant of it."),
        "pick a model whose template carries tool calls, set chat_template to a training template that renders "
        f"this model's format ({_choices(stocks, family_of(template))}) or a .jinja file with generation markers, "
        "or convert the sessions with `--rows turn` (prompt/completion rows where calls and results are plain text).")


# --- the embedded pack ---------------------------------------------------------------------------

def pack(templates: dict[str, str]) -> str:
    """The templates as one lzma-compressed, base64 string (the script embeds this)."""
    raw = json.dumps(templates, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return base64.b64encode(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)).decode("ascii")


def unpack(blob: str) -> dict[str, str]:
    return json.loads(lzma.decompress(base64.b64decode("".join(blob.split()))).decode("utf-8"))
