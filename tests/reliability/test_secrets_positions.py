"""Redaction by value, and secrets in every position of a session row.

A secret named once (``aws_secret_access_key=…``, ``export OAUTH_CLIENT_SECRET=…``, ``Authorization: Bearer …``) must
be gone where the same value stands bare later in the session: an assistant's text, a call's arguments, a tool's
result, a tool's description, a key of the arguments, a call's id. A vendor token must be gone wherever it stands: a
call's id, a function's name, a tool's description, parameter description or parameter name, a key of the call's
arguments, the session's id. A connection string's ``Pwd=``/``Password=`` must go whatever its characters (letters
only, symbols, braced, quoted).

Every value is fresh at each run, drawn from a seed that is printed and named in every failure message: replay a
run with ``TUNEPACK_CORPUS_SEED=<seed>``. The cases go through ``traces convert`` (the library call, and the command
a user types, whose output file's bytes must hold no secret) and ``traces push``'s scrub (each session in one file,
and a session split over two files as ``push`` stages it). Each test prints its count of cases and of leaks.
"""

from __future__ import annotations

import json
import os
import random
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from support.common import run_cli, write_jsonl
from support.traces import check_structure, rows_of

from mcp_server.redact import find_secrets, redact_text, redact_value

SEED = int(os.environ.get("TUNEPACK_CORPUS_SEED") or random.SystemRandom().randrange(2**32))
REPLAY = f"seed {SEED} (replay: TUNEPACK_CORPUS_SEED={SEED})"
B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
# connection-string passwords: no ; quote backslash brace or white space unbraced; a leading $ or * reads as a
# placeholder ($DB_PASSWORD, ****), so a generated one starts with a letter or digit
SYMBOLS = B62 + "!#$%&()*+,-./:<=>?@[]^_|~"


class Gen:
    """Random values from one test's own stream of the seed."""

    def __init__(self, name: str) -> None:
        self.rng = random.Random(f"{SEED}:{name}")

    def rand(self, alphabet: str, n: int) -> str:
        """n characters of ``alphabet``, with a digit, an upper- and a lower-case letter where it has them."""
        wants = [c for c in (string.digits, string.ascii_uppercase, string.ascii_lowercase) if set(c) & set(alphabet)]
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if all(set(out) & set(c) for c in wants):
                return out

    def password(self, alphabet: str = SYMBOLS, n: int = 16) -> str:
        """A letter or digit first (``$…`` and ``*…`` read as placeholders), and no ``***``, ``xxxx``, ``...`` or
        ``${`` inside: a value holding one reads as masked or templated, and is left alone by design."""
        while True:
            out = self.rng.choice(B62) + self.rand(alphabet, n - 1)
            if not any(mark in out.lower() for mark in ("***", "xxxx", "...", "${", "{{")):
                return out


# vendor tokens: found by their format alone, wherever they stand
TOKENS: dict[str, Callable[[Gen], str]] = {
    "hf_token": lambda g: "hf_" + g.rand(B62, 34),
    "github_token": lambda g: "ghp_" + g.rand(B62, 36),
    "openai_project_key": lambda g: "sk-proj-" + g.rand(B64URL, 64),
    "anthropic_key": lambda g: "sk-ant-api03-" + g.rand(B64URL, 93) + "AA",
    "aws_access_key_id": lambda g: "AKIA" + g.rand(string.ascii_uppercase + "234567", 16),
    "gitlab_pat": lambda g: "glpat-" + g.rand(B64URL, 20),
    "slack_bot_token": lambda g: f"xoxb-{g.rand(string.digits, 12)}-{g.rand(string.digits, 13)}-{g.rand(B62, 24)}",
    "npm_token": lambda g: "npm_" + g.rand(B62, 36),
    "stripe_live_key": lambda g: "sk_live_51" + g.rand(B62, 97),
    "google_api_key": lambda g: "AIza" + g.rand(B64URL, 35),
}
TOKEN_POSITIONS = ("call_id", "function_name", "tool_description", "tool_parameter_description",
                   "tool_parameter_name", "argument_key", "session_id")

# values found only by the name beside them: (how the value is named, the value)
NAMED: dict[str, tuple[str, Callable[[Gen], str]]] = {
    "aws_credentials_file": ("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {v}\n",
                             lambda g: g.rand(B64, 40)),
    "env_client_secret": ("export OAUTH_CLIENT_SECRET={v}", lambda g: g.rand(B62, 32)),
    "json_api_key": ('{{"service": "deploy", "api_key": "{v}"}}', lambda g: g.rand(B62, 32)),
    "db_password": ("DB_PASSWORD='{v}' ./migrate.sh", lambda g: g.password(B62 + "!*^~", 16)),
    "bearer_header": ("curl -H 'Authorization: Bearer {v}' https://api.example.com/v1/me",
                      lambda g: g.rand(B64URL, 48)),
    "connection_string": ("Server=db.internal;Database=orders;User Id=sa;Pwd={v};", lambda g: g.password(B62, 20)),
}
BARE_POSITIONS = ("assistant_text", "tool_argument", "tool_result", "tool_description", "argument_key", "call_id")

CONNECTION_TEMPLATES = {
    "odbc": "Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:db.internal,1433;Uid=sa;Pwd={v};Encrypt=yes;",
    "ado_net": "Server=db.internal;Database=orders;User Id=sa;Password={v};",
    "odbc_braced": "Driver={{ODBC Driver 18 for SQL Server}};Server=db.internal;UID=sa;PWD={{{braced}}};",
    "ado_net_quoted": 'Data Source=db.internal;Initial Catalog=orders;User ID=sa;Password="{v}";',
}
CONNECTION_ALPHABETS = {"alnum": B62, "letters": string.ascii_letters, "symbols": SYMBOLS + ";{}"}
CONNECTION_PLACES = ("tool_result", "tool_argument")


@dataclass
class Case:
    group: str
    name: str
    secret: str
    row: dict  # an OpenAI chat row (one session)


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _tool(name: str, description: str, parameter: str = "command", about: str = "The shell command.") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {parameter: {"type": "string", "description": about}}, "required": []}}}


def session_row(session: str, *, first_args: dict, first_result: str, second: dict, tools: list[dict],
                final: str = "The deploy is done.") -> dict:
    """user → assistant call A → result → assistant call B (``second``: id, name, arguments, result) → result →
    assistant text."""
    return {"id": session, "tools": tools, "messages": [
        {"role": "user", "content": "Deploy the orders service and check it answers."},
        {"role": "assistant", "content": "", "tool_calls": [_call("call_a1", "bash", first_args)]},
        {"role": "tool", "tool_call_id": "call_a1", "content": first_result},
        {"role": "assistant", "content": "", "tool_calls": [_call(second["id"], second["name"], second["arguments"])]},
        {"role": "tool", "tool_call_id": second["id"], "content": second["result"]},
        {"role": "assistant", "content": final}]}


def token_case(shape: str, position: str, g: Gen, n: int) -> Case:
    """A vendor token in one position of a session where nothing names it."""
    v = TOKENS[shape](g)
    second = {"id": v if position == "call_id" else "call_b2", "name": v if position == "function_name" else "deploy",
              "arguments": {v: True} if position == "argument_key" else {"service": "orders"}, "result": "deployed"}
    tools = [_tool("bash", "Run a shell command."), _tool(
        second["name"], f"Deploy a service with the token {v}." if position == "tool_description" else "Deploy.",
        parameter=v if position == "tool_parameter_name" else "service",
        about=f"Defaults to {v}." if position == "tool_parameter_description" else "The service.")]
    row = session_row(v if position == "session_id" else f"tokens-{n}", first_args={"command": "make build"},
                      first_result="built", second=second, tools=tools)
    return Case("token", f"{shape}@{position}", v, row)


def named_case(named: str, bare: str, g: Gen, n: int) -> Case:
    """A value named where it is set (a call's command and its result) and standing bare in one later position."""
    template, make = NAMED[named]
    v = make(g)
    text = template.format(v=v)
    second = {"id": v if bare == "call_id" else "call_b2", "name": "bash",
              "arguments": ({v: True} if bare == "argument_key" else
                            {"command": f"printf '%s' {v} > /run/deploy/k"} if bare == "tool_argument" else
                            {"command": "./deploy.sh orders"}),
              "result": f"stored: {v}" if bare == "tool_result" else "deployed"}
    tools = [_tool("bash", f"Run a shell command; deploys sign with {v}." if bare == "tool_description"
                   else "Run a shell command.")]
    row = session_row(f"named-{n}", first_args={"command": f"cat > deploy.env <<'EOF'\n{text}\nEOF"},
                      first_result=text, second=second, tools=tools,
                      final=f"Deployed; the value in use is {v}." if bare == "assistant_text" else "Deployed.")
    bare_texts = [f"stored: {v}", f"printf '%s' {v} > /run/deploy/k", f"Deployed; the value in use is {v}.",
                  f"Run a shell command; deploys sign with {v}.", v]
    assert not any(find_secrets(t) for t in bare_texts), (REPLAY, named, bare, v)  # bare, it has no shape
    return Case("named_then_bare", f"{named}->{bare}", v, row)


def connection_case(template: str, alphabet: str, place: str, g: Gen, n: int) -> Case:
    chars = CONNECTION_ALPHABETS[alphabet]
    if template in ("odbc", "ado_net"):
        chars = chars.replace(";", "").replace("{", "").replace("}", "")
    if template == "ado_net_quoted":
        chars = chars.replace('"', "")
    v = g.password(chars, 16)
    text = CONNECTION_TEMPLATES[template].format(v=v, braced=v.replace("}", "}}"))
    second = {"id": "call_b2", "name": "bash", "result": f"connected with {text}" if place == "tool_result" else "ok",
              "arguments": {"command": f"sqlcmd -C '{text}'"} if place == "tool_argument" else {"command": "sqlcmd"}}
    row = session_row(f"conn-{n}", first_args={"command": "make build"}, first_result="built", second=second,
                      tools=[_tool("bash", "Run a shell command.")])
    return Case("connection_string", f"{template}/{alphabet}@{place}", v, row)


def all_cases(name: str) -> list[Case]:
    g, cases = Gen(name), []
    for shape in TOKENS:
        for position in TOKEN_POSITIONS:
            cases.append(token_case(shape, position, g, len(cases)))
    for named in NAMED:
        for bare in BARE_POSITIONS:
            cases.append(named_case(named, bare, g, len(cases)))
    for template in CONNECTION_TEMPLATES:
        for alphabet in CONNECTION_ALPHABETS:
            for place in CONNECTION_PLACES:
                cases.append(connection_case(template, alphabet, place, g, len(cases)))
    return cases


def strings_of(value) -> list[str]:
    """Every string in a JSON-like value, dict keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [*strings_of(k), *strings_of(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []


def leaked(secret: str, text: str) -> bool:
    """Any 12-character piece of the secret (or of its URL-encoded form) in ``text``."""
    pieces = {secret[i:i + 12] for i in range(max(1, len(secret) - 11))}
    return any(p in text or quote(p, safe="") in text for p in pieces)


def report(title: str, cases: list[Case], leaks: list[Case]) -> str:
    per: dict[str, list[int]] = {}
    for case in cases:
        position = case.name.split("@")[-1] if "@" in case.name else case.name.split("->")[-1]
        key = f"{case.group}:{position}"
        per.setdefault(key, [0, 0])[0] += 1
        per[key][1] += case in leaks
    lines = [f"{title}: {len(cases)} cases, {len(leaks)} leaked; {REPLAY}"]
    lines += [f"  {key}: {n} cases, {bad} leaked" for key, (n, bad) in sorted(per.items())]
    return "\n".join(lines)


# --- traces convert --------------------------------------------------------------------------------------------

def test_convert_redacts_secrets_in_every_position_and_every_occurrence(tmp_path):
    cases = all_cases("convert")
    source = write_jsonl(tmp_path / "sessions.jsonl", [c.row for c in cases])
    rows, result = rows_of(source, tmp_path)
    by_part = {row["part"]: row for row in rows}
    leaks = []
    for index, case in enumerate(cases):
        row = by_part.get(f"row:{index}")
        assert row is not None, (REPLAY, case.name, "no row")
        check_structure(row["messages"])
        if leaked(case.secret, "\n".join(strings_of(row))):
            leaks.append(case)
    print("\n" + report("traces convert", cases, leaks))
    assert not leaks, f"{len(leaks)} of {len(cases)} leaked ({REPLAY}): {[c.name for c in leaks]}"
    assert "[REDACTED_" in json.dumps(rows) and sum(result.redactions.values()) >= len(cases)


def test_distinct_secret_call_ids_stay_distinct_and_paired(tmp_path):
    """Two calls of one turn whose ids are two different tokens: both redacted, still two ids, each result still
    answering its own call."""
    g = Gen("call-ids")
    first, second = TOKENS["github_token"](g), TOKENS["github_token"](g)
    row = {"id": "ids", "messages": [
        {"role": "user", "content": "Read both files."},
        {"role": "assistant", "content": "", "tool_calls": [_call(first, "read", {"path": "a.py"}),
                                                            _call(second, "read", {"path": "b.py"})]},
        {"role": "tool", "tool_call_id": first, "content": "A"},
        {"role": "tool", "tool_call_id": second, "content": "B"},
        {"role": "assistant", "content": "Both read."}]}
    rows, _ = rows_of(write_jsonl(tmp_path / "ids.jsonl", [row]), tmp_path)
    messages = rows[0]["messages"]
    check_structure(messages)
    ids = [c["id"] for c in messages[1]["tool_calls"]]
    text = json.dumps(rows)
    assert first not in text and second not in text, REPLAY
    assert len(set(ids)) == 2 and all(i.startswith("[REDACTED_GITHUB_TOKEN]") for i in ids), (REPLAY, ids)
    answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert answers == {ids[0]: "A", ids[1]: "B"}, (REPLAY, answers)


def test_tunepack_traces_convert_writes_no_secret_anywhere(tmp_path):
    """The command a user types, on a session file holding every case: no secret in the output file's bytes (nor
    in its stats file), in its text or JSON-escaped form."""
    cases = all_cases("cli")
    source = write_jsonl(tmp_path / "sessions.jsonl", [c.row for c in cases])
    out = tmp_path / "rows.jsonl"
    done = run_cli("traces", "convert", str(source), "-o", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    written = out.read_bytes() + (tmp_path / "rows.stats.json").read_bytes() + done.stdout.encode()
    forms = lambda s: {s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]}  # noqa: E731
    leaks = [c for c in cases if any(f.encode() in written for f in forms(c.secret))]
    print("\n" + report("tunepack traces convert (output bytes)", cases, leaks))
    assert not leaks, f"{len(leaks)} of {len(cases)} in the output ({REPLAY}): {[c.name for c in leaks]}"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(cases), REPLAY
    for row in rows:
        check_structure(row["messages"])


# --- traces push: the raw session as it is uploaded -------------------------------------------------------------

def test_push_scrub_redacts_every_position_and_occurrence_of_a_session_file(tmp_path):
    """``scrub_file`` on each case as a raw session file of its own: every string of the copy, keys included."""
    from mcp_server.traces.scrub import scrub_file

    cases = all_cases("push")
    leaks, counts = [], Counter()
    for n, case in enumerate(cases):
        src, dst = write_jsonl(tmp_path / f"in{n}.jsonl", [case.row]), tmp_path / "out" / f"{n}.jsonl"
        scrub_file(src, dst, counts)
        copy = [json.loads(line) for line in dst.read_text().splitlines()]
        if leaked(case.secret, "\n".join(strings_of(copy))):
            leaks.append(case)
    print("\n" + report("traces push (scrub, one file per session)", cases, leaks))
    assert not leaks, f"{len(leaks)} of {len(cases)} leaked ({REPLAY}): {[c.name for c in leaks]}"


def test_push_scrubs_a_session_of_two_files_as_one(tmp_path):
    """A session whose files ``push`` stages together: a value named in one file is gone from the other."""
    from mcp_server.traces.collect import Unit
    from mcp_server.traces.push import _stage

    g, todo, cases = Gen("push-files"), [], []
    for named in NAMED:
        for bare in ("assistant_text", "tool_result", "argument_key"):
            case = named_case(named, bare, g, len(cases))
            messages = case.row["messages"]
            unit = Unit(harness="openai", key=f"s{len(cases)}/main.jsonl", source=str(tmp_path))
            for part, lines in (("main", messages[:3]), ("tail", messages[3:])):
                path = write_jsonl(tmp_path / f"s{len(cases)}" / f"{part}.jsonl", [{"messages": lines}])
                unit.files.append((path, f"s{len(cases)}/{part}.jsonl"))
            todo.append((unit, "digest", "new"))
            cases.append(case)
    staging, totals = tmp_path / "staging", Counter()
    _stage(todo, staging, totals)
    leaks = [c for n, c in enumerate(cases) if leaked(c.secret, "\n".join(
        s for p in (staging / f"s{n}").glob("*.jsonl") for line in p.read_text().splitlines()
        for s in strings_of(json.loads(line))))]
    print("\n" + report("traces push (a session of two files)", cases, leaks))
    assert not leaks, f"{len(leaks)} of {len(cases)} leaked ({REPLAY}): {[c.name for c in leaks]}"


# --- one text, one value ------------------------------------------------------------------------------------------

def test_a_value_named_once_is_redacted_where_it_recurs_in_the_same_text_or_value():
    g = Gen("text")
    key, secret = g.rand(B64, 40), g.rand(B62, 32)
    text = f"aws_secret_access_key = {key}\n$ echo {key} | base64\nclient_secret: {secret} ... {secret}"
    out = redact_text(text, Counter())
    assert key not in out and secret not in out, (REPLAY, out)
    value = {"env": {"OAUTH_CLIENT_SECRET": secret}, "log": [f"using {secret}"], secret: "as a key"}
    assert not leaked(secret, "\n".join(strings_of(redact_value(value, Counter())))), REPLAY


def test_short_or_wordy_values_are_not_spread_through_the_text():
    """A password too weak to stand for itself (``postgres``) is redacted where it is named, never elsewhere."""
    counts: Counter = Counter()
    out = redact_value({"password": "postgres", "cmd": "psql -U postgres -h db"}, counts)
    assert out == {"password": "[REDACTED_PASSWORD]", "cmd": "psql -U postgres -h db"} and counts["password"] == 1


def test_keys_that_collide_once_redacted_are_all_kept():
    g = Gen("keys")
    first, second = TOKENS["hf_token"](g), TOKENS["hf_token"](g)
    out = redact_value({first: 1, second: 2, "plain": 3}, Counter())
    assert out == {"[REDACTED_HF_TOKEN]": 1, "[REDACTED_HF_TOKEN]_2": 2, "plain": 3}, (REPLAY, out)


def test_connection_string_passwords_of_any_characters():
    g, cases, leaks = Gen("connection"), 0, []
    for template in CONNECTION_TEMPLATES:
        for alphabet in CONNECTION_ALPHABETS:
            for _ in range(10):
                case = connection_case(template, alphabet, "tool_result", g, cases)
                cases += 1
                text = case.row["messages"][4]["content"]
                out = redact_text(text, Counter())
                if leaked(case.secret, out) or "[REDACTED_PASSWORD]" not in out or redact_text(out, Counter()) != out:
                    leaks.append((case.name, text, out))
    print(f"\nconnection strings: {cases} cases, {len(leaks)} leaked; {REPLAY}")
    assert not leaks, (REPLAY, leaks[:5])


def test_a_token_holding_a_short_run_of_x_is_no_placeholder():
    """``xXXx`` by chance among a token's random characters (found by a fresh seed) is no mask: the token goes;
    ``ghp_xxxx…`` and ``AKIAxxxx…`` (x standing for the value) stay."""
    g = Gen("x-run")
    token = "ghp_" + g.rand(B62.replace("x", "").replace("X", ""), 14) + "xXXx" + g.rand(B62, 18)
    upper = string.ascii_uppercase.replace("X", "") + "234567"  # the run is four long, no more
    key = "AKIA" + g.rand(upper, 6) + "XXXX" + g.rand(upper, 6)
    for secret in (token, key):
        out = redact_text(f"echo {secret}", Counter())
        assert secret not in out and "[REDACTED_" in out, (REPLAY, out)
    for mask in ("ghp_" + "x" * 36, "AKIA" + "X" * 16):
        assert redact_text(f"echo {mask}", Counter()) == f"echo {mask}"


LOOKALIKES = [
    "Server=db;Pwd=$(DB_PASSWORD);", "Server=db;Password={password};", "Server=db;Password=<password>;",
    "Server=db;Password=${PW};", "Server=db;Password=*****;", "x=1;pwd=getenv(\"PWD\");y=2",
    "a=1;pwd=os.getcwd();b=2", "cd $PWD; ls; PWD=/home/dev/app; make", "let password = readline;",
    "Server=db;Password=settings.db_password;",
]


def test_connection_string_lookalikes_stay_unchanged():
    for text in LOOKALIKES:
        counts: Counter = Counter()
        assert redact_text(text, counts) == text and not counts, text

