"""How a rendered script reaches an HF job, and the size limits it must fit.

A job's ``command`` is started by the container runtime with execve, so Linux's limits apply before
anything runs: one argument string may be at most 131,072 bytes (MAX_ARG_STRLEN) and all arguments and
environment strings together at most ARG_MAX. A rendered training script is ~113 KB, and base64 alone
makes it ~151 KB: over the limit. So the script travels xz-compressed (Python's ``lzma``, preset 9
extreme) and base64-encoded inside one ``bash -c`` line, which decodes it with the image's own
``python3`` into ``/tmp/tunepack_job.py`` and ``exec``s ``uv run`` on it — about 42 % of the script's
size, self-contained (no upload, no extra Hub round trip, the same for training, eval and preflight
jobs). The packed blob travels as positional arguments of that line, in chunks of at most 60 KiB (an
eval script with the code and the tool-use kits packs to ~100 KB): ``printf %s "$1" "$2" …`` joins them.

Before any submit, ``check_limits`` measures the command and the environment (env + secrets: a job's
secrets are environment variables inside the container) and refuses, with the sizes and the fix, an
argument over 64 KiB or argv + environment over 256 KiB — half of the kernel's limits, so a growing
script is caught long before a job dies at exec.
"""

from __future__ import annotations

import base64
import lzma
import re
import shlex

from pydantic import BaseModel

from ..errors import JobError

SCRIPT_IN_JOB = "/tmp/tunepack_job.py"
ARG_LIMIT = 64 * 1024  # bytes in any one argument (the kernel's own limit is 128 KiB)
TOTAL_LIMIT = 256 * 1024  # bytes in argv + environment together
DECODE = "import base64,lzma,sys;sys.stdout.buffer.write(lzma.decompress(base64.b64decode(sys.stdin.read())))"
_BLOB = re.compile(r"printf %s ([A-Za-z0-9+/=]+) \| python3")  # commands built before the blob was chunked
CHUNK = 60 * 1024  # bytes of the packed blob per argument
ARGV0 = "tunepack-job"  # $0 of the bash line; the chunks follow it


def pack(script_text: str) -> str:
    """The script as base64 of its xz compression (ASCII, safe inside a shell word)."""
    raw = lzma.compress(script_text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
    return base64.b64encode(raw).decode("ascii")


def inline_command(script_text: str, args: list[str]) -> list[str]:
    """``bash -c`` that joins the packed script's chunks (its positional arguments), decodes them to a file and
    runs it with ``uv run`` and ``args``."""
    blob = pack(script_text)
    chunks = [blob[i:i + CHUNK] for i in range(0, len(blob), CHUNK)]
    refs = " ".join(f'"${{{i + 1}}}"' for i in range(len(chunks)))
    quoted = " ".join(shlex.quote(a) for a in args)
    run = (f"printf %s {refs} | python3 -c {shlex.quote(DECODE)} > {SCRIPT_IN_JOB} "
           f"&& exec uv run {SCRIPT_IN_JOB} {quoted}").rstrip()
    return ["bash", "-c", run, ARGV0, *chunks]


def script_from_command(command: list[str]) -> str:
    """The script a command built by ``inline_command`` carries ('' when it carries none): for audits and tests."""
    if len(command) > 4 and command[:2] == ["bash", "-c"] and command[3] == ARGV0:
        blob = "".join(command[4:])
    else:
        found = _BLOB.search(" ".join(command))
        if not found:
            return ""
        blob = found.group(1)
    return lzma.decompress(base64.b64decode(blob)).decode("utf-8")


class CommandSize(BaseModel):
    script_bytes: int
    largest_argument_bytes: int
    argv_bytes: int
    env_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.argv_bytes + self.env_bytes


def measure(command: list[str], env: dict[str, str], script_bytes: int = 0) -> CommandSize:
    """Sizes as execve counts them: each string's UTF-8 bytes plus its terminating NUL."""
    args = [len(a.encode("utf-8")) + 1 for a in command]
    envs = [len(f"{k}={v}".encode()) + 1 for k, v in env.items()]
    return CommandSize(script_bytes=script_bytes, largest_argument_bytes=max(args, default=0),
                       argv_bytes=sum(args), env_bytes=sum(envs))


def check_limits(command: list[str], env: dict[str, str], script_bytes: int = 0) -> CommandSize:
    """Refuse a command that would not start (or would come close): one error naming the sizes and the fix."""
    size = measure(command, env, script_bytes)
    fix = ("shorten what the script embeds (config lists such as eval.ids, long prompts), or pass large values "
           "through a file in the data repo; environment values belong in files, not env")
    if size.largest_argument_bytes > ARG_LIMIT:
        raise JobError(f"The job command has an argument of {size.largest_argument_bytes:,} bytes (script "
                       f"{script_bytes:,} bytes, packed); tunepack refuses any argument over {ARG_LIMIT:,} bytes "
                       "(the kernel rejects one over 131,072 at exec, before the job starts).", fix + ".")
    if size.total_bytes > TOTAL_LIMIT:
        raise JobError(f"The job's arguments and environment take {size.total_bytes:,} bytes "
                       f"(argv {size.argv_bytes:,} + env {size.env_bytes:,}); tunepack refuses over "
                       f"{TOTAL_LIMIT:,} bytes (the kernel's ARG_MAX would stop the job at exec).", fix + ".")
    return size
