"""Redaction against a corpus of secret shapes, and its false positives on real traces.

Every shape below is built here from a seeded random generator in the vendor's format (prefix, length, alphabet,
structure) — none is a real credential — and planted in five kinds of text an agent's session carries: a JSON
document (scanned as text, and parsed and scanned value by value as ``traces push`` does), a URL, an environment
dump, source code and a log line. After ``redact_text`` no 12-character piece of the secret may remain (in plain
or URL-encoded form), and a ``[REDACTED_…]`` marker must stand in its place. Negative cases — git SHAs, UUIDs,
digests, base64 of ordinary text, paths, long identifiers, placeholders — must come back unchanged.

The false-positive measure runs redaction over every string of the shared traces (../shared/data/traces, real
sessions of five harnesses), one in 50 with a planted secret, and classifies each finding by a stated rule
(``false_positive``). ``pitfall add`` and ``traces convert`` are checked end to end with a JWT and an AWS key.
"""

from __future__ import annotations

import base64
import json
import random
import re
import shutil
import string
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

import pytest
from support.common import REPO, run_cli
from support.traces import rows_of

from mcp_server.redact import redact_text, redact_value

RNG = random.Random(20261201)
B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"
CONTEXTS = ("json", "url", "env", "code", "log")


def rand(alphabet: str, n: int) -> str:
    """n random characters of ``alphabet``, with a digit, an upper- and a lower-case letter where it has them."""
    while True:
        out = "".join(RNG.choice(alphabet) for _ in range(n))
        wants = [cls for cls in (string.digits, string.ascii_uppercase, string.ascii_lowercase)
                 if set(cls) & set(alphabet)]
        if n < 8 or all(set(out) & set(cls) for cls in wants):
            return out


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt() -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps({"sub": rand(string.digits, 10), "name": "dev", "iat": 1764547200,
                              "exp": 1764550800, "scope": "repo:write"}).encode())
    return f"{head}.{body}.{rand(B64URL, 43)}"


def pem(label: str, first: str, lines: int, width: int = 64) -> str:
    body = first + rand(B64, width * lines - len(first) - 2) + "=="
    rows = [body[i:i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {label}-----\n" + "\n".join(rows) + f"\n-----END {label}-----"


@dataclass
class Shape:
    """A secret format; ``var``/``param`` name it where its context names it (an env var, a JSON key, a URL
    parameter); ``overrides`` give whole texts where the generic templates would not be how it is met."""
    name: str
    make: Callable[[], str]
    var: str
    param: str = "token"
    glue: str = ""
    overrides: dict[str, Callable[[str], str]] = field(default_factory=dict)


def url_of(secret: str) -> str:
    return f"postgresql://app_admin:{secret}@db.internal.example:5432/orders?sslmode=require"


GLUED = {"json": lambda s: json.dumps({"callback": f"https://auth.example.com/cb?next=%2Flogin%3Ftoken%3D{s}"}),
         "url": lambda s: f"https://auth.example.com/cb?state=q1&next=%2Fapi%3Ftoken%3D{s}&ok=1",
         "env": lambda s: f"HOME=/home/dev\nNEXT_URL=/login?tok=x{s}\nLANG=C.UTF-8\n",
         "code": lambda s: f'hook = f"https://example.com/hook/x{s}"\n',
         "log": lambda s: f"127.0.0.1 - - [01/Dec/2026:10:00:01] \"GET /callback?code=7&state=x{s} HTTP/1.1\" 302 0"}
BEARER = {"json": lambda s: json.dumps({"method": "GET", "headers": {"Authorization": f"Bearer {s}"}}, indent=2),
          "url": lambda s: f"https://api.example.com/v2/me?access_token={s}&fields=id",
          "env": lambda s: f'HOME=/home/dev\nAUTH_HEADER="Authorization: Bearer {s}"\n',
          "code": lambda s: f'HEADERS = {{"Authorization": "Bearer {s}", "Accept": "application/json"}}\n',
          "log": lambda s: f"> GET /v2/me HTTP/2\n> Host: api.example.com\n> authorization: Bearer {s}\n> accept: */*"}
BASIC = {"json": lambda s: json.dumps({"url": "https://ci.example.com/api", "headers": {"Authorization": f"Basic {s}"}}),
         "url": lambda s: f"https://ci.example.com/api/v1/build?auth={quote(s, safe='')}&job=7",
         "env": lambda s: f'HOME=/home/dev\nCI_AUTH_HEADER="Authorization: Basic {s}"\n',
         "code": lambda s: f'session.headers.update({{"Authorization": "Basic {s}"}})\n',
         "log": lambda s: f"> POST /api/v1/build HTTP/1.1\n> Authorization: Basic {s}\n> Content-Length: 0"}
URLPW = {"json": lambda s: json.dumps({"database_url": url_of(s), "pool": 5}),
         "url": url_of,
         "env": lambda s: f"PATH=/usr/bin\nDATABASE_URL={url_of(s)}\nPORT=8080\n",
         "code": lambda s: f'engine = create_engine("{url_of(s)}", pool_size=5)\n',
         "log": lambda s: f"2026-12-01 10:00:02,114 INFO db: connecting to {url_of(s)} (attempt 2)"}
WEBHOOK = {"url": lambda s: s,
           "log": lambda s: f"2026-12-01 10:00:02 ERROR notify: POST {s} failed: 404 no_service"}
AZURE = {c: (lambda s, c=c: {
    "json": json.dumps({"storage": f"DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey={s};"
                                   "EndpointSuffix=core.windows.net"}),
    "url": f"https://devstore.blob.core.windows.net/?conn=AccountKey={quote(s, safe='')}",
    "env": f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey={s}\n",
    "code": f'conn = "DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey={s};EndpointSuffix=x"\n',
    "log": f"DEBUG blob: using AccountKey={s} for devstore"}[c]) for c in CONTEXTS}

SHAPES = [
    Shape("hf_token", lambda: "hf_" + rand(B62, 34), "HF_TOKEN"),
    Shape("hf_token_glued", lambda: "hf_" + rand(B62, 34), "", overrides=GLUED),
    Shape("anthropic_key", lambda: "sk-ant-api03-" + rand(B64URL, 93) + "AA", "ANTHROPIC_API_KEY", "key"),
    Shape("openai_project_key", lambda: "sk-proj-" + rand(B64URL, 64), "OPENAI_API_KEY", "key"),
    Shape("openai_legacy_key", lambda: "sk-" + rand(B62, 20) + "T3BlbkFJ" + rand(B62, 20), "OPENAI_KEY", "key"),
    Shape("github_classic_token", lambda: "ghp_" + rand(B62, 36), "GITHUB_TOKEN"),
    Shape("github_oauth_token", lambda: "gho_" + rand(B62, 36), "GH_OAUTH"),
    Shape("github_fine_grained_pat", lambda: "github_pat_" + rand(B62, 22) + "_" + rand(B62, 59), "GH_PAT"),
    Shape("aws_access_key_id", lambda: "AKIA" + rand(string.ascii_uppercase + "234567", 16), "AWS_ACCESS_KEY_ID",
          "X-Amz-Credential"),
    Shape("aws_sts_key_id", lambda: "ASIA" + rand(string.ascii_uppercase + "234567", 16), "AWS_ACCESS_KEY_ID",
          "AWSAccessKeyId"),
    Shape("aws_secret_access_key", lambda: rand(B64, 40), "AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
    Shape("jwt", jwt, "SESSION_JWT", "id_token"),
    Shape("pem_rsa_private_key", lambda: pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 25), "TLS_KEY", "key"),
    Shape("pem_openssh_private_key", lambda: pem("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAA", 6, 70),
          "SSH_PRIVATE_KEY", "key"),
    Shape("pem_private_key_truncated",  # what `head -n 8 ~/.ssh/id_rsa` shows: no END line
          lambda: "\n".join(pem("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 25).splitlines()[:8]), "TLS_KEY", "key"),
    Shape("pem_pkcs8_ec_private_key", lambda: pem("PRIVATE KEY", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49", 3),
          "SIGNING_KEY", "key"),
    Shape("url_password", lambda: rand(B62, 12) + "!" + rand(B62, 4), "", overrides=URLPW),
    Shape("slack_bot_token", lambda: f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(B62, 24)}",
          "SLACK_BOT_TOKEN"),
    Shape("slack_user_token",
          lambda: f"xoxp-{rand(string.digits, 12)}-{rand(string.digits, 12)}-{rand(string.digits, 13)}-"
                  f"{rand(HEX, 32)}", "SLACK_USER_TOKEN"),
    Shape("slack_webhook", lambda: f"https://hooks.slack.com/services/T{rand(string.ascii_uppercase + string.digits, 8)}"
                                   f"/B{rand(string.ascii_uppercase + string.digits, 10)}/{rand(B62, 24)}",
          "SLACK_WEBHOOK_URL", "hook", overrides=WEBHOOK),
    Shape("google_api_key", lambda: "AIza" + rand(B64URL, 35), "GOOGLE_API_KEY", "key"),
    Shape("stripe_live_secret_key", lambda: "sk_live_51" + rand(B62, 97), "STRIPE_SECRET_KEY", "key"),
    Shape("stripe_restricted_key", lambda: "rk_live_51" + rand(B62, 97), "STRIPE_RK", "key"),
    Shape("gitlab_pat", lambda: "glpat-" + rand(B64URL, 20), "GITLAB_TOKEN", "private_token"),
    Shape("npm_token", lambda: "npm_" + rand(B62, 36), "NPM_TOKEN"),
    Shape("pypi_token", lambda: "pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 120), "TWINE_PASSWORD", "password"),
    Shape("sendgrid_key", lambda: f"SG.{rand(B64URL, 22)}.{rand(B64URL, 43)}", "SENDGRID_API_KEY", "key"),
    Shape("square_oauth_secret", lambda: "sq0csp-" + rand(B64URL, 43), "SQUARE_SECRET", "secret"),
    Shape("azure_storage_key", lambda: rand(B64, 86) + "==", "", overrides=AZURE),
    Shape("mailchimp_key", lambda: rand(HEX, 32) + "-us" + str(RNG.randint(1, 21)), "MAILCHIMP_KEY", "apikey"),
    Shape("password", lambda: rand(B62, 10) + RNG.choice("!*^~") + rand(B62, 5), "DB_PASSWORD", "password"),
    Shape("client_secret", lambda: rand(B62, 32), "OAUTH_CLIENT_SECRET", "client_secret"),
    Shape("hex_api_key", lambda: rand(HEX, 32), "DD_API_KEY", "api_key"),
    Shape("opaque_service_token", lambda: rand(B64URL, 40), "SERVICE_TOKEN", "token"),
    Shape("bearer_token", lambda: rand(B64URL, 48), "", overrides=BEARER),
    Shape("basic_auth_header", lambda: base64.b64encode(f"deploy:{rand(B62, 16)}".encode()).decode(), "",
          overrides=BASIC),
]


def in_context(shape: Shape, context: str, secret: str) -> str:
    """The secret as it would sit in ``context``."""
    if context in shape.overrides:
        return shape.overrides[context](secret)
    s, var = shape.glue + secret, shape.var
    multiline = "\n" in s
    return {
        "json": lambda: json.dumps({"service": "deploy", "settings": {var.lower(): s, "retries": 3}}, indent=2),
        "url": lambda: f"https://api.example.com/v1/sync?{shape.param}={quote(s, safe='')}&page=2",
        "env": lambda: "PATH=/usr/local/bin:/usr/bin\nHOME=/home/dev\n"
                       + (f'{var}="{s}"\n' if multiline else f"{var}={s}\n") + "LANG=C.UTF-8\n",
        "code": lambda: ("import os\n\nclient = make_client(\n    "
                         + (f'{var.lower()}="""{s}""",\n' if multiline else f'{var.lower()}="{s}",\n')
                         + "    timeout=30,\n)\n"),
        "log": lambda: ("2026-12-01 10:00:03,114 WARNING sync: upstream rejected the credential; "
                        + (f"key material follows\n{s}\n" if multiline else
                           f"{shape.param}={s} (401)" if shape.name in CONTEXT_BOUND else f"{s} (401)")
                        + " retrying in 5s"),
    }[context]()


CONTEXT_BOUND = {"aws_secret_access_key", "password", "client_secret", "hex_api_key", "opaque_service_token"}


def leaked(secret: str, out: str) -> bool:
    """Any 12-character piece of the secret (or of its URL-encoded form) still in ``out``."""
    for line in secret.splitlines():
        line = line.strip()
        if not line or line.startswith("-----"):
            continue
        for piece in {line[i:i + 12] for i in range(max(1, len(line) - 11))}:
            if piece in out or quote(piece, safe="") in out:
                return True
    return False


def without(text: str, secret: str) -> str:
    """``text`` with every form of the secret the contexts use taken out."""
    lines = [line.strip() for line in secret.splitlines()]
    for form in [secret, quote(secret, safe=""), json.dumps(secret)[1:-1], *lines, *(quote(x, safe="") for x in lines)]:
        text = text.replace(form, "") if form else text
    return text


def redacted_forms(context: str, text: str) -> list[str]:
    """What the pipeline would keep: the text scanned as text, and for JSON also value by value (``traces push``
    re-encodes a parsed document)."""
    outs = [redact_text(text, Counter())]
    if context == "json":
        outs.append(json.dumps(redact_value(json.loads(text), Counter())))
    return outs


def run_corpus() -> dict[tuple[str, str], bool]:
    """(shape, context) → True when the secret got through (any piece left, or no marker)."""
    results = {}
    for shape in SHAPES:
        for context in CONTEXTS:
            secret = shape.make()
            text = in_context(shape, context, secret)
            assert not leaked(secret, without(text, secret)), (shape.name, context)  # the check is sound
            assert leaked(secret, text), (shape.name, context)  # ... and can fail
            results[(shape.name, context)] = any(leaked(secret, out) or "[REDACTED_" not in out
                                                 for out in redacted_forms(context, text))
    return results


def test_every_shape_is_redacted_in_every_context():
    results = run_corpus()
    assert len(SHAPES) >= 25 and len(results) == len(SHAPES) * len(CONTEXTS)
    through = sorted(key for key, got in results.items() if got)
    per_context = {c: sum(results[(s.name, c)] for s in SHAPES) for c in CONTEXTS}
    print(f"\nsecrets corpus: {len(SHAPES)} shapes x {len(CONTEXTS)} contexts = {len(results)} cases; "
          f"got through: {len(through)} {per_context}")
    assert not through, f"{len(through)} of {len(results)} got through: {through}"


NOTATIONS = [
    "password={v}", "DB_PASSWORD='{v}'", "secret: {v}", "export FOO_SECRET={v}", 'api_key = "{v}"',
    '{{"token": "{v}"}}', "{{'client_secret': '{v}'}}", "x-api-key: {v}", "--hf-token {v}", "apiKey: '{v}',",
    "secretAccessKey := \"{v}\"", "https://x.example/cb?access_token={v}&state=1", '\\"auth\\": \\"{v}\\"',
]


@pytest.mark.parametrize("notation", NOTATIONS)
def test_high_entropy_values_of_secret_like_names_are_redacted(notation):
    value = rand(B62, 32)
    out = redact_text(notation.format(v=value), Counter())
    assert value not in out and "[REDACTED_" in out, out


def test_redaction_is_idempotent():
    """Redacting redacted text changes nothing: a marker is never taken for a secret (``…:[REDACTED_…]@host``)."""
    for shape in SHAPES:
        for context in CONTEXTS:
            once = redact_text(in_context(shape, context, shape.make()), Counter())
            counts: Counter = Counter()
            assert redact_text(once, counts) == once and not counts, (shape.name, context, once)


NEGATIVES = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Dev <dev@example.com>",
    'git checkout 1d3f9c2a8b7e6d5c4b3a29181716151413121110 && git log -1 --format=%H',
    '{"sha": "e83c5163316f89bfbde7d9ab23ca2e25604af290", "token_sha": "e83c5163316f89bfbde7d9ab23ca2e25604af290"}',
    "secret_digest: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "token: 3fa85f64-5717-4562-b3fc-2c963f66afa6",
    '{"session_id": "019b88e0-7c2a-7d1e-9a41-3c5e2f1b0a99", "api_key_id": "550e8400-e29b-41d4-a716-446655440000"}',
    "FROM python@sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    '"integrity": "sha512-Jc8qEoDA1kE4nD3yZtLx3cyM0EtC5IyRgFyt6y8yZ0mV8zQyS1wU6O2v8b3x0nQ2lVq9mXb7kR4s5t6u7v8w9x=="',
    '{"data": "' + base64.b64encode(b"The quick brown fox jumps over the lazy dog; nothing secret here.").decode()
    + '", "mimeType": "text/plain"}',
    "echo VGhpcyBpcyBhbiBvcmRpbmFyeSBzZW50ZW5jZSwgbm90IGEga2V5Lg== | base64 -d",
    "/home/dev/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/"
    "c1899de289a04d12100db370d81485cdf75e47ca/tokenizer_config.json",
    "--token-file /run/secrets/hf_token --password-file /etc/app/password.txt",
    "password_file: /etc/app/db_password.txt\nsecret_path: secrets/prod/api_keys.yaml",
    r"C:\Users\dev\AppData\Roaming\secrets\config.yaml",
    "tokenizer_config_file_path_for_pretrained_model_v2 = AutoModelForSequenceClassificationWithValueHead",
    "test_redaction_keeps_long_identifiers_unchanged_across_runs_and_formats_0123",
    "max_new_tokens=512, pad_token_id=tokenizer.eos_token_id, token = tokenizer.eos_token",
    "password = getpass.getpass()\napi_key=os.environ['OPENAI_API_KEY']\ntoken: Optional[str] = None",
    "secret: ${{ secrets.HF_TOKEN }}\nHF_TOKEN=$HF_TOKEN\npassword: str",
    '{"pad_token": "<|endoftext|>", "eos_token": "</s>", "bos_token": "<s>"}',
    "postgres://user:${DB_PASSWORD}@db/app and mongodb+srv://<user>:<password>@cluster0.example.net",
    "ssh://git@github.com/org/repo.git https://user@example.com/path https://user:****@host/",
    "sk-learn, hf_hub_download, AKIAshort, ghp_x, Bearer of news, github_pat_, mask-ant-value, task-list-manager",
    "The secret: we test first. The token: an opaque string. password: see the vault",
    "Tokens: 1234 in, 567 out; api_key: required; secret_key: null; passed: 12; password: changeme",
    'curl -H "Authorization: Bearer $TOKEN" -H "authorization: bearer ${HF_TOKEN}" https://huggingface.co/api',
    "![plot](data:image/png;base64," + base64.b64encode(random.Random(3).randbytes(3000)).decode() + ")",
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-credentials-a1b2c3",
]


@pytest.mark.parametrize("text", NEGATIVES, ids=range(len(NEGATIVES)))
def test_lookalikes_stay_unchanged(text):
    counts: Counter = Counter()
    assert redact_text(text, counts) == text and not counts


def test_the_library_never_reaches_the_network(monkeypatch):
    """detect-secrets' plugins can verify a found secret against its vendor's API: that path is never taken."""
    import requests

    def refuse(*args, **kwargs):
        raise AssertionError(f"network call from redaction: {args[:2]}")

    monkeypatch.setattr(requests.sessions.Session, "request", refuse)
    counts: Counter = Counter()
    for shape in SHAPES:
        redact_text(in_context(shape, "log", shape.make()), counts)
    assert sum(counts.values()) >= len(SHAPES)


def test_pitfall_add_redacts_a_jwt_and_an_aws_secret_key(tmp_path):
    """``tunepack pitfall add`` (the same ``add_pitfall`` as the ``skills_add_pitfall`` tool)."""
    shutil.copytree(REPO / "skills" / "tunepack-sft", tmp_path / "tunepack-sft")
    token, key = jwt(), rand(B64, 40)
    done = run_cli("pitfall", "add", "tunepack-sft", "--skills-dir", str(tmp_path),
                   "--symptom", "The Hub upload failed with 403 after the token refresh",
                   "--cause", f"the client still sent the old session token {token} from its cache",
                   "--fix", "clear the credential cache and log in again",
                   "--evidence", f"env showed AWS_SECRET_ACCESS_KEY={key} in the job log", timeout=120)
    assert done.returncode == 0, done.stderr
    written = "".join(p.read_text() for p in (tmp_path / "tunepack-sft").rglob("*.md"))
    assert token not in written and key not in written
    assert "[REDACTED_JWT]" in written and "AWS_SECRET_ACCESS_KEY=[REDACTED_AWS_SECRET_KEY]" in written


def test_traces_convert_redacts_a_jwt_and_an_aws_secret_key_in_tool_output(tmp_path):
    token, key = jwt(), rand(B64, 40)
    rows = [{"messages": [
        {"role": "user", "content": "why does the upload fail?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": "cat ~/.aws/credentials; env | grep TOKEN"})}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": f"[default]\naws_access_key_id = AKIA{rand(string.ascii_uppercase, 16)}\n"
                    f"aws_secret_access_key = {key}\nSESSION_TOKEN={token}\n"},
        {"role": "assistant", "content": "The key pair is in the default profile."}]}]
    source = tmp_path / "session.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, report = rows_of(source, tmp_path)
    written = (tmp_path / "out.jsonl").read_text()
    assert token not in written and key not in written
    assert report.redactions == {"aws_access_key": 1, "aws_secret_key": 1, "jwt": 1}


# --- false positives on the shared traces ---------------------------------------------------------------------

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
WORDISH = re.compile(r"[A-Za-z_][A-Za-z_.]*(?:[/-][A-Za-z_.]+)*")


def false_positive(value: str) -> str | None:
    """Why a redacted string is certainly not a secret, or None. The rule: a git object id or digest (40 or 64
    hex digits, optionally ``sha256:``-prefixed), a UUID, or text with no digit at all made of words joined by
    ``_ . / -`` (an identifier, a dotted name or a path). Secrets are random strings: every vendor format above
    carries digits, and a random 16-character base62 string lacks one with probability (52/62)^16 ≈ 6 %."""
    bare = value.removeprefix("sha256:")
    if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", bare):
        return "git sha / digest"
    if UUID.fullmatch(value):
        return "uuid"
    if WORDISH.fullmatch(value):
        return "words / path"
    return None


def shared_members() -> list[tuple[str | None, str]]:
    """(key, string) for every string value in the shared traces (key None inside lists): what ``redact_value``
    sees when ``traces push`` scrubs them."""
    out: list[tuple[str | None, str]] = []

    def walk(value, key=None):
        if isinstance(value, str):
            out.append((key, value))
        elif isinstance(value, dict):
            for k, item in value.items():
                walk(item, k)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    decoder = json.JSONDecoder()
    for path in sorted(SHARED_TRACES.rglob("*.json*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for line in (text.splitlines() if path.suffix == ".jsonl" else [text]):
            pos, line = 0, line.strip()
            while pos < len(line):
                try:
                    value, pos = decoder.raw_decode(line, pos)
                except ValueError:
                    break
                walk(value)
    return out


def findings_of(key: str | None, text: str) -> list[tuple[int, int, str]]:
    from mcp_server.redact import find_secrets
    from mcp_server.redact.context import key_secret

    found = [(f.start, f.end, f.kind) for f in find_secrets(text)]
    by_key = key_secret(key, text) if key and not found else None
    return found + ([by_key] if by_key else [])


def test_false_positives_on_the_shared_traces_stay_under_one_percent():
    """Every redaction over the shared traces, with one in 50 strings carrying a planted secret (a log line of
    the corpus): all planted ones must be found, and of all redactions at most 1 % may be false positives by the
    rule of ``false_positive``. The real sessions hold no live secret; everything found outside the planted
    lines is printed for inspection (pytest -s)."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"the shared traces are not at {SHARED_TRACES} (the repo's sibling ../shared is absent)")
    members = shared_members()
    started, planted, found, other = time.perf_counter(), 0, 0, []
    for n, (key, text) in enumerate(members):
        start = len(text)
        if n % 50 == 0:
            shape = SHAPES[(n // 50) % len(SHAPES)]
            secret = shape.make()
            text, planted = text + "\n" + in_context(shape, "log", secret), planted + 1
        hits = findings_of(key, text)
        assert start == len(text) or any(s >= start for s, _, _ in hits), (shape.name, text[start:])
        found += len(hits)
        other += [(kind, text[s:e], text[max(0, s - 50):e + 20]) for s, e, kind in hits if s < start]
    seconds = time.perf_counter() - started
    wrong = [(kind, value, why) for kind, value, _ in other if (why := false_positive(value))]
    size = sum(len(t) for _, t in members) / 1e6
    print(f"\nshared traces: {len(members)} strings, {size:.2f} M characters, {planted} with a planted secret; "
          f"{seconds:.2f} s; redactions: {found} ({found - len(other)} planted, {len(other)} in the real text "
          f"{dict(Counter(k for k, _, _ in other))}); false positives: {len(wrong)}")
    for kind, value, around in other:
        print(f"  {kind}: {value[:60]!r} in ...{around[:140]!r}")
    assert len(wrong) <= 0.01 * found, f"false positives: {wrong}"
