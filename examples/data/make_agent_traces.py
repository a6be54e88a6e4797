"""Make a small example dataset of coding-agent traces for tunepack.

Writes examples/data/agent_traces.jsonl: 48 invented conversations in TRL
"conversational" format, one JSON object per line with two columns:

    {"messages": [...], "tools": [...]}

Assistant turns may call one of four tools (bash, read_file, write_file,
search); tool-call "arguments" are always JSON objects, and each call is
followed by a "tool" message carrying the result. Every conversation ends with
a plain-text assistant answer. The "tools" column holds the OpenAI-style JSON
schemas of the four tools.

Stdlib only and deterministic (seeded random, fixed templates):

    python examples/data/make_agent_traces.py

rewrites the file byte-identically.
"""

import json
import random
from pathlib import Path

SEED = 20240601
OUT = Path(__file__).resolve().parent / "agent_traces.jsonl"
SYSTEM = "You are a careful coding agent working in a Python repository."

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command in the repository root and return its output.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command to run."}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file and return its contents.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the repository root."}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create or overwrite a text file with the given content.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repository root."},
                    "content": {"type": "string", "description": "The full new file content."},
                },
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search files under a path for a regular expression and return matching lines.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "Directory or file to search."},
                },
                "required": ["pattern", "path"],
            },
        },
    },
]

# Short text an assistant sometimes says alongside a tool call.
PREAMBLES = {
    "bash": ["Let me run that.", "I'll check from the shell.", ""],
    "read_file": ["Let me look at the file first.", "Reading the current code.", ""],
    "write_file": ["Writing the change now.", ""],
    "search": ["Let me search for it.", ""],
}


def user(text):
    return {"role": "user", "content": text}


def say(text):
    return {"role": "assistant", "content": text}


def call(rng, name, **arguments):
    """An assistant turn with one tool call; sometimes with a short preamble."""
    return {
        "role": "assistant",
        "content": rng.choice(PREAMBLES[name]),
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def result(name, text):
    return {"role": "tool", "name": name, "content": text}


# ---------------------------------------------------------------- templates
# Each template takes (rng, params) and returns the turns after the system
# message. Each has a pool of parameter sets; three distinct ones are drawn.


def fix_failing_test(rng, p):
    mod, fn, test, bad, good = p
    return [
        user(f"tests/test_{mod}.py is failing. Please fix it."),
        call(rng, "bash", command=f"pytest -q tests/test_{mod}.py"),
        result("bash", f"F\nFAILED tests/test_{mod}.py::{test} - assert {bad} == {good}\n1 failed in 0.04s"),
        call(rng, "read_file", path=f"src/{mod}.py"),
        result("read_file", f"def {fn}(x):\n    return x + 1\n"),
        call(rng, "write_file", path=f"src/{mod}.py", content=f"def {fn}(x):\n    return x\n"),
        result("write_file", f"Wrote 2 lines to src/{mod}.py"),
        say(f"{fn} added 1 to its input, so {test} got {bad} instead of {good}. "
            f"I removed the off-by-one; the test should pass now."),
    ]


FIX_POOL = [
    ("parser", "parse_count", "test_parse_count", "4", "3"),
    ("pricing", "round_total", "test_round_total", "11", "10"),
    ("paging", "page_size", "test_default_page", "21", "20"),
    ("retry", "max_attempts", "test_attempts", "6", "5"),
]


def add_cli_flag(rng, p):
    path, flag, dest = p
    return [
        user(f"Add a {flag} flag to the CLI in {path}."),
        call(rng, "read_file", path=path),
        result("read_file", "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('input')\nargs = p.parse_args()\n"),
        call(rng, "write_file", path=path,
             content=f"import argparse\n\np = argparse.ArgumentParser()\np.add_argument('input')\n"
                     f"p.add_argument('{flag}', dest='{dest}', action='store_true')\nargs = p.parse_args()\n"),
        result("write_file", f"Wrote 6 lines to {path}"),
        say(f"Added {flag} as a boolean flag; it is available as args.{dest} and defaults to False."),
    ]


CLI_POOL = [
    ("src/cli.py", "--verbose", "verbose"),
    ("tools/export.py", "--dry-run", "dry_run"),
    ("src/app/main.py", "--no-cache", "no_cache"),
    ("scripts/sync.py", "--force", "force"),
]


def rename_function(rng, p):
    old, new, files = p
    hits = "\n".join(f"{f}:{3 + i * 7}: {old}(" for i, f in enumerate(files))
    return [
        user(f"Rename the function {old} to {new} everywhere."),
        call(rng, "search", pattern=rf"\b{old}\b", path="src"),
        result("search", hits),
        call(rng, "bash", command=f"sed -i 's/\\b{old}\\b/{new}/g' {' '.join(files)}"),
        result("bash", "(no output)"),
        say(f"Renamed {old} to {new} in {len(files)} file(s): {', '.join(files)}."),
    ]


RENAME_POOL = [
    ("get_usr", "get_user", ["src/users.py", "src/api.py"]),
    ("calc", "calculate_total", ["src/cart.py"]),
    ("do_it", "run_job", ["src/jobs.py", "src/worker.py"]),
    ("fmt_date", "format_date", ["src/dates.py", "src/report.py"]),
]


def find_config(rng, p):
    key, path, line = p
    return [
        user(f"Where is the config value {key} read?"),
        call(rng, "search", pattern=key, path="src"),
        result("search", f"{path}:{line}:    value = settings.get('{key}', None)"),
        say(f"{key} is read in {path} on line {line} via settings.get, with None as the default."),
    ]


CONFIG_POOL = [
    ("timeout_seconds", "src/http/client.py", 42),
    ("db_url", "src/storage/db.py", 17),
    ("log_level", "src/logging_setup.py", 9),
    ("max_workers", "src/pool.py", 28),
]


def explain_error(rng, p):
    err, answer = p
    return [
        user(f"What does this error mean?\n{err}"),
        say(answer),
    ]


ERROR_POOL = [
    ("TypeError: 'NoneType' object is not subscriptable",
     "You indexed a value that is None, e.g. result[0] where result was None. "
     "Check the function that produced it; it probably returned nothing on some path."),
    ("ModuleNotFoundError: No module named 'yaml'",
     "The PyYAML package is not installed in the active environment. "
     "Install it with pip install pyyaml, and check you are using the right virtualenv."),
    ("RecursionError: maximum recursion depth exceeded",
     "A function kept calling itself without reaching a base case. "
     "Look for a recursive call whose stopping condition is never met."),
    ("KeyError: 'id'",
     "A dict was accessed with the key 'id' but it has no such key. "
     "Use .get('id') if it is optional, or check where the dict is built."),
]


def add_docstring(rng, p):
    path, fn, sig, body, doc = p
    return [
        user(f"Add a docstring to {fn} in {path}."),
        call(rng, "read_file", path=path),
        result("read_file", f"def {fn}({sig}):\n    {body}\n"),
        call(rng, "write_file", path=path, content=f'def {fn}({sig}):\n    """{doc}"""\n    {body}\n'),
        result("write_file", f"Wrote 3 lines to {path}"),
        say(f"Added a one-line docstring to {fn}: \"{doc}\""),
    ]


DOC_POOL = [
    ("src/mathutil.py", "clamp", "x, lo, hi", "return max(lo, min(x, hi))", "Limit x to the range [lo, hi]."),
    ("src/text.py", "slugify", "s", "return s.lower().replace(' ', '-')", "Turn s into a lowercase, dash-separated slug."),
    ("src/files.py", "ensure_dir", "path", "path.mkdir(parents=True, exist_ok=True)", "Create path and its parents if missing."),
    ("src/units.py", "to_mb", "n", "return n / 1024 / 1024", "Convert a byte count to megabytes."),
]


def run_tests(rng, p):
    passed, failed, secs = p
    if failed:
        out = f"{'.' * passed}F\nFAILED tests/test_io.py::test_read_empty\n{failed} failed, {passed} passed in {secs}s"
        end = f"{passed} tests passed and {failed} failed: tests/test_io.py::test_read_empty. Want me to look into it?"
    else:
        out = f"{'.' * passed}\n{passed} passed in {secs}s"
        end = f"All {passed} tests passed in {secs}s."
    return [
        user("Run the test suite and tell me the result."),
        call(rng, "bash", command="pytest -q"),
        result("bash", out),
        say(end),
    ]


TESTS_POOL = [(12, 0, "0.81"), (7, 1, "0.40"), (23, 0, "1.92"), (9, 1, "0.55")]


def create_file(rng, p):
    path, content, what = p
    return [
        user(f"Create {path} with {what}."),
        call(rng, "write_file", path=path, content=content),
        result("write_file", f"Wrote {content.count(chr(10))} lines to {path}"),
        say(f"Created {path} with {what}."),
    ]


CREATE_POOL = [
    (".editorconfig", "root = true\n\n[*]\nindent_style = space\nindent_size = 4\n", "4-space indentation settings"),
    ("src/pkg/__init__.py", '"""Package init."""\n__version__ = "0.1.0"\n', "a version string"),
    ("tests/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef tmp_cfg(tmp_path):\n    return tmp_path / 'cfg.toml'\n", "a tmp_cfg fixture"),
    (".gitignore", "__pycache__/\n*.pyc\n.venv/\n", "common Python ignores"),
]


def concept_question(rng, p):
    q, a = p
    return [user(q), say(a)]


CONCEPT_POOL = [
    ("Should I use a list or a tuple for a fixed set of constants?",
     "Use a tuple: it is immutable, so nobody can change the constants by accident, and it is hashable."),
    ("What is the difference between pytest fixture scope 'function' and 'module'?",
     "A function-scoped fixture is rebuilt for every test; a module-scoped one is built once and shared "
     "by all tests in the file. Use module scope only for expensive, read-only setup."),
    ("When should I use dataclasses instead of plain dicts?",
     "When the set of fields is known: a dataclass documents the fields, gives type hints and a readable repr, "
     "and typos in attribute names fail loudly."),
    ("Is it fine to catch a bare Exception in a CLI entry point?",
     "At the very top of a CLI it is acceptable to log the error and exit non-zero, but do not swallow it "
     "silently, and avoid bare except deeper in the code."),
]


def list_todos(rng, p):
    path, hits = p
    lines = "\n".join(f"{f}:{n}: # TODO: {t}" for f, n, t in hits)
    return [
        user(f"List the TODO comments under {path}."),
        call(rng, "search", pattern="TODO", path=path),
        result("search", lines),
        say(f"There are {len(hits)} TODOs: " + "; ".join(f"{f} line {n} ({t})" for f, n, t in hits) + "."),
    ]


TODO_POOL = [
    ("src", [("src/api.py", 12, "add auth"), ("src/db.py", 88, "close cursor")]),
    ("lib", [("lib/cache.py", 5, "make ttl configurable")]),
    ("src/jobs", [("src/jobs/queue.py", 31, "handle retries"), ("src/jobs/run.py", 7, "log duration")]),
    ("app", [("app/views.py", 44, "paginate results")]),
]


def git_changes(rng, p):
    files, summary = p
    out = "\n".join(f" M {f}" for f in files)
    return [
        user("What have I changed so far?"),
        call(rng, "bash", command="git status --short"),
        result("bash", out),
        say(f"You have uncommitted changes in {len(files)} file(s): {', '.join(files)}. {summary}"),
    ]


GIT_POOL = [
    (["src/cli.py", "README.md"], "Nothing is staged yet."),
    (["tests/test_api.py"], "Only a test file changed."),
    (["src/db.py", "src/models.py", "setup.cfg"], "No new untracked files."),
    (["pyproject.toml"], "Only the project metadata changed."),
]


def summarize_module(rng, p):
    path, code, summary = p
    return [
        user(f"What does {path} do?"),
        call(rng, "read_file", path=path),
        result("read_file", code),
        say(summary),
    ]


SUMMARY_POOL = [
    ("src/cache.py", "_store = {}\n\ndef get(k):\n    return _store.get(k)\n\ndef put(k, v):\n    _store[k] = v\n",
     "It is a tiny in-memory cache: a module-level dict with get and put helpers. Nothing expires."),
    ("src/health.py", "def check(db):\n    try:\n        db.ping()\n        return 'ok'\n    except Exception:\n        return 'down'\n",
     "It defines check(db), which pings the database and returns 'ok' or 'down'."),
    ("src/ids.py", "import uuid\n\ndef new_id():\n    return uuid.uuid4().hex[:12]\n",
     "It generates short random ids: the first 12 hex characters of a UUID4."),
    ("src/env.py", "import os\n\nDEBUG = os.environ.get('APP_DEBUG') == '1'\n",
     "It sets DEBUG to True when the environment variable APP_DEBUG is exactly '1'."),
]


def fix_lint(rng, p):
    path, code_bad, code_good, rule, msg = p
    return [
        user(f"ruff is complaining about {path}. Can you fix it?"),
        call(rng, "bash", command=f"ruff check {path}"),
        result("bash", f"{path}:1:8: {rule} {msg}\nFound 1 error."),
        call(rng, "read_file", path=path),
        result("read_file", code_bad),
        call(rng, "write_file", path=path, content=code_good),
        result("write_file", f"Wrote {code_good.count(chr(10))} lines to {path}"),
        say(f"Fixed {rule} ({msg}) in {path}. ruff should be clean now."),
    ]


LINT_POOL = [
    ("src/util.py", "import os\nimport sys\n\nprint(sys.argv)\n", "import sys\n\nprint(sys.argv)\n", "F401", "`os` imported but unused"),
    ("src/io.py", "import json, csv\n\ndata = json.loads('{}')\n", "import json\n\ndata = json.loads('{}')\n", "F401", "`csv` imported but unused"),
    ("src/check.py", "def ok(x):\n    if x == None:\n        return 0\n    return 1\n", "def ok(x):\n    if x is None:\n        return 0\n    return 1\n", "E711", "comparison to None"),
    ("src/log.py", "import logging\nimport re\n\nlog = logging.getLogger(__name__)\n", "import logging\n\nlog = logging.getLogger(__name__)\n", "F401", "`re` imported but unused"),
]


def add_type_hints(rng, p):
    path, before, after = p
    return [
        user(f"Add type hints to {path}."),
        call(rng, "read_file", path=path),
        result("read_file", before),
        call(rng, "write_file", path=path, content=after),
        result("write_file", f"Wrote {after.count(chr(10))} lines to {path}"),
        say(f"Added parameter and return annotations in {path}; behaviour is unchanged."),
    ]


HINTS_POOL = [
    ("src/greet.py", "def greet(name):\n    return 'hi ' + name\n", "def greet(name: str) -> str:\n    return 'hi ' + name\n"),
    ("src/area.py", "def area(w, h):\n    return w * h\n", "def area(w: float, h: float) -> float:\n    return w * h\n"),
    ("src/flags.py", "def is_on(v):\n    return v in ('1', 'true')\n", "def is_on(v: str) -> bool:\n    return v in ('1', 'true')\n"),
    ("src/join.py", "def join(parts):\n    return ','.join(parts)\n", "def join(parts: list[str]) -> str:\n    return ','.join(parts)\n"),
]


def python_version(rng, p):
    ver, note = p
    return [
        user("Which Python version does this environment use?"),
        call(rng, "bash", command="python --version"),
        result("bash", f"Python {ver}"),
        say(f"The environment runs Python {ver}. {note}"),
    ]


PYVER_POOL = [
    ("3.11.9", "That satisfies requires-python >= 3.11."),
    ("3.12.4", "Match statements and PEP 695 generics are available."),
    ("3.10.14", "Note that tomllib needs 3.11, so it is not available here."),
    ("3.13.1", "This is the newest release line."),
]


def find_then_read(rng, p):
    symbol, path, code, answer = p
    return [
        user(f"Where is {symbol} defined, and what does it return?"),
        call(rng, "search", pattern=f"def {symbol}", path="src"),
        result("search", f"{path}:3:def {symbol}("),
        call(rng, "read_file", path=path),
        result("read_file", code),
        say(f"{symbol} is defined in {path}. {answer}"),
    ]


FINDREAD_POOL = [
    ("load_settings", "src/config.py", "import json\n\ndef load_settings(p):\n    with open(p) as f:\n        return json.load(f)\n",
     "It returns the parsed JSON from the given file as a dict."),
    ("active_users", "src/users.py", "\n\ndef active_users(users):\n    return [u for u in users if u.active]\n",
     "It returns a list of the users whose active attribute is true."),
    ("checksum", "src/hashing.py", "import hashlib\n\ndef checksum(b):\n    return hashlib.sha256(b).hexdigest()\n",
     "It returns the SHA-256 hex digest of the given bytes."),
    ("build_url", "src/links.py", "\n\ndef build_url(host, path):\n    return f'{host}/{path.lstrip(\"/\")}'\n",
     "It returns host and path joined with exactly one slash."),
]


TEMPLATES = [
    (fix_failing_test, FIX_POOL),       # 3 tool calls
    (fix_lint, LINT_POOL),              # 3 tool calls
    (add_cli_flag, CLI_POOL),           # 2
    (rename_function, RENAME_POOL),     # 2
    (add_docstring, DOC_POOL),          # 2
    (add_type_hints, HINTS_POOL),       # 2
    (find_then_read, FINDREAD_POOL),    # 2
    (find_config, CONFIG_POOL),         # 1
    (run_tests, TESTS_POOL),            # 1
    (create_file, CREATE_POOL),         # 1
    (list_todos, TODO_POOL),            # 1
    (git_changes, GIT_POOL),            # 1
    (summarize_module, SUMMARY_POOL),   # 1
    (python_version, PYVER_POOL),       # 1
    (explain_error, ERROR_POOL),        # 0
    (concept_question, CONCEPT_POOL),   # 0
]
PER_TEMPLATE = 3  # 16 templates x 3 = 48 rows


def build_rows(seed=SEED):
    rng = random.Random(seed)
    rows = []
    for template, pool in TEMPLATES:
        for params in rng.sample(pool, PER_TEMPLATE):
            messages = [{"role": "system", "content": SYSTEM}] + template(rng, params)
            rows.append({"messages": messages, "tools": TOOLS})
    rng.shuffle(rows)
    return rows


def main():
    rows = build_rows()
    with open(OUT, "w", encoding="ascii", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=True) + "\n")
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
